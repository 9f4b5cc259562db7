"""Write transactions of the SQLite store: group commit (the hub) and inline (the CLI).

Beyond the contract suite (which runs over both modes): concurrency, batches in which one
request fails, close() with requests in flight, and durability before acknowledgement. To
make a batch deterministic, a test holds the writer thread inside a first request until the
others are queued behind it: the writer then takes them all as the next batch.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path

import pytest

from switchboard.errors import StoreUnavailable, UnknownRecipient
from switchboard.store import sqlite_connection
from switchboard.store.base import DuplicateIdempotencyKey
from switchboard.store.sqlite import SQLiteStore
from switchboard.store.sqlite_connection import SQLiteDatabase
from tests.store.test_store_contract import T0, WS, agents, at, ids, send
from tests.waiting import wait_until

DEADLINE = 60.0
MODES = {"inline": False, "group-commit": True}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "switchboard.db"


@pytest.fixture
def opened(path: Path) -> Iterator[Callable[..., SQLiteStore]]:
    """Open SQLiteStores on one database file; all are closed at the end."""
    stores: list[SQLiteStore] = []

    def open_store(group_commit: bool = True) -> SQLiteStore:
        stores.append(SQLiteStore(path, group_commit=group_commit))
        return stores[-1]

    yield open_store
    for store in reversed(stores):
        store.close()


@pytest.fixture
def group(opened) -> SQLiteStore:
    return opened(group_commit=True)


@pytest.fixture(params=list(MODES))
def either(request: pytest.FixtureRequest, opened) -> SQLiteStore:
    """A store in each mode: for what both modes must do alike."""
    return opened(group_commit=MODES[request.param])


def db(store: SQLiteStore) -> SQLiteDatabase:
    return store._db


@contextmanager
def writer_held(store: SQLiteStore) -> Iterator[Future]:
    """Keep the writer thread busy inside one request until the block ends (or a test fails)."""
    entered, release = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        entered.set()
        assert release.wait(DEADLINE), "the test never released the writer"

    held = db(store).submit(hold)
    try:
        assert entered.wait(DEADLINE)
        yield held
    finally:
        release.set()


def run_threads(count: int, target: Callable[[int], object]) -> tuple[list[object], list[threading.Thread]]:
    """Start ``count`` threads that call ``target(i)`` together (after a barrier); each result
    (or the exception raised) lands in ``outcomes[i]``. Join with ``join_all``."""
    outcomes: list[object] = [None] * count
    start = threading.Barrier(count)

    def run(index: int) -> None:
        try:
            start.wait(DEADLINE)
            outcomes[index] = target(index)
        except BaseException as error:  # reported on the test's thread
            outcomes[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    return outcomes, threads


def join_all(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(DEADLINE)
    assert not any(t.is_alive() for t in threads), "a thread never finished"


# --- many writers at once -----------------------------------------------------------------------


def test_many_threads_sending_at_once_number_every_mailbox_1_to_n_without_gaps(either):
    threads, sends, boxes = 32, 25, 4
    agents(either, WS, "all", *(f"box-{b}" for b in range(boxes)), *(f"sender-{t}" for t in range(threads)))

    def sender(index: int) -> list:
        sent = []
        for i in range(sends):
            sent.append(send(either, WS, f"sender-{index}", ["all", f"box-{index % boxes}"], text=f"{index}/{i}"))
            either.unread_count(WS, "all")  # and read meanwhile, on this thread's own connection
        return sent

    outcomes, running = run_threads(threads, sender)
    join_all(running)
    assert not [o for o in outcomes if isinstance(o, BaseException)]
    sent = [s for outcome in outcomes for s in outcome]  # type: ignore[union-attr]

    for box in ["all", *(f"box-{b}" for b in range(boxes))]:
        given = sorted(s.seqs[box] for s in sent if box in s.seqs)
        assert given == list(range(1, len(given) + 1)), f"{box}: numbers skipped or given twice"
        stored = either.peek(WS, box, 0, 10_000)
        assert [i.seq for i in stored] == given
        assert sorted(ids(stored)) == sorted(s.id for s in sent if box in s.seqs)
    assert len(given) == threads * sends // boxes


# --- a batch in which one request fails -------------------------------------------------------------


def test_a_failing_request_fails_alone_and_the_rest_of_its_batch_commits(group):
    agents(group, WS, "alice", "bob", "carol")
    first = send(group, WS, "alice", ["bob"], key="taken")
    commits = db(group).commits
    requests: list[Callable[[], object]] = [
        lambda: send(group, WS, "alice", ["bob"], text="ok 1"),
        lambda: send(group, WS, "alice", ["bob"], key="taken"),  # the key is stored already
        lambda: send(group, WS, "carol", ["bob"], text="ok 2"),
        lambda: send(group, WS, "alice", ["bob", "ghost"]),  # bumps bob's counter, then fails
        lambda: send(group, WS, "carol", ["bob"], text="ok 3"),
    ]

    with writer_held(group):
        outcomes, running = run_threads(len(requests), lambda i: requests[i]())
        wait_until(lambda: db(group).pending == len(requests), what="every request queued behind the held writer")
    join_all(running)

    assert db(group).commits == commits + 2  # the held request, then every other one as one batch
    assert isinstance(outcomes[1], DuplicateIdempotencyKey)
    assert isinstance(outcomes[3], UnknownRecipient)
    succeeded = [outcomes[i] for i in (0, 2, 4)]
    assert not [o for o in succeeded if isinstance(o, BaseException)]
    # the failed requests' writes were undone inside the shared transaction: no seq was lost
    assert sorted(s.seqs["bob"] for s in succeeded) == [2, 3, 4]  # type: ignore[union-attr]
    assert ids(group.peek(WS, "bob", 0, 100)) == [first.id] + [
        s.id  # type: ignore[union-attr]
        for s in sorted(succeeded, key=lambda s: s.seqs["bob"])  # type: ignore[union-attr]
    ]
    assert group.last_seq(WS, "bob") == 4
    assert group.get_agent(WS, "ghost") is None


def test_an_error_raised_by_the_body_reaches_the_caller_and_none_of_its_writes_are_kept(either):
    class Refused(Exception):
        pass

    def body(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO workspaces (name, created_at) VALUES ('half-made', 0)")
        raise Refused("changed my mind")

    with pytest.raises(Refused, match="changed my mind"):
        db(either).transact(body)
    assert db(either).submit(body).exception(DEADLINE).__class__ is Refused
    assert either.list_workspaces() == []
    assert db(either).transact(lambda conn: "still writing") == "still writing"


def test_a_request_cancelled_before_its_turn_never_runs(group):
    ran = threading.Event()
    with writer_held(group):
        later = db(group).submit(lambda conn: ran.set())
        assert later.cancel()
    db(group).transact(lambda conn: None)  # the writer has gone past the cancelled request
    assert not ran.is_set()


def test_a_body_that_starts_another_transaction_gets_an_error_instead_of_waiting_forever(either):
    with pytest.raises(RuntimeError):
        db(either).transact(lambda conn: db(either).transact(lambda inner: None))
    assert db(either).transact(lambda conn: 1) == 1


def test_when_the_write_lock_cannot_be_had_every_request_fails_as_unavailable_and_writing_resumes(
    either, path, monkeypatch
):
    monkeypatch.setattr(sqlite_connection, "BUSY_TIMEOUT_SECONDS", 0.2)
    other = sqlite3.connect(path, isolation_level=None)  # another process, holding the write lock
    try:
        other.execute("BEGIN IMMEDIATE")
        futures = [db(either).submit(lambda conn: conn.execute("SELECT 1")) for _ in range(3)]
        for future in futures:
            assert isinstance(future.exception(DEADLINE), StoreUnavailable)
        with pytest.raises(StoreUnavailable):
            either.ensure_workspace(WS, T0)
        other.execute("ROLLBACK")
    finally:
        other.close()
    assert either.ensure_workspace(WS, T0) is True


# --- durability and visibility ----------------------------------------------------------------------


def test_a_write_is_visible_to_another_connection_as_soon_as_it_returns(group, opened):
    agents(group, WS, "alice", "bob")
    elsewhere = opened(group_commit=False)  # its own connections, as another process would have

    def sender(index: int) -> None:
        for i in range(20):
            sent = send(group, WS, "alice", ["bob"], text=f"{index}/{i}")
            assert elsewhere.get_message(WS, sent.id) == sent.message  # no waiting: committed already
            assert elsewhere.last_seq(WS, "bob") >= sent.seqs["bob"]

    outcomes, running = run_threads(8, sender)
    join_all(running)
    assert outcomes == [None] * 8


def test_an_inline_submit_has_run_when_it_returns(opened):
    future = db(opened(group_commit=False)).submit(lambda conn: conn.execute("SELECT 41 + 1").fetchone()[0])
    assert future.done() and future.result() == 42


# --- close -----------------------------------------------------------------------------------------


def test_close_finishes_every_request_already_submitted_before_it_returns(group, opened, path):
    agents(group, WS, "alice", "bob")
    count = 20
    with writer_held(group):
        outcomes, running = run_threads(count, lambda i: send(group, WS, "alice", ["bob"], text=f"m{i}"))
        wait_until(lambda: db(group).pending == count, what="every send queued behind the held writer")
        closer = threading.Thread(target=group.close)
        closer.start()
        wait_until(lambda: db(group).closed, what="close() to begin")
        late = db(group).submit(lambda conn: None)  # after close: refused, not queued
        assert isinstance(late.exception(DEADLINE), StoreUnavailable)
    closer.join(DEADLINE)
    assert not closer.is_alive()
    join_all(running)  # already done: close() returned after the last of them

    assert not [o for o in outcomes if isinstance(o, BaseException)]
    assert sorted(o.seqs["bob"] for o in outcomes) == list(range(1, count + 1))  # type: ignore[union-attr]
    reopened = opened(group_commit=False)
    assert sorted(ids(reopened.peek(WS, "bob", 0, 100))) == sorted(o.id for o in outcomes)  # type: ignore[union-attr]


def test_after_close_writes_and_reads_raise_store_unavailable(either):
    agents(either, WS, "alice", "bob")
    either.close()
    either.close()  # again: nothing to do
    with pytest.raises(StoreUnavailable):
        either.ensure_agent(WS, "carol", at(1))
    with pytest.raises(StoreUnavailable):
        send(either, WS, "alice", ["bob"])
    with pytest.raises(StoreUnavailable):
        either.peek(WS, "bob", None, 10)
    with pytest.raises(StoreUnavailable):
        db(either).transact(lambda conn: None)
    assert isinstance(db(either).submit(lambda conn: None).exception(DEADLINE), StoreUnavailable)


def test_close_closes_the_read_connections_of_every_thread(either, path):
    agents(either, WS, "alice", "bob")
    outcomes, running = run_threads(8, lambda i: either.unread_count(WS, "bob"))
    join_all(running)
    assert outcomes == [0] * 8
    either.close()
    # with every connection closed, nothing holds the database open: the WAL is folded back in
    # and removed by the last connection to close
    assert not path.with_name(path.name + "-wal").exists()


def test_the_read_connections_of_threads_that_ended_are_closed_when_another_thread_opens_one(either):
    agents(either, WS, "bob")  # this thread's own read connection
    all_read = threading.Barrier(4)  # none ends before all have opened theirs

    def read_then_wait(index: int) -> None:
        either.unread_count(WS, "bob")
        all_read.wait(DEADLINE)

    outcomes, running = run_threads(4, read_then_wait)
    join_all(running)
    assert outcomes == [None] * 4
    assert len(db(either)._readers) == 5
    outcomes, running = run_threads(1, lambda i: either.unread_count(WS, "bob"))
    join_all(running)
    assert outcomes == [0]
    assert len(db(either)._readers) == 2  # this thread's and the newest thread's
