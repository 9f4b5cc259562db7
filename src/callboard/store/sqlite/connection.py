"""One SQLite database file as a process uses it.

Reads go through a connection of the calling thread's own (threads of a hub read in
parallel). Writes go through one writer connection (``writer``), as transactions given as
functions: ``transact(fn)`` runs ``fn(conn)`` as the body of one write transaction. Inline (the
CLI), the calling thread runs it. With group commit, every request waiting at that moment runs
in one transaction, each in its own savepoint (or alike ones together), and one fsync pays for
all of them: on the hub's event loop (``attach``, see ``loop_commit``), with only the COMMIT on
a committer thread; or, for a threaded caller without a loop, on a writer thread
(``group_commit=True``, see ``writer_thread``). A third connection only watches for other
processes' commits. Settings are durable — WAL, ``synchronous=FULL`` — and the write lock is
awaited in short, fair steps.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from callboard.errors import StoreUnavailable
from callboard.pending import Pending
from callboard.store.sqlite import writer as sqlite_writer
from callboard.store.sqlite.loop_commit import FollowUpTickets, LoopCommit
from callboard.store.sqlite.schema import migrate
from callboard.store.sqlite.writer import FollowUp, PendingWrite, Together, Writer, then
from callboard.store.sqlite.writer_thread import WriterThread

T = TypeVar("T")

# The writer's page cache. A channel post writes into every member's mailbox: pages all over the
# file. With SQLite's default (2 MB) a hub's writes read most of them back from the OS each time,
# and slowed down as the file grew. A bound, not an allocation: a short-lived CLI uses little.
WRITER_CACHE_KIB = 64 * 1024


class SQLiteDatabase:
    def __init__(self, path: str | os.PathLike[str], *, group_commit: bool = False) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as error:
            raise StoreUnavailable(f"cannot create the folder for the database {self.path}: {error}.") from None
        self.group_commit = group_commit
        self._closed = False
        # Readers: one connection per thread, remembered with its thread so that close() can
        # close them all and a new one can close those of threads that have ended.
        self._local = threading.local()
        self._readers: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._readers_changed = threading.Condition()
        self._active_reads = 0  # close() waits for these to finish before closing connections
        conn = self._connect()
        try:
            migrate(conn)
            # From now on the writer waits for the lock only in begin_immediate, in short fair
            # steps; once it holds the lock nothing it runs waits for another connection.
            conn.execute("PRAGMA busy_timeout = 0")
        except sqlite3.OperationalError as error:
            conn.close()
            raise self._unavailable(error) from None
        self._writer = Writer(conn, self._unavailable)
        self._submit_lock = threading.Lock()  # orders submissions against close()
        self._writer_thread: WriterThread | None = None
        if group_commit:
            self._writer_thread = WriterThread(self._writer, f"callboard-writer {self.path.name}")
        self._loop_commit: LoopCommit | None = None  # group commit on an event loop, once attached
        self._follow_ups = FollowUpTickets()
        # A last connection only watches: its data_version moves when any connection commits.
        # It is opened when someone first waits for mail; most commands never do.
        self._watch_lock = threading.Lock()
        self._watch_conn: sqlite3.Connection | None = None

    def _connect(self, *, reader: bool = False) -> sqlite3.Connection:
        timeout = sqlite_writer.BUSY_TIMEOUT_SECONDS
        try:
            if not self.path.exists():
                # Mailboxes are private to the user. Create the file 0600 before SQLite does: its
                # -wal and -shm files copy the database file's permissions when they are made.
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if reader:
                # A write through a read connection would bypass the writer (and group commit):
                # refuse it. WAL is already on (the writer connection set it, and it persists).
                conn.execute("PRAGMA query_only = ON")
            else:
                sqlite_writer.retry_while_locked(conn, "PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KIB}")
                # Statement and savepoint journals in memory: a batch's multi-row INSERT keeps
                # the first image of each page it changes there (for its rollback), and past
                # 64 KiB SQLite spills that to a temporary file: write calls on every batch,
                # a third of a send's statement time. Only the writer's: readers' sorts may be large.
                conn.execute("PRAGMA temp_store = MEMORY")
        except (sqlite3.Error, OSError) as error:
            raise StoreUnavailable(f"cannot open the database {self.path}: {error}.") from None
        return conn

    def _unavailable(self, error: BaseException) -> StoreUnavailable:
        return StoreUnavailable(f"the database {self.path} is unavailable ({error}); try again.")

    def _closed_error(self) -> StoreUnavailable:
        return StoreUnavailable(f"the database {self.path} was closed.")

    @property
    def closed(self) -> bool:
        """close() has been called (it may still be finishing the writes submitted before)."""
        return self._closed

    @property
    def commits(self) -> int:
        """Write transactions committed by this object (a batch counts once)."""
        return self._writer.commits

    @property
    def pending(self) -> int:
        """Write requests waiting for a group commit to take them; 0 inline."""
        thread, loop = self._writer_thread, self._loop_commit
        return (thread.pending if thread else 0) + (loop.pending if loop else 0)

    @property
    def follows_up(self) -> bool:
        """Follow-ups of writes run after those writes have been answered (see submit): true
        while group-committing on an event loop."""
        return self._attached() is not None

    def _attached(self) -> LoopCommit | None:
        loop_commit = self._loop_commit
        return loop_commit if loop_commit is not None and loop_commit.loop is not None else None

    def wait_for_follow_ups(self) -> None:
        """Return once the follow-up of every write submitted so far has committed (or failed,
        or will never run): a reader that needs their work waits here first."""
        wanted = self._follow_ups.issued
        if self._follow_ups.settled >= wanted:
            return
        if self._loop_commit is not None and self._loop_commit.on_its_threads():
            raise RuntimeError("waiting for follow-ups on the event loop that runs them would wait for itself")
        self._follow_ups.wait(wanted)

    def close(self) -> None:
        """Finish every write already submitted, then close every connection. Idempotent.

        Attached to an event loop, detach() first: a write still queued for a loop that no
        longer runs fails here as closed."""
        with self._submit_lock:
            already = self._closed
            self._closed = True
            if not already and self._writer_thread is not None:
                self._writer_thread.stop()
        loop_commit = self._loop_commit
        stranded = loop_commit.strand() if loop_commit is not None else []
        if self._writer_thread is not None:
            self._writer_thread.join()
        if loop_commit is not None:
            loop_commit.shut_down()
        for request in stranded:
            request.future.set_exception(self._closed_error())
        self._follow_ups.settle(self._follow_ups.issued)  # none will run now: nobody waits for them
        with self._writer.lock:  # inline: waits for a transaction in progress
            self._writer.conn.close()
        with self._readers_changed:
            self._readers_changed.wait_for(lambda: self._active_reads == 0)
            for _, conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._watch_lock:
            if self._watch_conn is not None:
                self._watch_conn.close()

    def change_counter(self) -> int:
        with self._watch_lock:
            if self._watch_conn is None:
                if self._closed:
                    raise self._closed_error()
                self._watch_conn = self._connect()
            return self._watch_conn.execute("PRAGMA data_version").fetchone()[0]

    # --- reads -------------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """This thread's read connection; SQLite failures become a clear error.

        Statements run in autocommit: each sees the latest committed state, including every
        write whose ``transact`` has returned, in any thread."""
        with self._readers_changed:
            if self._closed:
                raise self._closed_error()
            self._active_reads += 1
        try:
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._open_reader()
            try:
                yield conn
            except sqlite3.OperationalError as error:
                raise self._unavailable(error) from None
        finally:
            with self._readers_changed:
                self._active_reads -= 1
                if self._active_reads == 0:
                    self._readers_changed.notify_all()

    def _open_reader(self) -> sqlite3.Connection:
        conn = self._connect(reader=True)
        with self._readers_changed:
            # A thread that ended left its connection here (its threading.local is gone): close
            # those now, so a server whose threads come and go does not collect connections.
            alive = []
            for thread, old in self._readers:
                if thread.is_alive():
                    alive.append((thread, old))
                else:
                    old.close()
            alive.append((threading.current_thread(), conn))
            self._readers = alive
        self._local.conn = conn
        return conn

    # --- writes ------------------------------------------------------------------------------

    def transact(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` as the body of one write transaction and return its result, once
        committed and on disk; or raise what ``fn`` raised, with none of its writes kept.

        ``fn`` uses only ``conn``, never begins, commits or rolls back, never calls
        ``transact``, and returns plain data (rows fetched, not a cursor). With group commit
        it runs inside a savepoint of a transaction shared with other requests (on the event
        loop that group-commits, or the writer thread), so it should do there only what needs
        the database."""
        attached = self._attached()
        if attached is not None and attached.on_its_threads():
            raise RuntimeError("transact on the event loop that commits would wait for itself: await submit() instead")
        if self.group_commit or attached is not None:
            return self.submit(fn).result()
        return self._transact_inline(fn)

    def submit(
        self,
        fn: Callable[[sqlite3.Connection], T],
        *,
        together: Together | None = None,
        item: object = None,
        follow_up: FollowUp | None = None,
    ) -> Pending[T]:
        """``transact`` as a future (a ``Pending``). Inline, it has run already. Cancelling it
        before its batch runs means ``fn`` never runs.

        With group commit, requests queued one after another with the same ``together`` run as
        one call ``together(conn, [item, ...])`` instead (a few statements for the lot rather than
        a few per request).
        ``fn(conn)`` must equal ``together(conn, [item])[0]``.

        ``follow_up(conn)``: work that may wait until ``fn``'s outcome is known (see
        ``follows_up`` and ``FollowUp``). On the loop its steps run once the batch has committed
        and the callers have their outcomes, off the loop, a transaction each: the first before
        the next batch, the others taking turns with the batches that wait (so a batch waits for
        one step at most); one function left by many requests runs for them all. Otherwise all
        its steps run right after ``fn``, in its transaction."""
        future: Pending[T] = Pending()
        loop_commit = self._loop_commit
        if loop_commit is not None and loop_commit.submit(
            PendingWrite(fn, future, together, item, follow_up), self._closed_error
        ):
            return future
        if follow_up is not None:  # no loop (or it detached meanwhile): one transaction for both
            fn, together = then(fn, follow_up), None
        if self._writer_thread is None:
            future.set_running_or_notify_cancel()
            try:
                future.set_result(self._transact_inline(fn))
            except Exception as error:
                future.set_exception(error)
            return future
        if self._writer_thread.is_current():
            raise RuntimeError("a write transaction's body cannot start another one: it would wait for itself")
        with self._submit_lock:
            if self._closed:
                future.set_running_or_notify_cancel()
                future.set_exception(self._closed_error())
                return future
            self._writer_thread.put(PendingWrite(fn, future, together, item))
        return future

    def _transact_inline(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._writer.lock:
            if self._closed:
                raise self._closed_error()
            return self._writer.transact(fn)

    # --- group commit driven by an event loop -------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Group-commit on ``loop`` from now on; call it on that loop, before any write is queued
        (see ``loop_commit``)."""
        if self.group_commit or self._attached() is not None:
            raise RuntimeError("this database already group-commits")
        self._loop_commit = LoopCommit(self._writer, loop, self._follow_ups, self._connect)

    async def detach(self) -> None:
        """Stop group-committing on the loop once every queued write has committed (writes are
        inline again afterwards)."""
        if self._loop_commit is not None:
            await self._loop_commit.detach(lambda: self._closed)
