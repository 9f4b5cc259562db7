"""Following a mailbox: every message once, in order, as it arrives, across hub restarts and cut links.

The follower keeps its own cursor (the last delivery sequence number it handed on) and asks
for what lies past it with a waiting read that marks nothing; only after a message has been
handed on is it marked read. A read that fails (the hub restarting, a link down) is tried
again from the same cursor after a capped backoff, so nothing is skipped and nothing repeats.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from switchboard.backoff import Backoff
from switchboard.client import Client
from switchboard.errors import HubUnavailable
from switchboard.model import DeliveryState, MailItem

WAIT_SECONDS = 25.0  # one waiting read; well under proxies' idle timeouts
BATCH = 100


def follow(
    client: Client,
    deliver: Callable[[MailItem], None],
    *,
    stop: threading.Event,
    after: int | None = None,
    mark_read: bool = True,
    on_unreachable: Callable[[HubUnavailable, float], None] = lambda error, delay: None,
    on_reconnected: Callable[[], None] = lambda: None,
    wait: float = WAIT_SECONDS,
) -> int:
    """Hand each message past ``after`` (default: the unread ones first) to ``deliver``, in
    order, until ``stop`` is set; return the cursor reached. ``on_unreachable(error, delay)``
    is told of each failed read before waiting ``delay`` seconds to try again."""
    backoff, cursor, failing = Backoff(), after, False
    unread_first = after is None
    while not stop.is_set():
        try:
            # First the unread mail (oldest first), then everything past the cursor as it comes.
            result = client.read(
                peek=True, after=None if unread_first else cursor, limit=BATCH, wait=0.0 if unread_first else wait
            )
        except HubUnavailable as error:
            delay = backoff.delay()
            failing = True
            on_unreachable(error, delay)
            stop.wait(delay)
            continue
        if failing:
            failing = False
            on_reconnected()
        backoff.reset()
        fresh = []
        for item in result.items:
            if stop.is_set():
                break  # ``deliver`` may ask to stop (enough read): the rest stays for later
            if cursor is None or item.seq > cursor:
                deliver(item)
                fresh.append(item)
                cursor = item.seq
        if mark_read:
            unread = [item.message.id for item in fresh if item.state.rank < DeliveryState.read.rank]
            _mark_read(client, unread, stop, backoff)
        if unread_first and (len(result.items) < BATCH or not mark_read):
            unread_first = False  # the unread mail is handed on: from here, all that comes
            cursor = max(cursor or 0, result.cursor)
    return cursor or 0


def _mark_read(client: Client, message_ids: list[str], stop: threading.Event, backoff: Backoff) -> None:
    """Mark handed-on messages read, trying again while the hub is away (marking twice is harmless)."""
    if not message_ids:
        return
    while not stop.is_set():
        try:
            client.mark_read(message_ids)
            return
        except HubUnavailable:
            stop.wait(backoff.delay())
