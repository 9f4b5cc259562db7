"""Ask and wait: the first reply to a message just sent (``send --wait-reply``).

The caller notes where its mailbox stands before it sends (``mailbox_position``); the waiter then
peeks at what arrives past that point with a waiting read that marks nothing, and takes the first
message of the sent message's thread that is not the sent message itself. Only that reply is
marked read: other mail that arrived meanwhile stays unread for the agent's next read.
"""

from __future__ import annotations

import time

from callboard.client.base import Client
from callboard.errors import TimedOut
from callboard.limits import READ_LIMIT_MAX
from callboard.model import MailItem, SendResult
from callboard.requests import InboxQuery, ReadQuery

LONG_POLL_SECONDS = 25.0  # one waiting look; well under proxies' idle timeouts


def mailbox_position(client: Client) -> int:
    """The sequence number of the newest delivery in the caller's mailbox (0 for none)."""
    newest = client.inbox(InboxQuery(include_acked=True, limit=1))
    return max((item.seq for item in newest), default=0)


def first_reply(client: Client, sent: SendResult, position: int, timeout: float) -> MailItem:
    """The first message of ``sent``'s thread delivered past ``position``, marked read;
    TimedOut when none comes within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    cursor = position
    while (remaining := deadline - time.monotonic()) > 0:
        looked = client.read(
            ReadQuery(peek=True, after=cursor, limit=READ_LIMIT_MAX, wait=min(remaining, LONG_POLL_SECONDS))
        )
        for item in looked.items:
            message = item.message
            if message.thread_id == sent.thread_id and message.id != sent.message_id:
                client.mark_read([message.id])
                return item
        cursor = max(cursor, looked.cursor)
    raise TimedOut(
        f"no reply to message {sent.message_id} within {timeout:g} s; it stays sent, and a reply that "
        "comes later waits in your mailbox (callboard read).",
        message_id=sent.message_id,
    )
