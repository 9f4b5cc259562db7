"""One SQLite database file as a process uses it.

Reads go through a connection of the calling thread's own (threads of a hub read in
parallel). Writes go through one writer connection, as transactions given as functions:
``transact(fn)`` runs ``fn(conn)`` as the body of one write transaction. Inline (the CLI),
the calling thread runs it. With group commit, every request waiting at that moment runs in
one transaction, each in its own savepoint (or alike ones together), and one fsync pays for
all of them: on the hub's event loop (``attach``), with only the COMMIT on a committer thread;
or, for a threaded caller without a loop, on a writer thread (``group_commit=True``). A third
connection only watches for other processes' commits. Settings are durable — WAL,
``synchronous=FULL`` — and the write lock is awaited in short, fair steps.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import queue
import random
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from switchboard.errors import StoreUnavailable
from switchboard.pending import Pending
from switchboard.store.sqlite.checkpointer import Checkpointer
from switchboard.store.sqlite.schema import migrate

T = TypeVar("T")

log = logging.getLogger(__name__)

BUSY_TIMEOUT_SECONDS = 30.0
# Waiting for the write lock: SQLite's own busy handler sleeps up to 100 ms between tries, which
# lets a busy writer starve the others for most of a second. We poll in steps of at most 2 ms.
_LOCK_RETRY_FIRST_SECONDS = 0.0001
_LOCK_RETRY_MAX_SECONDS = 0.002
# Requests per group commit. A bound keeps one transaction (and the wait of its first request
# for the others) short; beyond a few hundred the fsync is already shared enough.
GROUP_COMMIT_MAX_BATCH = 256
# The writer's page cache. A channel post writes into every member's mailbox: pages all over the
# file. With SQLite's default (2 MB) a hub's writes read most of them back from the OS each time,
# and slowed down as the file grew. A bound, not an allocation: a short-lived CLI uses little.
WRITER_CACHE_KIB = 64 * 1024
DEFAULT_AUTOCHECKPOINT_PAGES = 1000  # SQLite's own default
SERVER_AUTOCHECKPOINT_PAGES = 16_000  # about 64 MB of log


def _retry_while_locked(conn: sqlite3.Connection, statement: str) -> None:
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
class _Request:
    fn: Callable[[sqlite3.Connection], object]
    future: Pending
    together: Together | None = None
    item: object = None
    follow_up: FollowUp | None = None
    ticket: int = 0  # with a follow-up: its number, in submission order (see wait_for_follow_ups)


_Outcome = tuple[Pending, bool, object]  # (the caller's future, succeeded, value or error)
_STOP = object()  # queued by close(): the writer thread ends after everything queued before it


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
        # The writer connection: used under _write_lock inline, or by the group commit alone.
        self._write_lock = threading.RLock()
        self._in_body = False  # inline: fn is running (seen only by the thread holding _write_lock)
        self._writer = self._connect()
        try:
            migrate(self._writer)
            # From now on the writer waits for the lock only in _begin_immediate, in short fair
            # steps; once it holds the lock nothing it runs waits for another connection.
            self._writer.execute("PRAGMA busy_timeout = 0")
        except sqlite3.OperationalError as error:
            self._writer.close()
            raise self._unavailable(error) from None
        self.commits = 0  # write transactions committed by this object (a batch counts once)
        self._queue: queue.SimpleQueue[_Request | object] = queue.SimpleQueue()
        self._pending = 0  # requests submitted and not yet taken by the writer thread
        self._submit_lock = threading.Lock()  # orders submissions against close()'s _STOP
        self._writer_thread: threading.Thread | None = None
        if group_commit:
            self._writer_thread = threading.Thread(
                target=self._write_loop, name=f"switchboard-writer {self.path.name}", daemon=True
            )
            self._writer_thread.start()
        # Group commit driven by an event loop (the hub's, see attach): requests queue here, the
        # loop runs each batch's statements, and one committer thread runs each COMMIT (fsync).
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._loop_queue: deque[_Request] = deque()
        self._flush_scheduled = False
        self._committing = False
        self._committer: ThreadPoolExecutor | None = None
        self._committer_thread: int | None = None
        self._idle: asyncio.Future[None] | None = None  # detach() waits on it
        self._checkpointer: Checkpointer | None = None  # while attached
        # Follow-ups (see submit): numbered as submitted; every one up to _follow_ups_settled has
        # committed (or will never run). Readers that must see their work wait on the condition.
        # Those with steps left are due (an ordered set), on behalf of tickets up to _due_through.
        self._follow_ups_issued = 0
        self._follow_ups_settled = 0
        self._due: dict[FollowUp, None] = {}
        self._due_through = 0
        self._follow_ups_changed = threading.Condition()
        # A last connection only watches: its data_version moves when any connection commits.
        # It is opened when someone first waits for mail; most commands never do.
        self._watch_lock = threading.Lock()
        self._watch_conn: sqlite3.Connection | None = None

    def _connect(self, *, reader: bool = False) -> sqlite3.Connection:
        try:
            if not self.path.exists():
                # Mailboxes are private to the user. Create the file 0600 before SQLite does: its
                # -wal and -shm files copy the database file's permissions when they are made.
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            if reader:
                # A write through a read connection would bypass the writer (and group commit):
                # refuse it. WAL is already on (the writer connection set it, and it persists).
                conn.execute("PRAGMA query_only = ON")
            else:
                _retry_while_locked(conn, "PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KIB}")
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
    def pending(self) -> int:
        """Write requests waiting for a group commit to take them; 0 inline."""
        return self._pending

    @property
    def follows_up(self) -> bool:
        """Follow-ups of writes run after those writes have been answered (see submit): true
        while group-committing on an event loop."""
        return self._loop is not None

    def wait_for_follow_ups(self) -> None:
        """Return once the follow-up of every write submitted so far has committed (or failed,
        or will never run): a reader that needs their work waits here first."""
        wanted = self._follow_ups_issued
        if self._follow_ups_settled >= wanted:
            return
        if threading.get_ident() in (self._loop_thread, self._committer_thread):
            raise RuntimeError("waiting for follow-ups on the event loop that runs them would wait for itself")
        with self._follow_ups_changed:
            self._follow_ups_changed.wait_for(lambda: self._follow_ups_settled >= wanted)

    def _settle_follow_ups(self, through: int) -> None:
        if through > self._follow_ups_settled:
            with self._follow_ups_changed:
                self._follow_ups_settled = through
                self._follow_ups_changed.notify_all()

    def close(self) -> None:
        """Finish every write already submitted, then close every connection. Idempotent.

        Attached to an event loop, detach() first: a write still queued for a loop that no
        longer runs fails here as closed."""
        with self._submit_lock:
            already = self._closed
            self._closed = True
            if not already and self._writer_thread is not None:
                self._queue.put(_STOP)
            stranded = list(self._loop_queue)
            self._loop_queue.clear()
            self._pending -= len(stranded)
        if self._writer_thread is not None and self._writer_thread is not threading.current_thread():
            self._writer_thread.join()
        if self._committer is not None:
            self._committer.shutdown(wait=True)
        self._stop_checkpointer()
        for request in _claimed(stranded):
            request.future.set_exception(self._closed_error())
        self._settle_follow_ups(self._follow_ups_issued)  # none will run now: nobody waits for them
        with self._write_lock:  # inline: waits for a transaction in progress
            self._writer.close()
        with self._readers_changed:
            self._readers_changed.wait_for(lambda: self._active_reads == 0)
            for _, conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._watch_lock:
            if self._watch_conn is not None:
                self._watch_conn.close()

    def _stop_checkpointer(self) -> None:
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            checkpointer.stop()

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
        if self._loop is not None and threading.get_ident() in (self._loop_thread, self._committer_thread):
            raise RuntimeError("transact on the event loop that commits would wait for itself: await submit() instead")
        if self.group_commit or self._loop is not None:
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
        if self._loop is not None and self._submit_to_loop(_Request(fn, future, together, item, follow_up)):
            return future
        if follow_up is not None:  # no loop (or it detached meanwhile): one transaction for both
            fn, together = _then(fn, follow_up), None
        if not self.group_commit:
            future.set_running_or_notify_cancel()
            try:
                future.set_result(self._transact_inline(fn))
            except Exception as error:
                future.set_exception(error)
            return future
        if threading.current_thread() is self._writer_thread:
            raise RuntimeError("a write transaction's body cannot start another one: it would wait for itself")
        with self._submit_lock:
            if self._closed:
                future.set_running_or_notify_cancel()
                future.set_exception(self._closed_error())
                return future
            self._pending += 1
            self._queue.put(_Request(fn, future, together, item))
        return future

    def _submit_to_loop(self, request: _Request) -> bool:
        """Queue the request for the loop's group commit; False if detach() came first."""
        with self._submit_lock:
            loop = self._loop
            if loop is None:
                return False
            if self._closed:
                request.future.set_running_or_notify_cancel()
                request.future.set_exception(self._closed_error())
                return True
            if request.follow_up is not None:
                self._follow_ups_issued += 1
                request.ticket = self._follow_ups_issued
            self._loop_queue.append(request)
            self._pending += 1
            schedule, self._flush_scheduled = not self._flush_scheduled, True
        if schedule:  # requests submitted until the loop gets to it join the same batch
            if threading.get_ident() == self._loop_thread:
                loop.call_soon(self._flush)
            else:
                loop.call_soon_threadsafe(self._flush)
        return True

    def _transact_inline(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._write_lock:
            if self._closed:
                raise self._closed_error()
            if self._in_body:  # the lock is reentrant, so only fn itself can get here
                raise RuntimeError("a write transaction's body cannot start another one")
            conn = self._writer
            try:
                self._begin_immediate(conn)
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

    def _begin_immediate(self, conn: sqlite3.Connection) -> None:
        """Take the database's write lock, retrying briefly and often until the busy timeout
        (the writer connection's own busy timeout is 0: see __init__)."""
        _retry_while_locked(conn, "BEGIN IMMEDIATE")

    # --- group commit --------------------------------------------------------------------------

    def _write_loop(self) -> None:
        """The writer thread: take every waiting request (up to a cap), run them as one
        transaction, repeat; end at _STOP, which close() queues after the last request."""
        stopping = False
        while not stopping:
            item = self._queue.get()
            batch: list[_Request] = []
            while item is not _STOP:
                batch.append(item)  # type: ignore[arg-type]
                if len(batch) == GROUP_COMMIT_MAX_BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            stopping = item is _STOP
            with self._submit_lock:
                self._pending -= len(batch)
            try:
                self._run_batch(batch)
            except BaseException as error:  # a bug here must not leave callers waiting forever
                for request in batch:
                    if not request.future.done():
                        request.future.set_exception(self._unavailable(error))

    def _run_batch(self, batch: list[_Request]) -> None:
        batch = _claimed(batch)
        if not batch:
            return
        try:
            outcomes = self._begin_run_commit(batch)
        except BaseException as error:
            self._fail(batch, error)
            return
        self._settle(outcomes)

    def _begin_run_commit(self, batch: list[_Request]) -> list[_Outcome]:
        """The batch as one transaction, committed; each request's outcome. Raises (having rolled
        back) when the transaction as a whole failed."""
        self._begin_immediate(self._writer)
        return self._commit(self._run_requests(batch))

    def _run_requests(self, batch: list[_Request]) -> list[_Outcome]:
        """Every request of the batch in the open transaction, a savepoint each (or each run of
        alike requests together); rolls back and raises if the transaction as a whole failed."""
        conn = self._writer
        outcomes: list[_Outcome] = []
        try:
            for run in _runs_of_alike(batch):
                if len(run) == 1 or not self._run_together(conn, run, outcomes):
                    for request in run:
                        self._run_alone(conn, request, outcomes)
        except BaseException:
            self._rollback()
            raise
        return outcomes

    def _commit(self, outcomes: list[_Outcome]) -> list[_Outcome]:
        try:
            self._writer.execute("COMMIT")
        except BaseException:
            self._rollback()  # also when COMMIT itself failed (disk full, I/O error)
            raise
        self.commits += 1
        if self._checkpointer is not None:
            self._checkpointer.committed()
        return outcomes

    def _rollback(self) -> None:
        try:
            if self._writer.in_transaction:
                self._writer.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the connection is broken; every request of the batch fails anyway

    def _fail(self, batch: list[_Request], error: BaseException) -> None:
        for request in batch:  # an exception each: callers raise them in their own threads
            request.future.set_exception(self._unavailable(error))

    @staticmethod
    def _settle(outcomes: list[_Outcome]) -> None:
        # Only now, with the commit on disk, does any caller learn its outcome.
        for future, ok, value in outcomes:
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)  # type: ignore[arg-type]

    # --- group commit driven by an event loop -------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Group-commit on ``loop`` from now on; call it on that loop, before any write is queued.

        Each batch's statements run on the loop itself and only its COMMIT (the fsync) on a
        committer thread, so the loop serves requests while the disk works and the next batch
        gathers meanwhile. Why not a writer thread for it all: Python's sqlite3 lets go of the
        GIL at every statement step, and a writer thread then waits for the busy event loop to
        hand it back, each time — most of a batch's time went there."""
        if self.group_commit or self._loop is not None:
            raise RuntimeError("this database already group-commits")
        self._committer = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="switchboard-commit", initializer=self._note_committer_thread
        )
        # SQLite checkpoints inside the COMMIT that takes the log past this many pages. A busy
        # hub rewrites the same pages over and over (each mailbox's newest page): a longer log
        # copies each of them into the file once for many commits instead of once per commit.
        # The checkpointer's thread copies most of it before then (see sqlite_checkpointer).
        self._writer.execute(f"PRAGMA wal_autocheckpoint = {SERVER_AUTOCHECKPOINT_PAGES}")
        self._checkpointer = Checkpointer(self._connect)
        self._checkpointer.start()
        self._loop_thread = threading.get_ident()
        self._loop = loop

    def _note_committer_thread(self) -> None:
        # A batch that waited for the lock runs its bodies there: they must not transact() either.
        self._committer_thread = threading.get_ident()

    async def detach(self) -> None:
        """Stop group-committing on the loop once every queued write has committed (writes are
        inline again afterwards)."""
        loop = self._loop
        if loop is None:
            return
        while True:
            with self._submit_lock:  # a submit either lands before this, or sees the loop gone
                if not self._loop_queue and not self._committing and not self._due:
                    self._loop = None
                    break
                self._idle = loop.create_future()
            await self._idle
        if self._committer is not None:
            self._committer.shutdown(wait=True)
        self._stop_checkpointer()
        with self._write_lock:  # inline writes from now on, checkpointing as SQLite does
            if not self._closed:
                self._writer.execute(f"PRAGMA wal_autocheckpoint = {DEFAULT_AUTOCHECKPOINT_PAGES}")

    def _flush(self) -> None:
        """On the loop: every queued request (up to a cap) as one transaction; its COMMIT goes to
        the committer thread, and when it is done the next batch starts (see _committed)."""
        batch: list[_Request] = []
        through = 0  # the batch's last follow-up ticket, cancelled requests' included
        while not batch:
            with self._submit_lock:
                self._flush_scheduled = False
                if self._committing:
                    return
                taken = [self._loop_queue.popleft() for _ in range(min(len(self._loop_queue), GROUP_COMMIT_MAX_BATCH))]
                self._pending -= len(taken)
            through = max([through, *(request.ticket for request in taken)])
            if not taken:
                if self._due:  # the steps left go on while no write waits
                    self._due_through = max(self._due_through, through)
                    self._step()
                    return
                self._settle_follow_ups(through)  # nothing left: tell a waiting detach()
                if self._idle is not None and not self._idle.done():
                    self._idle.set_result(None)
                return
            batch = _claimed(taken)  # all cancelled: take the next ones
        self._committing = True
        work: Callable[[], list[_Outcome]]
        try:
            self._writer.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                self._committed(batch, error, through)
                return
            # Another process holds the write lock: wait for it on the committer thread, not here.
            work = functools.partial(self._begin_run_commit, batch)
        else:
            try:
                outcomes = self._run_requests(batch)
            except BaseException as error:
                self._committed(batch, error, through)
                return
            work = functools.partial(self._commit, outcomes)
        assert self._committer is not None and self._loop is not None
        loop = self._loop
        try:
            committing = self._committer.submit(work)
        except RuntimeError as error:  # close() shut the committer down meanwhile (not detached first)
            self._rollback()
            self._committed(batch, error, through)
            return
        committing.add_done_callback(lambda done: loop.call_soon_threadsafe(self._committed, batch, done, through))

    def _committed(self, batch: list[_Request], done: Future[list[_Outcome]] | BaseException, through: int) -> None:
        """On the loop: the batch's callers learn their outcomes; a step of the follow-ups due
        runs, then the next batch starts."""
        self._committing = False
        error = done if isinstance(done, BaseException) else done.exception()
        if error is not None:
            self._fail(batch, error)
        else:
            outcomes: list[_Outcome] = done.result()  # type: ignore[union-attr]
            self._settle(outcomes)
            for request, (_, ok, _) in zip(batch, outcomes, strict=True):
                if ok and request.follow_up is not None:
                    self._due[request.follow_up] = None
        if not self._due:
            self._settle_follow_ups(through)
            self._flush()
            return
        self._due_through = max(self._due_through, through)
        self._step()

    def _step(self) -> None:
        """Run steps of the follow-ups due on the committer thread, a transaction each, until
        they are done or a batch is waiting (see _stepped)."""
        assert self._committer is not None and self._loop is not None
        loop = self._loop
        try:
            running = self._committer.submit(self._begin_run_steps_commit, list(self._due))
        except RuntimeError:  # close() shut the committer down meanwhile: they never run
            self._due.clear()
            self._settle_follow_ups(self._due_through)
            return
        self._committing = True
        running.add_done_callback(lambda done: loop.call_soon_threadsafe(self._stepped, done))

    def _begin_run_steps_commit(self, due: list[FollowUp]) -> list[FollowUp]:
        """A step of each follow-up ``due`` per transaction, as long as one has more to do and
        no batch waits: the loop, busy with what the last batch set off, need not be asked for
        each step. Those with more to do."""
        while True:
            self._begin_immediate(self._writer)
            try:
                due = [follow_up for follow_up in due if follow_up(self._writer)]
            except BaseException:
                self._rollback()
                raise
            self._commit([])
            if not due or self._loop_queue or self._closed:
                return due

    def _stepped(self, done: Future[list[FollowUp]]) -> None:
        """On the loop: steps have committed (or one failed: it is logged, and the follow-ups
        are dropped, so nobody waits for them). A waiting batch goes first, then more steps."""
        self._committing = False
        error = done.exception()
        if error is not None:
            log.error("the follow-up of committed writes failed: %s", error)
        # Only the steps change what is due: no batch commits while they run.
        self._due = dict.fromkeys([] if error is not None else done.result())
        if not self._due:
            self._settle_follow_ups(self._due_through)
        self._flush()

    def _run_alone(self, conn: sqlite3.Connection, request: _Request, outcomes: list) -> None:
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

    def _run_together(self, conn: sqlite3.Connection, run: list[_Request], outcomes: list) -> bool:
        """Run alike requests as one call; False (nothing kept) if it failed, to run them one by one."""
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


def _then(fn: Callable[[sqlite3.Connection], T], follow_up: FollowUp) -> Callable[[sqlite3.Connection], T]:
    def fn_then_follow_up(conn: sqlite3.Connection) -> T:
        value = fn(conn)
        while follow_up(conn):
            pass
        return value

    return fn_then_follow_up


def _claimed(batch: list[_Request]) -> list[_Request]:
    """A caller that gave up (cancelled) before its turn is skipped; the others can no longer
    be cancelled, so each gets exactly one outcome."""
    return [request for request in batch if request.future.set_running_or_notify_cancel()]


def _runs_of_alike(batch: list[_Request]) -> Iterator[list[_Request]]:
    """The batch in order, cut into runs of neighbours that can run together."""
    run: list[_Request] = []
    for request in batch:
        if run and (request.together is None or request.together is not run[0].together):
            yield run
            run = []
        run.append(request)
    if run:
        yield run
