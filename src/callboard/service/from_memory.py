"""Deciding from memory: an operation run where the store must not be read (the hub's event
loop) either finishes on what the service keeps in memory, or says it cannot, before it has
changed anything.

The service keeps in memory what an ordinary send is decided on — the agents known to exist,
each workspace's open sessions, the outside agents' names, each pair's recent traffic (the
guards'), each mailbox's unread count — current with its own changes, and read again from the
store when another process's may have made them stale (each keeper says how fresh it is kept).
Inside ``from_memory()`` a keeper whose facts are missing or stale calls ``store_needed()``
instead of reading the store, which raises ``NotInMemory``: the caller then runs the same
operation where it may block (a worker thread), and that run reads the store and fills the
keeper for the next ones. So a hub's send costs its event loop no thread hop when memory holds
its facts, and the decision is the same code either way.

A keeper calls ``store_needed()`` before it changes anything, and an operation asks every
keeper before its first change (``Sending.submit`` decides the guards' holds last): a run cut
short on the loop leaves nothing behind that the run on a worker thread would do twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_memory_only: ContextVar[bool] = ContextVar("callboard_memory_only", default=False)


class NotInMemory(Exception):
    """The operation needs the store, which may not be read here: run it where it may block."""


@contextmanager
def from_memory() -> Iterator[None]:
    """Within the block, a read of the store raises ``NotInMemory`` (see the module)."""
    token = _memory_only.set(True)
    try:
        yield
    finally:
        _memory_only.reset(token)


def memory_only() -> bool:
    """Whether the caller decides from memory (inside ``from_memory()``)."""
    return _memory_only.get()


def store_needed() -> None:
    """Called by a keeper about to read the store (or write it): raises ``NotInMemory`` inside
    ``from_memory()``, and does nothing elsewhere."""
    if _memory_only.get():
        raise NotInMemory
