"""Large sends answered before their delivery rows are written, and follow-ups, the loop's
mechanism for it (``SQLiteDatabase.submit(follow_up=...)``, ``sqlite_messages.write_out_step``).

The contract suite already runs every test with every loop-committed send fanned out later (its
``sqlite-loop-commit`` store): readers there see what they would have seen otherwise. Here: the
order of things (answer, then the follow-up in a transaction of its own, then the next batch),
follow-ups in steps that take turns with waiting batches, a step that writes out the same part
of several sends, readers that wait for it, follow-ups that fail or belong to a failed request,
the same without a loop, and deliveries left in ``fanout_parts`` by a hub that died or is still
writing them out, or by the schema step before parts.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from pathlib import Path

import pytest

from callboard.errors import UnknownRecipient
from callboard.model import DeliveryState
from callboard.store.records import NewDelivery
from callboard.store.sqlite import messages as sqlite_messages
from callboard.store.sqlite.messages import FAN_OUT_LATER_FROM, NewMessage, insert_messages, write_out_step
from callboard.store.sqlite.schema import MIGRATIONS
from callboard.store.sqlite.store import SQLiteStore
from tests.store.conftest import db, on_loop
from tests.support.loop_thread import LoopThread, loop_held
from tests.support.store_data import T0, WS, agents, build, ids, send
from tests.support.waiting import DEADLINE, STILL_PENDING, wait_until

MEMBERS = [f"m{i:02d}" for i in range(FAN_OUT_LATER_FROM)]  # just enough to be fanned out later


def names_in(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM workspaces")}


def add_workspace(name: str):
    def insert(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO workspaces (name, created_at) VALUES (?, 0)", (name,))
        return name

    return insert


def count(db_file: Path, table: str) -> int:
    with sqlite3.connect(db_file) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


# --- follow-ups -------------------------------------------------------------------------------


def test_a_follow_up_runs_once_per_batch_after_its_callers_are_answered_and_before_the_next_batch(
    attached: SQLiteStore, loop_thread: LoopThread
):
    seen: list[tuple] = []
    answered: list[str] = []

    def follow_up(conn: sqlite3.Connection) -> None:
        # Its own transaction, off the loop, with both callers answered and nothing of the next batch.
        seen.append((conn.in_transaction, threading.get_ident(), list(answered), names_in(conn)))
        conn.execute("INSERT INTO workspaces (name, created_at) VALUES ('followed', 0)")

    def submit_both():
        first = db(attached).submit(add_workspace("a"), follow_up=follow_up)
        second = db(attached).submit(add_workspace("b"), follow_up=follow_up)
        for future in (first, second):
            future.add_done_callback(lambda done: answered.append(done.result()))
        return first, second

    first, second = on_loop(loop_thread, submit_both)
    first.result(DEADLINE), second.result(DEADLINE)
    after = db(attached).submit(names_in)  # queued behind the follow-up
    assert after.result(DEADLINE) == {"a", "b", "followed"}
    db(attached).wait_for_follow_ups()
    assert len(seen) == 1, "one batch: its follow-up runs once"
    in_transaction, thread, answered_then, names_then = seen[0]
    assert in_transaction and thread != loop_thread.thread.ident
    assert answered_then == ["a", "b"] and names_then == {"a", "b"}


def test_a_reader_waiting_for_follow_ups_returns_only_once_they_have_committed(attached: SQLiteStore):
    inside, release = threading.Event(), threading.Event()

    def slow_follow_up(conn: sqlite3.Connection) -> None:
        inside.set()
        assert release.wait(DEADLINE)
        conn.execute("INSERT INTO workspaces (name, created_at) VALUES ('followed', 0)")

    assert db(attached).submit(add_workspace("a"), follow_up=slow_follow_up).result(DEADLINE) == "a"
    assert inside.wait(DEADLINE)
    waited: list[set[str]] = []

    def reader() -> None:
        db(attached).wait_for_follow_ups()
        with db(attached).read() as conn:
            waited.append(names_in(conn))

    thread = threading.Thread(target=reader)
    thread.start()
    thread.join(STILL_PENDING)
    assert thread.is_alive() and not waited, "the reader went on before the follow-up committed"
    release.set()
    thread.join(DEADLINE)
    assert waited == [{"a", "followed"}]


def test_a_failing_follow_up_is_logged_lets_its_readers_go_and_the_next_batch_commits(
    attached: SQLiteStore, caplog: pytest.LogCaptureFixture
):
    def failing(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO workspaces (name, created_at) VALUES ('half', 0)")
        raise RuntimeError("disk gone")

    with caplog.at_level(logging.ERROR):
        assert db(attached).submit(add_workspace("a"), follow_up=failing).result(DEADLINE) == "a"
        db(attached).wait_for_follow_ups()
    assert "disk gone" in caplog.text
    assert db(attached).submit(add_workspace("b")).result(DEADLINE) == "b"
    with db(attached).read() as conn:
        assert names_in(conn) == {"a", "b"}, "the failed follow-up kept none of its writes"


def test_the_follow_up_of_a_request_that_failed_never_runs(attached: SQLiteStore, loop_thread: LoopThread):
    ran: list[str] = []

    def refuse(conn: sqlite3.Connection) -> None:
        raise UnknownRecipient("no such agent", addresses=["x"])

    def submit_both():
        return (
            db(attached).submit(refuse, follow_up=lambda conn: ran.append("refused's")),
            db(attached).submit(add_workspace("a"), follow_up=lambda conn: ran.append("a's")),
        )

    refused, accepted = on_loop(loop_thread, submit_both)
    with pytest.raises(UnknownRecipient):
        refused.result(DEADLINE)
    assert accepted.result(DEADLINE) == "a"
    db(attached).wait_for_follow_ups()
    assert ran == ["a's"]


def test_a_cancelled_requests_follow_up_never_runs_and_nobody_waits_for_it(
    attached: SQLiteStore, loop_thread: LoopThread
):
    ran: list[str] = []
    with loop_held(loop_thread):
        cancelled = db(attached).submit(add_workspace("a"), follow_up=lambda conn: ran.append("a's"))
        assert cancelled.cancel()
    db(attached).wait_for_follow_ups()  # returns: the ticket was settled with its batch
    assert ran == []


def test_without_a_loop_the_follow_up_runs_in_the_same_transaction(elsewhere: SQLiteStore):
    seen: list[set[str]] = []

    def follow_up(conn: sqlite3.Connection) -> None:
        seen.append(names_in(conn))
        conn.execute("INSERT INTO workspaces (name, created_at) VALUES ('followed', 0)")

    commits = db(elsewhere).commits
    assert db(elsewhere).submit(add_workspace("a"), follow_up=follow_up).result(DEADLINE) == "a"
    assert seen == [{"a"}] and db(elsewhere).commits == commits + 1
    db(elsewhere).wait_for_follow_ups()  # nothing to wait for
    with db(elsewhere).read() as conn:
        assert names_in(conn) == {"a", "followed"}


def test_a_follow_up_in_steps_takes_turns_with_a_waiting_batch(attached: SQLiteStore):
    steps: list[tuple[int, set[str]]] = []
    first_step, release = threading.Event(), threading.Event()

    def three_steps(conn: sqlite3.Connection) -> bool:
        steps.append((len(steps) + 1, names_in(conn)))
        if len(steps) == 1:
            first_step.set()
            assert release.wait(DEADLINE)
        return len(steps) < 3

    assert db(attached).submit(add_workspace("a"), follow_up=three_steps).result(DEADLINE) == "a"
    assert first_step.wait(DEADLINE)
    waiting = db(attached).submit(add_workspace("b"))  # arrives while the first step runs
    release.set()
    assert waiting.result(DEADLINE) == "b"
    db(attached).wait_for_follow_ups()
    assert steps == [(1, {"a"}), (2, {"a", "b"}), (3, {"a", "b"})], "b went in after one step, not after all"


def test_waiting_for_follow_ups_on_the_loops_own_thread_raises_instead_of_waiting_for_itself(
    attached: SQLiteStore, loop_thread: LoopThread
):
    release = threading.Event()
    submitted = db(attached).submit(add_workspace("a"), follow_up=lambda conn: not release.wait(DEADLINE))
    assert submitted.result(DEADLINE) == "a"
    try:
        with pytest.raises(RuntimeError, match="wait for itself"):
            on_loop(loop_thread, db(attached).wait_for_follow_ups)
    finally:
        release.set()
    db(attached).wait_for_follow_ups()


# --- large sends ------------------------------------------------------------------------------


def test_a_large_send_on_the_loop_is_answered_before_its_deliveries_are_written_and_every_reader_sees_them(
    attached: SQLiteStore, loop_thread: LoopThread, path: Path
):
    agents(attached, WS, "alice", *MEMBERS)
    message, result = build(WS, "alice", MEMBERS, channel="all")
    deliveries = [NewDelivery(recipient=m, state=DeliveryState.queued, channel="all") for m in MEMBERS]
    at_answer: list[tuple[int, int]] = []

    def submit():  # on the loop, so the callback is in place before the batch runs
        pending = attached.submit_message(message, deliveries, result, None, None)
        # Runs on the loop as the caller is answered: before the follow-up can have started.
        pending.add_done_callback(
            lambda done: at_answer.append((count(path, "fanout_parts"), count(path, "deliveries")))
        )
        return pending

    assert on_loop(loop_thread, submit).result(DEADLINE) == {m: 1 for m in MEMBERS}
    assert wait_until(lambda: at_answer)
    assert at_answer == [(1, 0)], "answered with the deliveries kept as one row, none written yet"
    for member in MEMBERS:  # readers wait for the follow-up that writes them out
        assert ids(attached.mailbox.peek(WS, member, None, 10)) == [message.id]
    assert {s.agent for s in attached.sent.delivery_statuses(WS, message.id)} == set(MEMBERS)
    assert (count(path, "fanout_parts"), count(path, "deliveries")) == (0, len(MEMBERS))


def test_a_smaller_send_on_the_loop_writes_its_deliveries_with_it(attached: SQLiteStore, path: Path):
    few = MEMBERS[:-1]
    agents(attached, WS, "alice", *few)
    send(attached, WS, "alice", few)
    assert (count(path, "fanout_parts"), count(path, "deliveries")) == (0, len(few))


def test_a_large_send_is_written_out_a_part_at_a_time_and_a_send_arriving_meanwhile_waits_for_one_part(
    attached: SQLiteStore, path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(sqlite_messages, "PART_MAILBOXES", 8)
    written_before_step: list[tuple[int, set[str]]] = []
    first_step, release = threading.Event(), threading.Event()

    def watched_step(conn: sqlite3.Connection) -> bool:
        written = conn.execute("SELECT count(*) FROM deliveries").fetchone()[0]
        written_before_step.append((written, names_in(conn)))
        if len(written_before_step) == 1:
            first_step.set()
            assert release.wait(DEADLINE)
        return write_out_step(conn)

    monkeypatch.setattr(sqlite_messages, "write_out_step", watched_step)
    agents(attached, WS, "alice", *MEMBERS)
    message, result = build(WS, "alice", MEMBERS, channel="all")
    deliveries = [NewDelivery(recipient=m, state=DeliveryState.queued, channel="all") for m in MEMBERS]
    assert attached.submit_message(message, deliveries, result, None, None).result(DEADLINE) == {m: 1 for m in MEMBERS}
    assert count(path, "fanout_parts") == len(MEMBERS) // 8
    assert first_step.wait(DEADLINE)
    waiting = db(attached).submit(add_workspace("later"))
    release.set()
    assert waiting.result(DEADLINE) == "later"
    assert ids(attached.mailbox.peek(WS, MEMBERS[-1], None, 10)) == [message.id]  # waits for every part
    assert [written for written, _ in written_before_step] == [0, 8, 16, 24]
    assert ["later" in names for _, names in written_before_step] == [False, True, True, True]
    assert (count(path, "fanout_parts"), count(path, "deliveries")) == (0, len(MEMBERS))


@pytest.mark.parametrize("step_deliveries, steps", [(4096, 2), (16, 4)])
def test_a_step_writes_out_the_same_part_of_every_send_waiting_up_to_its_bound(
    attached: SQLiteStore, loop_thread: LoopThread, monkeypatch: pytest.MonkeyPatch, step_deliveries: int, steps: int
):
    monkeypatch.setattr(sqlite_messages, "PART_MAILBOXES", 16)
    monkeypatch.setattr(sqlite_messages, "STEP_DELIVERIES", step_deliveries)
    written: list[set[tuple[str, int]]] = []

    def watched_step(conn: sqlite3.Connection) -> bool:
        before = set(conn.execute("SELECT recipient, seq FROM deliveries"))
        more = write_out_step(conn)
        written.append(set(conn.execute("SELECT recipient, seq FROM deliveries")) - before)
        return more

    monkeypatch.setattr(sqlite_messages, "write_out_step", watched_step)
    agents(attached, WS, "alice", *MEMBERS)
    sends = [build(WS, "alice", MEMBERS, channel="all") for _ in range(2)]
    deliveries = [NewDelivery(recipient=m, state=DeliveryState.queued, channel="all") for m in MEMBERS]

    def submit_both():  # one batch: both wait to be written out when the first step runs
        return [attached.submit_message(message, deliveries, result, None, None) for message, result in sends]

    for pending in on_loop(loop_thread, submit_both):
        pending.result(DEADLINE)
    db(attached).wait_for_follow_ups()
    first_half, second_half = MEMBERS[:16], MEMBERS[16:]
    if steps == 2:  # part 0 of both sends, then part 1 of both
        assert written == [{(m, s) for m in first_half for s in (1, 2)}, {(m, s) for m in second_half for s in (1, 2)}]
    else:  # a part of one send per step: the oldest send's parts first
        assert written == [{(m, s) for m in half} for s in (1, 2) for half in (first_half, second_half)]
    assert [seqs_of(attached.mailbox.peek(WS, m, None, 10)) for m in (MEMBERS[0], MEMBERS[-1])] == [[1, 2], [1, 2]]


def seqs_of(items) -> list[int]:
    return [item.seq for item in items]


def left_in_fanout_parts(store: SQLiteStore) -> str:
    """A large send stored as a hub stores it, its deliveries still waiting in ``fanouts`` (the
    hub died, or has not written them out yet); the message's id."""
    agents(store, WS, "alice", *MEMBERS)
    message, result = build(WS, "alice", MEMBERS, channel="all")
    deliveries = [NewDelivery(recipient=m, state=DeliveryState.queued, channel="all") for m in MEMBERS]
    new = NewMessage.prepare(message, deliveries, result, None, None, fan_out_later=True)
    db(store).transact(lambda conn: insert_messages(conn, [new]))
    return message.id


def test_deliveries_a_dead_hub_left_in_fanout_parts_are_written_out_when_the_store_opens_again(path: Path):
    store = SQLiteStore(path)
    message_id = left_in_fanout_parts(store)
    store.close()
    assert count(path, "fanout_parts") == 1
    reopened = SQLiteStore(path)
    try:
        assert (count(path, "fanout_parts"), count(path, "deliveries")) == (0, len(MEMBERS))
        assert [item.seq for item in reopened.mailbox.peek(WS, MEMBERS[0], None, 10)] == [1]
        assert ids(reopened.mailbox.peek(WS, MEMBERS[-1], None, 10)) == [message_id]
    finally:
        reopened.close()


@pytest.mark.parametrize("reader", ["peek", "claim", "unread_count", "delivery_statuses", "ack"])
def test_another_process_reading_while_a_hub_has_deliveries_in_fanouts_writes_them_out_and_sees_them(
    attached: SQLiteStore, elsewhere: SQLiteStore, path: Path, reader: str
):
    message_id = left_in_fanout_parts(attached)  # the hub's store, which has not written them out
    member = MEMBERS[3]
    found = {
        "peek": lambda: ids(elsewhere.mailbox.peek(WS, member, None, 10)) == [message_id],
        "claim": lambda: ids(elsewhere.mailbox.claim(WS, member, None, 10, T0)) == [message_id],
        "unread_count": lambda: elsewhere.mailbox.unread_count(WS, member) == 1,
        "delivery_statuses": lambda: len(elsewhere.sent.delivery_statuses(WS, message_id)) == len(MEMBERS),
        "ack": lambda: elsewhere.mailbox.ack(WS, member, [message_id], T0) == [],
    }[reader]
    assert found()
    assert count(path, "fanout_parts") == 0


def test_deliveries_left_by_the_schema_step_before_parts_are_brought_forward_and_written_out(path: Path):
    """A hub of the previous version died with a large send's deliveries in ``fanouts``."""
    store = SQLiteStore(path)
    agents(store, WS, "alice", *MEMBERS)
    message, result = build(WS, "alice", MEMBERS, channel="all")
    deliveries = [NewDelivery(recipient=m, state=DeliveryState.queued, channel="all") for m in MEMBERS]
    new = NewMessage.prepare(message, deliveries, result, None, None, fan_out_later=True)
    db(store).transact(lambda conn: insert_messages(conn, [new]))
    store.close()
    with sqlite3.connect(path, isolation_level=None) as old:  # back to how step 3 kept them
        (rows,) = old.execute("SELECT json_group_array(json(deliveries)) FROM fanout_parts").fetchone()
        whole = json.dumps([row for part in json.loads(rows) for row in part])
        old.executescript(
            "DROP TABLE fanout_parts;"
            "CREATE TABLE fanouts (message_id TEXT PRIMARY KEY, deliveries TEXT NOT NULL);"
            "ALTER TABLE messages DROP COLUMN urgent;"  # step 5's
            "ALTER TABLE deliveries DROP COLUMN surfaced_via;"
            "ALTER TABLE messages DROP COLUMN sender_address;"  # step 6's
            "ALTER TABLE messages DROP COLUMN sender_terminal;"
            "ALTER TABLE sessions DROP COLUMN terminal;"
            "ALTER TABLE sessions DROP COLUMN delivery_error;"
            "ALTER TABLE channels DROP COLUMN invite_only;"  # step 7's
            "DROP TABLE audit;"
            "DROP INDEX messages_by_thread;"
            "DROP INDEX deliveries_handed;"  # step 8's
            "ALTER TABLE deliveries DROP COLUMN handed_at;"
            "ALTER TABLE deliveries DROP COLUMN handed_session;"
            "DROP TABLE delivery_events;"
            "ALTER TABLE deliveries DROP COLUMN held_until;"  # step 9's
            "ALTER TABLE deliveries DROP COLUMN held_reason;"
            "DROP INDEX messages_by_sender;"
            "DROP INDEX messages_by_task;"  # step 10's
            "ALTER TABLE messages DROP COLUMN task_id;"
            "ALTER TABLE messages DROP COLUMN a2a_message_id;"
            "DROP TABLE tasks;"
            "DROP TABLE task_artifacts;"
            "DROP TABLE task_events;"
            "DROP TABLE push_configs;"
            "DROP TABLE push_deliveries;"
            "DROP TABLE remote_agents;"  # step 11's
            "DROP TABLE remote_outbox;"
            "DROP TABLE runner_reports;"  # step 12's
            "DROP TABLE rounds;"  # step 13's
            "DROP TABLE round_members;"
            "DROP TABLE round_events;"
            "DROP TABLE leases;"  # step 14's
            "PRAGMA user_version = 3;"
        )
        old.execute("INSERT INTO fanouts VALUES (?, ?)", (message.id, whole))
    assert len(MIGRATIONS) == 14, "a newer step: bring this test's old schema forward too"
    reopened = SQLiteStore(path)
    try:
        assert (count(path, "fanout_parts"), count(path, "deliveries")) == (0, len(MEMBERS))
        assert ids(reopened.mailbox.peek(WS, MEMBERS[-1], None, 10)) == [message.id]
    finally:
        reopened.close()
