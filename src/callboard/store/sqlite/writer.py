"""The one connection that writes to an SQLite file, and the transactions it runs: one body at a
time for a caller (``transact``), or a batch of requests as one transaction, a savepoint each
(or alike ones together), for a group commit (``begin_run_commit``; the loop's group commit
runs the same steps apart, see ``loop_commit``). Nothing here decides when a batch runs.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from callboard.errors import StoreUnavailable
from callboard.pending import Pending
from callboard.store.sqlite.checkpointer import Checkpointer

T = TypeVar("T")

BUSY_TIMEOUT_SECONDS = 30.0
# Waiting for the write lock: SQLite's own busy handler sleeps up to 100 ms between tries, which
# lets a busy writer starve the others for most of a second. We poll in steps of at most 2 ms.
_LOCK_RETRY_FIRST_SECONDS = 0.0001
_LOCK_RETRY_MAX_SECONDS = 0.002
# Requests per group commit. A bound keeps one transaction (and the wait of its first request
# for the others) short; beyond a few hundred the fsync is already shared enough.
GROUP_COMMIT_MAX_BATCH = 256


def retry_while_locked(conn: sqlite3.Connection, statement: str) -> None:
    """Run ``statement``, retrying while another connection holds the lock it needs.

    Also for statements SQLite does not retry itself: switching a new database to WAL answers
    "locked" at once while another process is creating the same file.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause = _LOCK_RETRY_FIRST_SECONDS
    while True:
        try:
            conn.execute(statement)
            return
        except sqlite3.OperationalError as error:
            if conn.in_transaction or "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(pause * (0.5 + random.random()))
        pause = min(pause * 2, _LOCK_RETRY_MAX_SECONDS)


# Runs several alike requests' items in one go: returns one value per item, in order, or raises
# (then each request runs again on its own, so that only the one at fault fails).
Together = Callable[[sqlite3.Connection, list], list]


# Work that a write leaves for later, run after the write has committed, in steps: each call
# does a bounded part of it in a transaction of its own and answers True while more remains.
# It is done for whoever left it (the same function for many writes runs for them all at once).
FollowUp = Callable[[sqlite3.Connection], object]


@dataclass(slots=True)
class PendingWrite:
    """A write waiting for a group commit: its body, and the caller's future."""

    fn: Callable[[sqlite3.Connection], object]
    future: Pending
    together: Together | None = None
    item: object = None
    follow_up: FollowUp | None = None
    ticket: int = 0  # with a follow-up: its number, in submission order (see FollowUpTickets)


Outcome = tuple[Pending, bool, object]  # (the caller's future, succeeded, value or error)


class Writer:
    """The writer connection. Inline, ``lock`` makes its transactions one at a time; a group
    commit uses it from one thread only (the writer thread, or the loop and its committer)."""

    def __init__(self, conn: sqlite3.Connection, unavailable: Callable[[BaseException], StoreUnavailable]) -> None:
        self.conn = conn
        self.lock = threading.RLock()
        self.commits = 0  # write transactions committed (a batch counts once)
        self.checkpointer: Checkpointer | None = None  # told of each batch's commit, while there is one
        self._unavailable = unavailable
        self._in_body = False  # inline: fn is running (seen only by the thread holding the lock)

    def begin_immediate(self) -> None:
        """Take the database's write lock, retrying briefly and often until the busy timeout
        (the writer connection's own busy timeout is 0: see SQLiteDatabase)."""
        retry_while_locked(self.conn, "BEGIN IMMEDIATE")

    def transact(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(conn)`` as one transaction of its own, committed; or raise what it raised."""
        with self.lock:
            if self._in_body:  # the lock is reentrant, so only fn itself can get here
                raise RuntimeError("a write transaction's body cannot start another one")
            conn = self.conn
            try:
                self.begin_immediate()
                try:
                    self._in_body = True
                    try:
                        result = fn(conn)
                    finally:
                        self._in_body = False
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:  # also when COMMIT itself failed (disk full, I/O error)
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as error:
                raise self._unavailable(error) from None
            self.commits += 1
            return result

    # --- a batch of requests as one transaction ----------------------------------------------------

    def begin_run_commit(self, batch: list[PendingWrite]) -> list[Outcome]:
        """The batch as one transaction, committed; each request's outcome. Raises (having rolled
        back) when the transaction as a whole failed."""
        self.begin_immediate()
        return self.commit(self.run_requests(batch))

    def run_requests(self, batch: list[PendingWrite]) -> list[Outcome]:
        """Every request of the batch in the open transaction, a savepoint each (or each run of
        alike requests together); rolls back and raises if the transaction as a whole failed."""
        outcomes: list[Outcome] = []
        try:
            for run in runs_of_alike(batch):
                if len(run) == 1 or not self._run_together(run, outcomes):
                    for request in run:
                        self._run_alone(request, outcomes)
        except BaseException:
            self.rollback()
            raise
        return outcomes

    def commit(self, outcomes: list[Outcome]) -> list[Outcome]:
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self.rollback()  # also when COMMIT itself failed (disk full, I/O error)
            raise
        self.commits += 1
        if self.checkpointer is not None:
            self.checkpointer.committed()
        return outcomes

    def rollback(self) -> None:
        try:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the connection is broken; every request of the batch fails anyway

    def fail(self, batch: list[PendingWrite], error: BaseException) -> None:
        for request in batch:  # an exception each: callers raise them in their own threads
            request.future.set_exception(self._unavailable(error))

    @staticmethod
    def settle(outcomes: list[Outcome]) -> None:
        # Only now, with the commit on disk, does any caller learn its outcome.
        for future, ok, value in outcomes:
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)  # type: ignore[arg-type]  # not ok: the value is the error

    def _run_alone(self, request: PendingWrite, outcomes: list[Outcome]) -> None:
        conn = self.conn
        conn.execute("SAVEPOINT request")
        try:
            value = request.fn(conn)
        except BaseException as error:
            if not conn.in_transaction:
                # SQLite rolled back the whole transaction (I/O error, disk full): the
                # requests before this one lost their writes too, so the batch fails.
                raise
            conn.execute("ROLLBACK TO request")  # undo this request's writes only
            conn.execute("RELEASE request")
            if isinstance(error, sqlite3.OperationalError):
                error = self._unavailable(error)
            outcomes.append((request.future, False, error))
        else:
            conn.execute("RELEASE request")
            outcomes.append((request.future, True, value))

    def _run_together(self, run: list[PendingWrite], outcomes: list[Outcome]) -> bool:
        """Run alike requests as one call; False (nothing kept) if it failed, to run them one by one."""
        conn = self.conn
        together = run[0].together
        assert together is not None
        conn.execute("SAVEPOINT together")
        try:
            values = together(conn, [request.item for request in run])
            if len(values) != len(run):
                raise RuntimeError(f"{together.__qualname__} answered {len(values)} values for {len(run)} items")
        except Exception:
            if not conn.in_transaction:
                raise  # the whole transaction is gone: see _run_alone
            conn.execute("ROLLBACK TO together")
            conn.execute("RELEASE together")
            return False
        conn.execute("RELEASE together")
        outcomes.extend((request.future, True, value) for request, value in zip(run, values, strict=True))
        return True


def then(fn: Callable[[sqlite3.Connection], T], follow_up: FollowUp) -> Callable[[sqlite3.Connection], T]:
    """``fn`` with every step of ``follow_up`` after it, in its transaction."""

    def fn_then_follow_up(conn: sqlite3.Connection) -> T:
        value = fn(conn)
        while follow_up(conn):
            pass
        return value

    return fn_then_follow_up


def claimed(batch: list[PendingWrite]) -> list[PendingWrite]:
    """A caller that gave up (cancelled) before its turn is skipped; the others can no longer
    be cancelled, so each gets exactly one outcome."""
    return [request for request in batch if request.future.set_running_or_notify_cancel()]


def runs_of_alike(batch: list[PendingWrite]) -> Iterator[list[PendingWrite]]:
    """The batch in order, cut into runs of neighbours that can run together."""
    run: list[PendingWrite] = []
    for request in batch:
        if run and (request.together is None or request.together is not run[0].together):
            yield run
            run = []
        run.append(request)
    if run:
        yield run
