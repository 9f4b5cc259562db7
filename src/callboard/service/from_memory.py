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

Facts asked for from memory are read again before they go stale (``refresh_ahead``), on a
thread of their own, so that a steady flow of sends never finds them stale.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger(__name__)

_memory_only: ContextVar[bool] = ContextVar("callboard_memory_only", default=False)


class NotInMemory(Exception):
    """The operation needs the store, which may not be read here: run it where it may block."""


class from_memory:  # noqa: N801 (used as a function: ``with from_memory():``)
    """Within the block, a read of the store raises ``NotInMemory`` (see the module). A class, not
    a generator: a hub's send enters it twice, and this costs a third of ``contextmanager``'s."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _memory_only.set(True)

    def __exit__(self, *exc: object) -> None:
        _memory_only.reset(self._token)


def memory_only() -> bool:
    """Whether the caller decides from memory (inside ``from_memory()``)."""
    return _memory_only.get()


def store_needed() -> None:
    """Called by a keeper about to read the store (or write it): raises ``NotInMemory`` inside
    ``from_memory()``, and does nothing elsewhere."""
    if _memory_only.get():
        raise NotInMemory


# --- reading facts again before they go stale -------------------------------------------------

REFRESH_GATHER_SECONDS = 0.05  # facts due within this are read again in one go (one thread wake-up)

_refresher: ThreadPoolExecutor | None = None  # made on first use: a process that never decides from memory has none
_due: dict[object, Callable[[], object]] = {}  # key -> its refresh, in the order they fell due
_refreshing = False  # a drain is scheduled or running on the refresher
_refreshing_lock = threading.Lock()


def refresh_ahead(key: object, refresh: Callable[[], object]) -> None:
    """Have ``refresh()`` (which reads ``key``'s facts from the store and keeps them) run soon on
    the refresher's thread, unless it is due there already. A keeper calls it when a decision from
    memory finds its facts past half their freshness: they still serve meanwhile, and are fresh
    again before a send would have to go to a worker thread for them. The facts that fall due
    within ``REFRESH_GATHER_SECONDS`` are read in one go. ``key`` names the keeper too (one
    process may hold several services)."""
    global _refresher, _refreshing
    if key in _due:  # due already (most calls, until it is read): no lock taken
        return
    with _refreshing_lock:
        if key in _due:
            return
        _due[key] = refresh
        if _refreshing:
            return
        _refreshing = True
        if _refresher is None:  # imported here: a process that never decides from memory never needs it
            from concurrent.futures import ThreadPoolExecutor

            _refresher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="callboard-refresh")
        refresher = _refresher
    try:
        refresher.submit(_drain)
    except RuntimeError:  # the interpreter is shutting down: nothing is read again
        with _refreshing_lock:
            _due.clear()
            _refreshing = False


def _drain() -> None:
    global _refreshing
    time.sleep(REFRESH_GATHER_SECONDS)
    while True:
        with _refreshing_lock:
            if not _due:
                _refreshing = False
                return
            key, refresh = next(iter(_due.items()))
        try:
            refresh()
        except Exception:  # the facts stay as they were: a send that finds them stale reads them itself
            log.debug("reading %r again failed", key, exc_info=True)
        finally:
            with _refreshing_lock:
                _due.pop(key, None)
