"""Each mailbox's unread count as last counted, kept current with this service's own changes, so
that the answer to a send (which carries its sender's count) need not count it again.

A count is kept per mailbox and per set of hidden sessions (a session's count leaves out mail
pushed to its agent's other live sessions: see ``Directory.hidden_targets``). This service's
own changes keep it true: a send this service committed adds its delivery to each kept count
that sees it (``delivered``), a read, acknowledgement or deletion drops the mailbox's counts
(``changed``: the next count reads the store). Another process's changes (a CLI on the same
SQLite file, another replica) are seen within ``UNREAD_FRESH_SECONDS``: a kept count older than
that is counted again.

A count read from the store is kept only when nothing changed the mailbox through this service
while it was counted, and no send to it was on its way (submitted, not yet committed): such a
send may or may not be in what was counted, and adding it when it commits could count it twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

UNREAD_FRESH_SECONDS = 1.0  # another process's read or send shows in a send's answer within this
COUNTS_KEPT = 100_000  # mailboxes (by hidden sessions) kept at once; past it, the oldest go

Mailbox = tuple[str, str]  # (workspace, agent)


@dataclass(slots=True)
class _Kept:
    count: int
    at: float  # time.monotonic() when counted


class UnreadCounts:
    """Unread counts by mailbox and hidden sessions, as this service last counted them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # counted on worker threads, sends commit on the loop or a store thread
        self._kept: dict[Mailbox, dict[tuple[str, ...], _Kept]] = {}  # by mailbox, then hidden sessions
        self._changes: dict[Mailbox, int] = {}  # per mailbox: changes through this service, ever
        self._on_the_way: dict[Mailbox, int] = {}  # per mailbox: sends submitted, not yet committed

    def kept(self, workspace: str, agent: str, hidden: Sequence[str]) -> tuple[int, bool] | None:
        """The mailbox's count, when one was counted less than ``UNREAD_FRESH_SECONDS`` ago, and
        whether it is past half that (time to count it again: ``from_memory.refresh_ahead``)."""
        found = self._kept.get((workspace, agent), {}).get(tuple(hidden))
        age = time.monotonic() - found.at if found is not None else UNREAD_FRESH_SECONDS
        if found is None or age >= UNREAD_FRESH_SECONDS:
            return None
        return found.count, age >= UNREAD_FRESH_SECONDS / 2

    def count(self, workspace: str, agent: str, hidden: Sequence[str], counted: Callable[[], int]) -> int:
        """``counted()`` (the store's count), kept for later unless the mailbox changed meanwhile."""
        mailbox = (workspace, agent)
        with self._lock:
            before = self._changes.get(mailbox, 0)
            quiet = not self._on_the_way.get(mailbox)
        began = time.monotonic()
        count = counted()
        with self._lock:
            if quiet and self._changes.get(mailbox, 0) == before:
                if len(self._kept) >= COUNTS_KEPT:
                    self._kept.clear()  # rare (a hundred thousand mailboxes): counted again when asked
                self._kept.setdefault(mailbox, {})[tuple(hidden)] = _Kept(count, began)
        return count

    def sending(self, workspace: str, agents: Sequence[str]) -> None:
        """A send to these agents was submitted: counts taken until it commits are not kept."""
        with self._lock:
            for agent in agents:
                mailbox = (workspace, agent)
                self._on_the_way[mailbox] = self._on_the_way.get(mailbox, 0) + 1
                self._changes[mailbox] = self._changes.get(mailbox, 0) + 1

    def sent(self, workspace: str, deliveries: Sequence[tuple[str, str | None]], committed: bool) -> None:
        """The send to these (agent, session pushed to) is over: committed (each kept count that
        sees its delivery goes up by one) or not."""
        with self._lock:
            for agent, target in deliveries:
                mailbox = (workspace, agent)
                left = self._on_the_way.get(mailbox, 0) - 1
                if left > 0:
                    self._on_the_way[mailbox] = left
                else:
                    self._on_the_way.pop(mailbox, None)
                self._changes[mailbox] = self._changes.get(mailbox, 0) + 1
                if not committed:
                    continue
                for hidden, kept in self._kept.get(mailbox, {}).items():
                    if target is None or target not in hidden:
                        kept.count += 1

    def changed(self, workspace: str, agent: str) -> None:
        """The mailbox changed through this service otherwise (read, acknowledged, deleted): its
        kept counts go, and a count taken meanwhile is not kept."""
        with self._lock:
            mailbox = (workspace, agent)
            self._changes[mailbox] = self._changes.get(mailbox, 0) + 1
            self._kept.pop(mailbox, None)
