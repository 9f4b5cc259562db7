"""Group commit driven by an event loop: the hub's way of writing (``SQLiteDatabase.attach``).

Beyond the contract suite (whose ``sqlite-loop-commit`` store runs every contract test through
a loop like this): batches shared by many writers, when a caller is answered, a request failing
inside a batch, a database locked by another process, writing on the loop's own thread,
detach and close with writes queued, and cancelling. The loop runs on a thread of its own (as
uvicorn's runs beside its worker threads); the test's thread hands it work. To make a batch
deterministic, a test submits every request of it in one turn of the loop, or holds the loop
inside a callback until the requests are queued: the loop then takes them all as one batch.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

from callboard.errors import StoreUnavailable
from callboard.pending import Pending, PendingTimeout
from callboard.store.records import DuplicateIdempotencyKey, RecipientsGone
from callboard.store.sqlite.store import SQLiteStore
from callboard.store.sqlite.writer import BUSY_TIMEOUT_SECONDS, GROUP_COMMIT_MAX_BATCH
from tests.store.conftest import StoreFactory, db, on_loop
from tests.support.loop_thread import loop_held
from tests.support.mailbox_numbering import many_threads_send_at_once_and_every_mailbox_is_numbered_1_to_n
from tests.support.store_data import OTHER_WS, T0, WS, agents, ids, outgoing, send
from tests.support.threads import join_all, run_threads
from tests.support.waiting import DEADLINE, STILL_PENDING, wait_until

T = TypeVar("T")

# The loop must answer well within the time a write waits for the lock: a loop that waited for
# the lock itself would only answer once that wait gave up.
LOOP_ANSWERS_WITHIN = BUSY_TIMEOUT_SECONDS / 3


@contextmanager
def write_lock_held_elsewhere(path: Path) -> Iterator[sqlite3.Connection]:
    """Another process's connection holding the database's write lock until the block ends;
    what it wrote meanwhile commits then."""
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield other
        other.execute("COMMIT")
    finally:
        other.close()


class Refused(Exception):
    pass


# --- the contract suite's loop store ------------------------------------------------------------------


def test_the_contract_suites_loop_store_runs_each_write_on_its_event_loop_and_so_does_a_reopened_one(tmp_path):
    # Guards the contract suite: were its "sqlite-loop-commit" stores inline, every contract test
    # would still pass, and loop mode would go untested.
    factory = StoreFactory("sqlite-loop-commit", tmp_path)
    try:
        store, again = factory.open(), factory.open()
        loop = factory._loop
        assert loop is not None
        for opened_store in (store, again):
            # Handed to the loop, not run inline: its body runs on the loop (or, when the file
            # happened to be busy, on the committer thread).
            assert db(opened_store).transact(lambda conn: threading.current_thread()) is not threading.current_thread()
            assert on_loop(loop, lambda s=opened_store: db(s).submit(lambda conn: 42).done()) is False
            with pytest.raises(RuntimeError):  # only the loop that commits may not wait for a commit
                on_loop(loop, lambda s=opened_store: db(s).transact(lambda conn: None))
    finally:
        factory.close_all()
    assert not loop.thread.is_alive()


# --- many writers at once ----------------------------------------------------------------------------


def test_many_threads_sending_at_once_number_every_mailbox_1_to_n_without_gaps_and_share_commits(attached):
    commits = db(attached).commits
    sends = many_threads_send_at_once_and_every_mailbox_is_numbered_1_to_n(attached)
    # Sends that arrived while a commit was on disk shared the next one.
    assert db(attached).commits - commits < sends


def test_a_write_from_another_thread_is_visible_to_another_connection_as_soon_as_it_returns(attached, elsewhere):
    agents(attached, WS, "alice", "bob")

    def sender(index: int) -> None:
        for i in range(20):
            sent = send(attached, WS, "alice", ["bob"], text=f"{index}/{i}")
            assert elsewhere.sent.get_message(WS, sent.id) == sent.message  # no waiting: committed already
            assert elsewhere.mailbox.last_seq(WS, "bob") >= sent.seqs["bob"]

    outcomes, running = run_threads(8, sender)
    join_all(running)
    assert outcomes == [None] * 8


# --- a batch of one loop turn ---------------------------------------------------------------------


def test_sends_submitted_in_one_loop_turn_commit_as_one_batch_and_each_is_answered_only_once_committed(
    attached, elsewhere, loop_thread, insert_calls
):
    agents(attached, WS, "alice", "bob")
    count = 10
    sends = [outgoing("alice", ["bob"], text=f"m{i}") for i in range(count)]
    seen_when_answered: dict[str, object] = {}

    def look_elsewhere(message_id: str) -> Callable[[Pending], None]:
        # Runs the moment the caller's future is done: what another process sees then.
        def seen(done: Pending) -> None:
            try:
                seen_when_answered[message_id] = (
                    elsewhere.sent.get_message(WS, message_id),
                    elsewhere.mailbox.last_seq(WS, "bob"),
                )
            except BaseException as error:  # reported on the test's thread
                seen_when_answered[message_id] = error

        return seen

    def submit_all() -> tuple[int, list[Pending], list[bool]]:
        commits = db(attached).commits
        futures = [s.submit(attached) for s in sends]
        for s, future in zip(sends, futures, strict=True):
            future.add_done_callback(look_elsewhere(s.id))
        return commits, futures, [f.done() for f in futures]

    commits, futures, answered_at_once = on_loop(loop_thread, submit_all)

    assert answered_at_once == [False] * count  # queued for the loop's next turn, not run in place
    assert [f.result(DEADLINE) for f in futures] == [{"bob": i + 1} for i in range(count)]
    assert db(attached).commits == commits + 1  # one transaction, one fsync, for the ten
    assert insert_calls == [count]  # and stored by one call
    on_loop(loop_thread, lambda: None)  # the done callbacks ran in the loop turn that settled the batch
    # Each future became done only once the whole batch was on disk, visible to another process.
    assert seen_when_answered == {s.id: (s.message, count) for s in sends}
    assert [(i.seq, i.message) for i in elsewhere.mailbox.peek(WS, "bob", 0, 100)] == [
        (n + 1, s.message) for n, s in enumerate(sends)
    ]


def test_a_failing_request_of_a_loop_batch_fails_alone_and_the_rest_of_the_batch_commits(attached, loop_thread):
    agents(attached, WS, "alice", "bob", "carol")
    first = send(attached, WS, "alice", ["bob"], key="taken")  # bob's seq 1

    def half_made(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO workspaces (name, created_at) VALUES ('half-made', 0)")
        raise Refused("changed my mind")

    sends = {
        "ok 1": outgoing("alice", ["bob"], text="ok 1"),
        "repeat": outgoing("alice", ["bob", "carol"], key="taken"),  # bumps both counters, then fails
        "ok 2": outgoing("carol", ["bob"], text="ok 2"),
        "ghost": outgoing("alice", ["bob", "ghost"]),  # bob's counter, then an unknown recipient
        "ok 3": outgoing("carol", ["bob"], text="ok 3"),
    }
    last = outgoing("alice", ["bob"], text="ok 4")

    def submit_all() -> tuple[int, dict[str, Pending]]:
        commits = db(attached).commits
        futures = {name: s.submit(attached) for name, s in sends.items()}
        futures["refused"] = db(attached).submit(half_made)  # a plain request between sends
        futures["ok 4"] = last.submit(attached)
        return commits, futures

    commits, futures = on_loop(loop_thread, submit_all)

    assert isinstance(futures["repeat"].exception(DEADLINE), DuplicateIdempotencyKey)
    assert isinstance(futures["ghost"].exception(DEADLINE), RecipientsGone)
    refused = futures["refused"].exception(DEADLINE)
    assert isinstance(refused, Refused) and str(refused) == "changed my mind"
    # the failed requests' writes were undone inside the shared transaction: no seq was lost
    assert [futures[name].result(DEADLINE) for name in ("ok 1", "ok 2", "ok 3", "ok 4")] == [
        {"bob": 2},
        {"bob": 3},
        {"bob": 4},
        {"bob": 5},
    ]
    assert db(attached).commits == commits + 1
    assert ids(attached.mailbox.peek(WS, "bob", 0, 100)) == [first.id] + [
        sends[name].id for name in ("ok 1", "ok 2", "ok 3")
    ] + [last.id]
    assert attached.mailbox.last_seq(WS, "bob") == 5 and attached.mailbox.last_seq(WS, "carol") == 0
    assert attached.sent.get_message(WS, sends["repeat"].id) is None
    assert attached.directory.get_agent(WS, "ghost") is None
    assert [w.name for w in attached.directory.list_workspaces()] == [WS]  # nothing of the refused body


def test_requests_queued_while_the_loop_is_busy_commit_in_batches_of_at_most_the_cap(attached, loop_thread):
    count = GROUP_COMMIT_MAX_BATCH + 44
    attached.directory.ensure_workspace(WS, T0)
    commits = db(attached).commits
    with loop_held(loop_thread):
        futures = [
            db(attached).submit(
                lambda conn, i=i: conn.execute("INSERT INTO workspaces VALUES (?, 0)", (f"w{i}",)) and i
            )
            for i in range(count)
        ]
        assert db(attached).pending == count
        assert not any(f.done() for f in futures)
    assert [f.result(DEADLINE) for f in futures] == list(range(count))
    assert db(attached).commits == commits + 2  # the first GROUP_COMMIT_MAX_BATCH, then the rest
    assert db(attached).pending == 0
    assert len(attached.directory.list_workspaces()) == count + 1


# --- a database locked by another process ------------------------------------------------------------


def test_a_batch_that_finds_the_file_locked_waits_for_the_lock_off_the_loop_and_commits_once_it_is_released(
    attached, loop_thread, path
):
    agents(attached, WS, "alice", "bob")
    commits = db(attached).commits
    first = outgoing("alice", ["bob", "carol"], text="first")  # carol: made by the other process meanwhile
    later = [outgoing("alice", ["bob"], text=f"later {i}") for i in range(3)]

    with write_lock_held_elsewhere(path) as other:
        other.execute("INSERT INTO agents (workspace, name, created_at) VALUES (?, 'carol', 0)", (WS,))
        waiting = on_loop(loop_thread, lambda: first.submit(attached), LOOP_ANSWERS_WITHIN)
        with pytest.raises(PendingTimeout):
            waiting.exception(timeout=STILL_PENDING)  # not done while the lock is held
        assert not waiting.cancel()  # its batch has started: too late to take it back

        # The loop keeps working meanwhile: it runs callbacks, reads, and queues the next batch.
        called = threading.Event()
        loop_thread.loop.call_soon_threadsafe(called.set)
        assert called.wait(LOOP_ANSWERS_WITHIN), "the loop is blocked while a batch waits for the lock"
        queued = loop_thread.run(submit_later(attached, later), LOOP_ANSWERS_WITHIN)
        assert on_loop(loop_thread, lambda: attached.mailbox.unread_count(WS, "bob"), LOOP_ANSWERS_WITHIN) == 0
        assert not waiting.done() and not any(f.done() for f in queued)

    # The batch began after the other process's commit, and so found carol.
    assert waiting.result(DEADLINE) == {"bob": 1, "carol": 1}
    assert [f.result(DEADLINE) for f in queued] == [{"bob": 2}, {"bob": 3}, {"bob": 4}]
    assert db(attached).commits == commits + 2  # the batch that waited, then those queued meanwhile
    assert ids(attached.mailbox.peek(WS, "bob", 0, 100)) == [first.id] + [s.id for s in later]
    assert ids(attached.mailbox.peek(WS, "carol", 0, 100)) == [first.id]


async def submit_later(store: SQLiteStore, sends: list) -> list[Pending]:
    await asyncio.sleep(0)  # a coroutine that yields to the loop, as a request handler does
    return [s.submit(store) for s in sends]


def test_detach_waits_for_a_batch_still_waiting_for_the_write_lock(attached, loop_thread, path):
    attached.directory.ensure_workspace(WS, T0)
    with write_lock_held_elsewhere(path):
        waiting = on_loop(
            loop_thread,
            lambda: db(attached).submit(lambda conn: conn.execute("SELECT 1") and "done"),
            LOOP_ANSWERS_WITHIN,
        )
        detaching = asyncio.run_coroutine_threadsafe(db(attached).detach(), loop_thread.loop)
        with pytest.raises(FutureTimeout):
            detaching.result(timeout=STILL_PENDING)
        assert not waiting.done()
    detaching.result(DEADLINE)
    assert waiting.done() and waiting.result() == "done"  # done by the time detach returned
    assert db(attached).submit(lambda conn: "inline").done()  # and writing inline again


def test_a_body_that_waited_for_the_lock_off_the_loop_gets_an_error_for_transact_instead_of_a_deadlock(
    attached, loop_thread, path
):
    # A batch that found the file locked runs its bodies on the committer thread: a transact()
    # from there would wait for the loop, which waits for the committer.
    attached.directory.ensure_workspace(WS, T0)

    def nested(conn: sqlite3.Connection) -> None:
        db(attached).transact(lambda inner: None)

    with write_lock_held_elsewhere(path):
        waiting = on_loop(loop_thread, lambda: db(attached).submit(nested), LOOP_ANSWERS_WITHIN)
        neighbour = on_loop(loop_thread, lambda: db(attached).submit(lambda conn: "next"), LOOP_ANSWERS_WITHIN)
    assert isinstance(waiting.exception(DEADLINE), RuntimeError)
    assert neighbour.result(DEADLINE) == "next"  # and writing goes on
    assert db(attached).transact(lambda conn: "after") == "after"


def test_a_write_racing_detach_either_commits_on_the_loop_or_runs_inline_and_none_is_left_waiting(
    attached, loop_thread
):
    attached.directory.ensure_workspace(WS, T0)
    stop = threading.Event()
    answers: list[object] = []

    def keep_writing() -> None:  # another thread, as the hub's worker threads write
        while not stop.is_set():
            answers.append(db(attached).transact(lambda conn: conn.execute("SELECT 1").fetchone()[0]))

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        wait_until(lambda: len(answers) > 20, what="writes through the loop")
        loop_thread.run(db(attached).detach(), DEADLINE)
        count = len(answers)
        wait_until(lambda: len(answers) > count + 20, what="writes inline after detach")
    finally:
        stop.set()
        writer.join(DEADLINE)
    assert not writer.is_alive()
    assert set(answers) == {1}
    assert not db(attached).closed and db(attached).pending == 0
    assert attached.directory.create_channel(WS, "after", "alice", None, T0) in (
        True,
        False,
    )  # not stuck in a transaction


# --- the loop's own thread ----------------------------------------------------------------------------


def test_transact_on_the_loops_own_thread_raises_instead_of_waiting_for_itself_and_writes_nothing(
    attached, loop_thread
):
    ran = threading.Event()
    commits = db(attached).commits

    def write_on_loop() -> list[BaseException]:
        errors = []
        for write in (
            lambda: db(attached).transact(lambda conn: ran.set()),
            lambda: attached.directory.ensure_workspace(WS, T0),
        ):
            try:
                write()
            except BaseException as error:  # reported on the test's thread
                errors.append(error)
        return errors

    errors = on_loop(loop_thread, write_on_loop)
    assert [type(e) for e in errors] == [RuntimeError, RuntimeError]
    assert "await submit()" in str(errors[0])  # says what to do instead
    assert not ran.is_set()
    assert attached.directory.list_workspaces() == []
    assert db(attached).commits == commits and db(attached).pending == 0
    # What the loop should do instead works: submit, and be answered later.
    submitted = on_loop(loop_thread, lambda: db(attached).submit(lambda conn: ran.set()))
    submitted.result(DEADLINE)
    assert ran.is_set() and db(attached).commits == commits + 1


# --- detach and committing_on_loop --------------------------------------------------------------------


def test_detach_returns_once_every_queued_write_has_committed_and_writes_are_inline_afterwards(
    attached, elsewhere, loop_thread
):
    agents(attached, WS, "alice", "bob")
    sends = [outgoing("alice", ["bob"], text=f"m{i}") for i in range(5)]

    async def submit_then_detach() -> tuple[list[Pending], list[bool]]:
        futures = [s.submit(attached) for s in sends]
        await db(attached).detach()
        return futures, [f.done() for f in futures]

    futures, done_on_return = loop_thread.run(submit_then_detach(), DEADLINE)
    assert done_on_return == [True] * len(sends)
    assert [f.result() for f in futures] == [{"bob": i + 1} for i in range(len(sends))]
    assert ids(elsewhere.mailbox.peek(WS, "bob", 0, 100)) == [s.id for s in sends]

    commits = db(attached).commits
    assert db(attached).submit(lambda conn: "inline").done()  # has run when submit returns
    # On the loop's thread too: no longer the committing loop, so transact just runs there.
    assert on_loop(loop_thread, lambda: attached.directory.ensure_workspace(OTHER_WS, T0)) is True
    assert db(attached).commits == commits + 2  # one commit per write again
    on_loop(loop_thread, lambda: None)  # nothing was left scheduled that breaks the loop


def test_committing_on_loop_group_commits_inside_the_block_and_commits_everything_queued_on_leaving(
    opened, loop_thread
):
    store = opened(attach=False)
    agents(store, WS, "alice", "bob")
    sends = [outgoing("alice", ["bob"], text=f"m{i}") for i in range(4)]

    async def hub_lifetime() -> tuple[int, list[Pending], list[bool], BaseException | None]:
        commits = db(store).commits
        async with store.committing_on_loop():
            futures = [s.submit(store) for s in sends]
            queued = [f.done() for f in futures]
            try:
                store.directory.ensure_workspace(OTHER_WS, T0)
                refused = None
            except RuntimeError as error:  # attached: the loop may not wait for its own commit
                refused = error
        assert all(f.done() for f in futures)
        return commits, futures, queued, refused

    commits, futures, queued, refused = loop_thread.run(hub_lifetime(), DEADLINE)
    assert queued == [False] * len(sends)
    assert isinstance(refused, RuntimeError)
    assert [f.result() for f in futures] == [{"bob": i + 1} for i in range(len(sends))]
    assert db(store).commits == commits + 1
    assert (
        on_loop(loop_thread, lambda: store.directory.ensure_workspace(OTHER_WS, T0)) is True
    )  # inline after the block


# --- close while attached -------------------------------------------------------------------------------


def test_close_while_attached_fails_every_write_still_queued_as_closed_and_leaves_nobody_waiting(
    attached, loop_thread, opened
):
    agents(attached, WS, "alice", "bob")
    with loop_held(loop_thread):  # the loop never gets to the writes below before close()
        queued = db(attached).submit(lambda conn: conn.execute("INSERT INTO workspaces VALUES ('never', 0)"))
        # and a caller waiting in transact(), on a thread of its own, as a hub's worker thread would be
        outcomes, running = run_threads(1, lambda i: attached.directory.ensure_workspace(OTHER_WS, T0))
        wait_until(lambda: db(attached).pending == 2, what="both writes queued for the held loop")

        attached.close()

        error = queued.exception(DEADLINE)
        assert isinstance(error, StoreUnavailable) and "closed" in str(error)
        join_all(running)  # answered without the loop
        assert isinstance(outcomes[0], StoreUnavailable) and "closed" in str(outcomes[0])
        late = db(attached).submit(lambda conn: None)  # after close: refused, not queued
        assert isinstance(late.exception(DEADLINE), StoreUnavailable)
    assert on_loop(loop_thread, lambda: "still running") == "still running"  # the flush it had scheduled was harmless
    assert [w.name for w in opened(attach=False).directory.list_workspaces()] == [WS]  # neither write landed


# --- cancelling -------------------------------------------------------------------------------------------


def test_a_request_cancelled_before_its_batch_runs_never_runs_and_the_rest_of_the_batch_commits(attached, loop_thread):
    ran = threading.Event()
    commits = db(attached).commits
    with loop_held(loop_thread):
        cancelled = db(attached).submit(lambda conn: ran.set())
        kept = db(attached).submit(lambda conn: "kept")
        assert cancelled.cancel()
    assert kept.result(DEADLINE) == "kept"
    assert cancelled.cancelled() and not ran.is_set()
    assert db(attached).commits == commits + 1

    # Cancelled in the very turn that submitted it, on the loop: the same.
    def submit_and_cancel() -> tuple[Pending, Pending, bool]:
        gone = db(attached).submit(lambda conn: ran.set())
        stays = db(attached).submit(lambda conn: "stays")
        return gone, stays, gone.cancel()

    gone, stays, took_back = on_loop(loop_thread, submit_and_cancel)
    assert took_back and stays.result(DEADLINE) == "stays"
    assert not ran.is_set()


def test_a_batch_of_only_cancelled_requests_commits_nothing_and_does_not_hold_up_detach(attached, loop_thread):
    ran = threading.Event()
    commits = db(attached).commits
    with loop_held(loop_thread):
        futures = [db(attached).submit(lambda conn: ran.set()) for _ in range(3)]
        assert all(f.cancel() for f in futures)
    loop_thread.run(db(attached).detach(), DEADLINE)
    assert not ran.is_set()
    assert db(attached).commits == commits and db(attached).pending == 0


def test_requests_queued_behind_a_full_batch_of_cancelled_ones_still_commit(attached, loop_thread):
    with loop_held(loop_thread):
        cancelled = [db(attached).submit(lambda conn: None) for _ in range(GROUP_COMMIT_MAX_BATCH)]
        behind = db(attached).submit(lambda conn: "committed")
        assert all(f.cancel() for f in cancelled)
    try:
        behind.exception(timeout=5.0)  # bounded: it commits in milliseconds, or never
        stalled = False
    except PendingTimeout:
        stalled = True
    finally:
        # Any later write schedules a flush again: leave nothing queued for the fixture's detach.
        db(attached).submit(lambda conn: None).result(DEADLINE)
    assert behind.result(DEADLINE) == "committed"
    assert not stalled, "the request behind them only committed once another write came along"


def test_the_writer_keeps_its_statement_journals_in_memory_and_readers_keep_sqlites_default(tmp_path):
    # A group commit's multi-row INSERT journals the first image of every page it changes; past
    # 64 KiB SQLite would spill that to a temporary file on every batch.
    store = SQLiteStore(tmp_path / "c.db")
    try:
        assert db(store).transact(lambda conn: conn.execute("PRAGMA temp_store").fetchone()[0]) == 2  # MEMORY
        with db(store).read() as conn:
            assert conn.execute("PRAGMA temp_store").fetchone()[0] == 0  # DEFAULT: a reader's sort may be large
    finally:
        store.close()
