"""Following a mailbox: every message once, in order, as it arrives, across hub restarts and cut links.

The follower keeps its own cursor (the last delivery sequence number it handed on) and asks
for what lies past it with a waiting read that marks nothing; only after a message has been
handed on is it marked read. A read that fails (the hub restarting, a link down) is tried
again from the same cursor after a capped backoff, so nothing is skipped and nothing repeats.
Mail pushed to another session of the agent is not this follower's while that session lives;
if it dies with such mail unread, the follower finds it behind its cursor (a look every few
seconds) and hands it on late.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from callboard.client.backoff import Backoff
from callboard.client.base import Client
from callboard.errors import HubUnavailable
from callboard.model import DeliveryState, MailItem
from callboard.requests import ReadQuery

WAIT_SECONDS = 25.0  # one waiting read; well under proxies' idle timeouts
BATCH = 100
SWEEP_SECONDS = 5.0  # how often a follower that marks read looks behind its cursor for late mail


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
    sweep: float = SWEEP_SECONDS,
) -> int:
    """Hand each message past ``after`` (default: the unread ones first) to ``deliver``, in
    order, until ``stop`` is set; return the cursor reached. ``on_unreachable(error, delay)``
    is told of each failed read before waiting ``delay`` seconds to try again."""
    backoff, cursor, failing = Backoff(), after, False
    unread_first = after is None
    next_sweep = time.monotonic() + sweep
    while not stop.is_set():
        try:
            # First the unread mail (oldest first), then everything past the cursor as it comes.
            result = client.read(
                ReadQuery(
                    peek=True, after=None if unread_first else cursor, limit=BATCH, wait=0.0 if unread_first else wait
                )
            )
            late: list[MailItem] = []
            if mark_read and not unread_first and time.monotonic() >= next_sweep:
                # Mail behind the cursor still unread: pushed to another session of this agent
                # while it lived (so hidden then), and left unread when it went. Ours now.
                next_sweep = time.monotonic() + sweep
                late = [
                    i for i in client.read(ReadQuery(peek=True, limit=BATCH)).items if cursor is None or i.seq <= cursor
                ]
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
        for item in [*late, *result.items]:
            if stop.is_set():
                break  # ``deliver`` may ask to stop (enough read): the rest stays for later
            if cursor is None or item.seq > cursor or item in late:
                deliver(item)
                fresh.append(item)
                cursor = item.seq if cursor is None else max(cursor, item.seq)
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
