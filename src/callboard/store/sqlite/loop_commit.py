"""Group commit driven by an event loop: the hub's way of writing (``SQLiteDatabase.attach``).

Requests queue here; the loop runs each batch's statements, a savepoint each, and only the
COMMIT (the fsync) runs on a committer thread, so the loop serves requests while the disk works
and the next batch gathers meanwhile. Why not a writer thread for it all: Python's sqlite3 lets
go of the GIL at every statement step, and a writer thread then waits for the busy event loop to
hand it back, each time — most of a batch's time went there.

A request may leave a follow-up (``FollowUp``): work that may wait until its outcome is known.
Its steps run once the batch has committed and the callers have their outcomes, off the loop, a
transaction each, taking turns with the batches that wait. ``FollowUpTickets`` tells a reader
when the follow-ups of every write submitted so far are done.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from callboard.store.sqlite.checkpointer import Checkpointer
from callboard.store.sqlite.writer import GROUP_COMMIT_MAX_BATCH, FollowUp, Outcome, PendingWrite, Writer, claimed

log = logging.getLogger(__name__)

DEFAULT_AUTOCHECKPOINT_PAGES = 1000  # SQLite's own default
SERVER_AUTOCHECKPOINT_PAGES = 16_000  # about 64 MB of log


class FollowUpTickets:
    """Follow-ups numbered as submitted: every one up to ``settled`` has committed (or will
    never run). Readers that must see their work wait here."""

    def __init__(self) -> None:
        self.issued = 0
        self.settled = 0
        self._changed = threading.Condition()

    def issue(self) -> int:
        """The next ticket (its caller orders issuing against settling them all: see close)."""
        self.issued += 1
        return self.issued

    def settle(self, through: int) -> None:
        if through > self.settled:
            with self._changed:
                self.settled = through
                self._changed.notify_all()

    def wait(self, wanted: int) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self.settled >= wanted)


class LoopCommit:
    """Group commit on one event loop, from ``attach`` (made on that loop) until ``detach``."""

    def __init__(
        self,
        writer: Writer,
        loop: asyncio.AbstractEventLoop,
        tickets: FollowUpTickets,
        connect: Callable[[], sqlite3.Connection],
    ) -> None:
        self._writer = writer
        self._tickets = tickets
        self._lock = threading.Lock()  # orders submissions against detach() and close()
        self._queue: deque[PendingWrite] = deque()
        self.pending = 0  # requests queued and not yet taken by a batch
        self._closed = False
        self._flush_scheduled = False
        self._committing = False
        self._committer = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="callboard-commit", initializer=self._note_committer_thread
        )
        self._committer_thread: int | None = None
        self._idle: asyncio.Future[None] | None = None  # detach() waits on it
        # Follow-ups with steps left are due (an ordered set), on behalf of tickets up to _due_through.
        self._due: dict[FollowUp, None] = {}
        self._due_through = 0
        # SQLite checkpoints inside the COMMIT that takes the log past this many pages. A busy
        # hub rewrites the same pages over and over (each mailbox's newest page): a longer log
        # copies each of them into the file once for many commits instead of once per commit.
        # The checkpointer's thread copies most of it before then (see checkpointer).
        writer.conn.execute(f"PRAGMA wal_autocheckpoint = {SERVER_AUTOCHECKPOINT_PAGES}")
        writer.checkpointer = Checkpointer(connect)
        writer.checkpointer.start()
        self._loop_thread = threading.get_ident()
        self.loop: asyncio.AbstractEventLoop | None = loop  # None once detached

    def _note_committer_thread(self) -> None:
        # A batch that waited for the lock runs its bodies there: they must not transact() either.
        self._committer_thread = threading.get_ident()

    def on_its_threads(self) -> bool:
        """Whether the caller is the loop or the committer: a write there would wait for itself."""
        return threading.get_ident() in (self._loop_thread, self._committer_thread)

    def submit(self, request: PendingWrite, closed_error: Callable[[], BaseException]) -> bool:
        """Queue the request for the loop's group commit; False if detach() came first."""
        with self._lock:
            loop = self.loop
            if loop is None:
                return False
            if self._closed:
                request.future.set_running_or_notify_cancel()
                request.future.set_exception(closed_error())
                return True
            if request.follow_up is not None:
                request.ticket = self._tickets.issue()
            self._queue.append(request)
            self.pending += 1
            schedule, self._flush_scheduled = not self._flush_scheduled, True
        if schedule:  # requests submitted until the loop gets to it join the same batch
            if threading.get_ident() == self._loop_thread:
                loop.call_soon(self._flush)
            else:
                loop.call_soon_threadsafe(self._flush)
        return True

    async def detach(self, closed: Callable[[], bool]) -> None:
        """Stop once every queued write has committed (writes are inline again afterwards)."""
        loop = self.loop
        if loop is None:
            return
        while True:
            with self._lock:  # a submit either lands before this, or sees the loop gone
                if not self._queue and not self._committing and not self._due:
                    self.loop = None
                    break
                self._idle = loop.create_future()
            await self._idle
        self.shut_down()
        with self._writer.lock:  # inline writes from now on, checkpointing as SQLite does
            if not closed():
                self._writer.conn.execute(f"PRAGMA wal_autocheckpoint = {DEFAULT_AUTOCHECKPOINT_PAGES}")

    def strand(self) -> list[PendingWrite]:
        """Closing: refuse what comes from now on; the requests still queued, which will never run."""
        with self._lock:
            self._closed = True
            stranded = list(self._queue)
            self._queue.clear()
            self.pending -= len(stranded)
        return claimed(stranded)

    def shut_down(self) -> None:
        """Wait for the commit in progress, and stop the committer and the checkpointer."""
        self._committer.shutdown(wait=True)
        checkpointer, self._writer.checkpointer = self._writer.checkpointer, None
        if checkpointer is not None:
            checkpointer.stop()

    # --- on the loop -------------------------------------------------------------------------------

    def _flush(self) -> None:
        """Every queued request (up to a cap) as one transaction; its COMMIT goes to the
        committer thread, and when it is done the next batch starts (see _committed)."""
        batch: list[PendingWrite] = []
        through = 0  # the batch's last follow-up ticket, cancelled requests' included
        while not batch:
            with self._lock:
                self._flush_scheduled = False
                if self._committing:
                    return
                taken = [self._queue.popleft() for _ in range(min(len(self._queue), GROUP_COMMIT_MAX_BATCH))]
                self.pending -= len(taken)
            through = max([through, *(request.ticket for request in taken)])
            if not taken:
                self._when_idle(through)
                return
            batch = claimed(taken)  # all cancelled: take the next ones
        self._committing = True
        self._begin(batch, through)

    def _when_idle(self, through: int) -> None:
        """No request waits: the follow-ups' steps left go on, or a waiting detach() is told."""
        if self._due:
            self._due_through = max(self._due_through, through)
            self._step()
            return
        self._tickets.settle(through)
        if self._idle is not None and not self._idle.done():
            self._idle.set_result(None)

    def _begin(self, batch: list[PendingWrite], through: int) -> None:
        """Run the batch's statements here and hand its COMMIT to the committer."""
        work: Callable[[], list[Outcome]]
        try:
            self._writer.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                self._committed(batch, error, through)
                return
            # Another process holds the write lock: wait for it on the committer thread, not here.
            work = functools.partial(self._writer.begin_run_commit, batch)
        else:
            try:
                outcomes = self._writer.run_requests(batch)
            except BaseException as error:
                self._committed(batch, error, through)
                return
            work = functools.partial(self._writer.commit, outcomes)
        assert self.loop is not None
        loop = self.loop
        try:
            committing = self._committer.submit(work)
        except RuntimeError as error:  # close() shut the committer down meanwhile (not detached first)
            self._writer.rollback()
            self._committed(batch, error, through)
            return
        committing.add_done_callback(lambda done: loop.call_soon_threadsafe(self._committed, batch, done, through))

    def _committed(self, batch: list[PendingWrite], done: Future[list[Outcome]] | BaseException, through: int) -> None:
        """The batch's callers learn their outcomes; a step of the follow-ups due runs, then the
        next batch starts."""
        self._committing = False
        error = done if isinstance(done, BaseException) else done.exception()
        if error is not None:
            self._writer.fail(batch, error)
        else:
            outcomes: list[Outcome] = done.result()  # type: ignore[union-attr]  # no error: done is the future
            self._writer.settle(outcomes)
            for request, (_, ok, _) in zip(batch, outcomes, strict=True):
                if ok and request.follow_up is not None:
                    self._due[request.follow_up] = None
        if not self._due:
            self._tickets.settle(through)
            self._flush()
            return
        self._due_through = max(self._due_through, through)
        self._step()

    def _step(self) -> None:
        """Run steps of the follow-ups due on the committer thread, a transaction each, until
        they are done or a batch is waiting (see _stepped)."""
        assert self.loop is not None
        loop = self.loop
        try:
            running = self._committer.submit(self._begin_run_steps_commit, list(self._due))
        except RuntimeError:  # close() shut the committer down meanwhile: they never run
            self._due.clear()
            self._tickets.settle(self._due_through)
            return
        self._committing = True
        running.add_done_callback(lambda done: loop.call_soon_threadsafe(self._stepped, done))

    def _stepped(self, done: Future[list[FollowUp]]) -> None:
        """Steps have committed (or one failed: it is logged, and the follow-ups are dropped, so
        nobody waits for them). A waiting batch goes first, then more steps."""
        self._committing = False
        error = done.exception()
        if error is not None:
            log.error("the follow-up of committed writes failed: %s", error)
        # Only the steps change what is due: no batch commits while they run.
        self._due = dict.fromkeys([] if error is not None else done.result())
        if not self._due:
            self._tickets.settle(self._due_through)
        self._flush()

    # --- on the committer thread ---------------------------------------------------------------------

    def _begin_run_steps_commit(self, due: list[FollowUp]) -> list[FollowUp]:
        """A step of each follow-up ``due`` per transaction, as long as one has more to do and
        no batch waits: the loop, busy with what the last batch set off, need not be asked for
        each step. Those with more to do."""
        writer = self._writer
        while True:
            writer.begin_immediate()
            try:
                due = [follow_up for follow_up in due if follow_up(writer.conn)]
            except BaseException:
                writer.rollback()
                raise
            writer.commit([])
            if not due or self._queue or self._closed:
                return due
