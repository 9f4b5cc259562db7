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

from callboard.errors import StoreUnavailable
from callboard.store.records import DuplicateIdempotencyKey, RecipientsGone
from callboard.store.sqlite import writer as sqlite_writer
from callboard.store.sqlite.connection import SQLiteDatabase
from callboard.store.sqlite.store import SQLiteStore
from tests.support.mailbox_numbering import many_threads_send_at_once_and_every_mailbox_is_numbered_1_to_n
from tests.support.store_data import T0, WS, agents, at, ids, outgoing, send
from tests.support.threads import join_all, run_threads
from tests.support.waiting import wait_until

DEADLINE = 60.0
MODES = {"inline": False, "group-commit": True}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "callboard.db"


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


# --- many writers at once -----------------------------------------------------------------------


def test_many_threads_sending_at_once_number_every_mailbox_1_to_n_without_gaps(either):
    many_threads_send_at_once_and_every_mailbox_is_numbered_1_to_n(either)


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
    assert isinstance(outcomes[3], RecipientsGone)
    succeeded = [outcomes[i] for i in (0, 2, 4)]
    assert not [o for o in succeeded if isinstance(o, BaseException)]
    # the failed requests' writes were undone inside the shared transaction: no seq was lost
    assert sorted(s.seqs["bob"] for s in succeeded) == [2, 3, 4]  # type: ignore[union-attr]
    assert ids(group.mailbox.peek(WS, "bob", 0, 100)) == [first.id] + [
        s.id  # type: ignore[union-attr]
        for s in sorted(succeeded, key=lambda s: s.seqs["bob"])  # type: ignore[union-attr]
    ]
    assert group.mailbox.last_seq(WS, "bob") == 4
    assert group.directory.get_agent(WS, "ghost") is None


def test_an_error_raised_by_the_body_reaches_the_caller_and_none_of_its_writes_are_kept(either):
    class Refused(Exception):
        pass

    def body(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO workspaces (name, created_at) VALUES ('half-made', 0)")
        raise Refused("changed my mind")

    with pytest.raises(Refused, match="changed my mind"):
        db(either).transact(body)
    assert db(either).submit(body).exception(DEADLINE).__class__ is Refused
    assert either.directory.list_workspaces() == []
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
    monkeypatch.setattr(sqlite_writer, "BUSY_TIMEOUT_SECONDS", 0.2)
    other = sqlite3.connect(path, isolation_level=None)  # another process, holding the write lock
    try:
        other.execute("BEGIN IMMEDIATE")
        futures = [db(either).submit(lambda conn: conn.execute("SELECT 1")) for _ in range(3)]
        for future in futures:
            assert isinstance(future.exception(DEADLINE), StoreUnavailable)
        with pytest.raises(StoreUnavailable):
            either.directory.ensure_workspace(WS, T0)
        other.execute("ROLLBACK")
    finally:
        other.close()
    assert either.directory.ensure_workspace(WS, T0) is True


# --- durability and visibility ----------------------------------------------------------------------


def test_a_write_is_visible_to_another_connection_as_soon_as_it_returns(group, opened):
    agents(group, WS, "alice", "bob")
    elsewhere = opened(group_commit=False)  # its own connections, as another process would have

    def sender(index: int) -> None:
        for i in range(20):
            sent = send(group, WS, "alice", ["bob"], text=f"{index}/{i}")
            assert elsewhere.sent.get_message(WS, sent.id) == sent.message  # no waiting: committed already
            assert elsewhere.mailbox.last_seq(WS, "bob") >= sent.seqs["bob"]

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
    assert sorted(ids(reopened.mailbox.peek(WS, "bob", 0, 100))) == sorted(o.id for o in outcomes)  # type: ignore[union-attr]


def test_after_close_writes_and_reads_raise_store_unavailable(either):
    agents(either, WS, "alice", "bob")
    either.close()
    either.close()  # again: nothing to do
    with pytest.raises(StoreUnavailable):
        either.directory.ensure_agent(WS, "carol", at(1))
    with pytest.raises(StoreUnavailable):
        send(either, WS, "alice", ["bob"])
    with pytest.raises(StoreUnavailable):
        either.mailbox.peek(WS, "bob", None, 10)
    with pytest.raises(StoreUnavailable):
        db(either).transact(lambda conn: None)
    assert isinstance(db(either).submit(lambda conn: None).exception(DEADLINE), StoreUnavailable)


def test_close_closes_the_read_connections_of_every_thread(either, path):
    agents(either, WS, "alice", "bob")
    outcomes, running = run_threads(8, lambda i: either.mailbox.unread_count(WS, "bob"))
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
        either.mailbox.unread_count(WS, "bob")
        all_read.wait(DEADLINE)

    outcomes, running = run_threads(4, read_then_wait)
    join_all(running)
    assert outcomes == [None] * 4
    assert len(db(either)._readers) == 5
    outcomes, running = run_threads(1, lambda i: either.mailbox.unread_count(WS, "bob"))
    join_all(running)
    assert outcomes == [0]
    assert len(db(either)._readers) == 2  # this thread's and the newest thread's


# --- alike requests run together: message sends of one batch --------------------------------------
#
# Consecutive sends of one batch are stored by one call of insert_messages (a few multi-row
# statements for the lot). These tests submit from the test thread itself, so the order of the
# queue is the order of the code, and check what each caller is answered and what is stored.


def test_sends_queued_behind_the_writer_commit_as_one_batch_numbered_in_submission_order(group, insert_calls):
    agents(group, WS, "alice", "bob", "carol")
    count = 12
    # Every third also goes to carol: two recipients taking different counts in one batch.
    sends = [outgoing("alice", ["bob", "carol"] if i % 3 == 0 else ["bob"], text=f"m{i}") for i in range(count)]
    commits = db(group).commits

    with writer_held(group):
        futures = [s.submit(group) for s in sends]
        assert db(group).pending == count
        assert not any(f.done() for f in futures)  # nobody is answered before the commit

    answers = [f.result(DEADLINE) for f in futures]
    carol_seqs = iter(range(1, count + 1))
    assert answers == [
        {"bob": i + 1, "carol": next(carol_seqs)} if i % 3 == 0 else {"bob": i + 1} for i in range(count)
    ]
    assert insert_calls == [count]  # stored together, in one call
    assert db(group).commits == commits + 2  # the held request, then the whole batch: 2 for 13 requests

    stored = group.mailbox.peek(WS, "bob", 0, 100)
    assert [(item.seq, item.message) for item in stored] == [(i + 1, s.message) for i, s in enumerate(sends)]
    assert [(item.seq, item.message.id) for item in group.mailbox.peek(WS, "carol", 0, 100)] == [
        (n + 1, s.id) for n, s in enumerate(sends[::3])
    ]
    assert group.mailbox.last_seq(WS, "bob") == count and group.mailbox.last_seq(WS, "carol") == len(sends[::3])
    assert [group.sent.send_result(WS, s.id) for s in sends] == [s.result for s in sends]


def test_a_send_of_a_batch_reusing_a_stored_idempotency_key_fails_alone_and_the_others_commit(group, insert_calls):
    agents(group, WS, "alice", "bob", "carol")
    first = send(group, WS, "alice", ["bob"], key="taken")  # bob's seq 1
    sends = [
        outgoing("alice", ["bob"], text="before"),
        outgoing("alice", ["bob", "carol"], key="taken", text="repeat"),  # bumps both counters, then fails
        outgoing("carol", ["bob"], key="taken", text="same key, another sender"),  # not a repeat
        outgoing("alice", ["bob"], key="fresh", text="after"),
    ]
    commits = db(group).commits
    calls_before = len(insert_calls)

    with writer_held(group):
        futures = [s.submit(group) for s in sends]
        assert db(group).pending == len(sends)

    assert isinstance(futures[1].exception(DEADLINE), DuplicateIdempotencyKey)
    assert [futures[i].result(DEADLINE) for i in (0, 2, 3)] == [{"bob": 2}, {"bob": 3}, {"bob": 4}]
    # The lot failed as one call; then each ran alone, so that only the repeat failed.
    assert insert_calls[calls_before:] == [len(sends), 1, 1, 1, 1]
    assert db(group).commits == commits + 2

    assert [(i.seq, i.message.id) for i in group.mailbox.peek(WS, "bob", 0, 100)] == [
        (1, first.id),
        (2, sends[0].id),
        (3, sends[2].id),
        (4, sends[3].id),
    ]
    assert group.sent.get_message(WS, sends[1].id) is None
    assert group.sent.delivery_statuses(WS, sends[1].id) == []
    assert group.mailbox.peek(WS, "carol", 0, 100) == [] and group.mailbox.last_seq(WS, "carol") == 0
    assert group.mailbox.last_seq(WS, "bob") == 4
    stored = group.sent.find_idempotent(WS, "alice", "taken")
    assert stored is not None and stored.result == first.result  # the first send still owns the key


def test_a_send_of_a_batch_to_a_recipient_deleted_since_it_was_prepared_fails_alone(group, insert_calls):
    agents(group, WS, "alice", "bob", "carol")
    before = outgoing("alice", ["bob"], text="before")
    doomed = outgoing("alice", ["bob", "carol"], text="to carol too")  # carol exists: not to be created
    after = [outgoing("alice", ["bob"], text=f"after {i}") for i in range(2)]
    commits = db(group).commits
    calls_before = len(insert_calls)

    with writer_held(group):
        futures = [before.submit(group)]
        # The delete is queued after the first send and before the rest (it runs on a thread of its own:
        # delete_agent waits for its commit).
        deleted, deleting = run_threads(1, lambda i: group.directory.delete_agent(WS, "carol"))
        wait_until(lambda: db(group).pending == 2, what="the delete queued behind the first send")
        futures += [s.submit(group) for s in (doomed, *after)]
        assert db(group).pending == 2 + 1 + len(after)
    join_all(deleting)

    assert deleted == [0]  # deleted: carol held no unread mail
    error = futures[1].exception(DEADLINE)
    assert isinstance(error, RecipientsGone)
    assert error.names == ["carol"]
    assert [futures[i].result(DEADLINE) for i in (0, 2, 3)] == [{"bob": 1}, {"bob": 2}, {"bob": 3}]
    # The first send ran on its own (the delete cut the run); the three after the delete failed as
    # one call, then ran one by one.
    assert insert_calls[calls_before:] == [1, 3, 1, 1, 1]
    assert db(group).commits == commits + 2  # the delete committed in the same batch

    assert ids(group.mailbox.peek(WS, "bob", 0, 100)) == [before.id, after[0].id, after[1].id]
    assert group.mailbox.last_seq(WS, "bob") == 3
    assert group.sent.get_message(WS, doomed.id) is None
    assert group.directory.get_agent(WS, "carol") is None  # not created again by the failed send


def test_a_message_to_2500_recipients_numbers_each_delivery_after_that_recipients_last_one(either):
    # More recipients than one multi-row INSERT holds (1,000 rows) and than one IN list (500 names);
    # their mailboxes hold different numbers of messages already, so a seq given to the wrong name shows.
    names = [f"r{i:04d}" for i in range(2500)]
    existing, new = names[:2400], names[2400:]
    agents(either, WS, "alice")
    send(either, WS, "alice", existing, create=set(existing), text="hello all")  # creates them: seq 1 each
    send(either, WS, "alice", existing[::3], text="every third")
    send(either, WS, "alice", existing[::5], text="every fifth")
    expected = {name: 2 + (i % 3 == 0) + (i % 5 == 0) for i, name in enumerate(existing)}
    expected.update(dict.fromkeys(new, 1))  # created by the big message itself

    big = send(either, WS, "alice", names, create=set(new), text="to everyone")

    assert big.seqs == expected
    assert len(set(big.seqs.values())) == 4  # 1, 2, 3 and 4 all occur
    for name in names:
        items = either.mailbox.peek(WS, name, expected[name] - 1, 10)
        assert [(i.seq, i.message.id) for i in items] == [(expected[name], big.id)], name
        assert either.mailbox.last_seq(WS, name) == expected[name], name
    assert len(either.sent.delivery_statuses(WS, big.id)) == len(names)
    assert {a.name for a in either.directory.list_agents(WS)} == {"alice", *names}


# --- alike requests run together: SQLiteDatabase itself ------------------------------------------------


@pytest.fixture
def notes(group: SQLiteStore) -> SQLiteDatabase:
    """The group-commit database of ``group`` with a scratch table, ``notes(item)``."""
    database = db(group)
    database.transact(lambda conn: conn.execute("CREATE TABLE notes (item TEXT NOT NULL)"))
    return database


def noted(database: SQLiteDatabase) -> list[str]:
    with database.read() as conn:
        return sorted(row[0] for row in conn.execute("SELECT item FROM notes"))


def note_alone(item: str, *, fail: bool = False) -> Callable[[sqlite3.Connection], str]:
    """A request's own body: notes ``alone <item>`` (and then raises, when ``fail``)."""

    def body(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO notes VALUES (?)", (f"alone {item}",))
        if fail:
            raise Refused(item)
        return f"alone {item}"

    return body


class Refused(Exception):
    pass


def test_when_running_alike_requests_together_fails_each_runs_alone_and_only_the_one_at_fault_fails(group, notes):
    calls: list[list[str]] = []

    def together(conn: sqlite3.Connection, items: list[str]) -> list[str]:
        calls.append(list(items))
        conn.executemany("INSERT INTO notes VALUES (?)", [(f"together {i}",) for i in items])
        raise Refused("not all at once")

    commits = notes.commits
    with writer_held(group):
        futures = [
            notes.submit(note_alone(item, fail=item == "bad"), together=together, item=item)
            for item in ("a", "bad", "c")
        ]

    assert futures[0].result(DEADLINE) == "alone a"
    error = futures[1].exception(DEADLINE)
    assert isinstance(error, Refused) and str(error) == "bad"
    assert futures[2].result(DEADLINE) == "alone c"
    assert calls == [["a", "bad", "c"]]  # tried once together, never again
    # Nothing of the failed call together, nor of the request at fault, was kept.
    assert noted(notes) == ["alone a", "alone c"]
    assert notes.commits == commits + 2


@pytest.mark.parametrize("wrong", [-1, +1], ids=["one-value-short", "one-value-too-many"])
def test_a_together_answering_the_wrong_number_of_values_counts_as_failed_and_each_request_runs_alone(
    group, notes, wrong
):
    def together(conn: sqlite3.Connection, items: list[str]) -> list[str]:
        conn.executemany("INSERT INTO notes VALUES (?)", [(f"together {i}",) for i in items])
        return [f"together {i}" for i in items] + ["extra"] if wrong > 0 else [f"together {i}" for i in items[:-1]]

    with writer_held(group):
        futures = [notes.submit(note_alone(item), together=together, item=item) for item in ("a", "b", "c")]

    assert [f.result(DEADLINE) for f in futures] == ["alone a", "alone b", "alone c"]
    assert noted(notes) == ["alone a", "alone b", "alone c"]  # the call's own writes were undone


def test_only_neighbours_with_the_same_together_run_as_one_call(group, notes):
    calls: list[tuple[str, list[str]]] = []

    def together_as(name: str) -> Callable[[sqlite3.Connection, list[str]], list[str]]:
        def together(conn: sqlite3.Connection, items: list[str]) -> list[str]:
            calls.append((name, list(items)))
            conn.executemany("INSERT INTO notes VALUES (?)", [(f"together {i}",) for i in items])
            return [f"together {i}" for i in items]

        return together

    first, second = together_as("first"), together_as("second")
    queue = [
        ("a1", first),
        ("a2", first),
        ("plain", None),
        ("a3", first),
        ("b1", second),
        ("b2", second),
        ("a4", first),
    ]
    with writer_held(group):
        futures = [notes.submit(note_alone(item), together=kind, item=item) for item, kind in queue]

    assert [f.result(DEADLINE) for f in futures] == [
        "together a1",
        "together a2",
        "alone plain",
        "alone a3",  # a run of one runs alone
        "together b1",
        "together b2",
        "alone a4",
    ]
    assert calls == [("first", ["a1", "a2"]), ("second", ["b1", "b2"])]
    assert noted(notes) == sorted(f.result() for f in futures)
