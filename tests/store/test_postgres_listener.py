"""Change notifications of the PostgreSQL store: what each write tells the other replicas, and
a listener that outlives its connection."""

from __future__ import annotations

import json
import queue

import psycopg
import pytest

from callboard.model import DeliveryState
from callboard.store.postgres.notices import MAX_PAYLOAD_BYTES, payload
from callboard.store.postgres.store import PostgresStore
from callboard.store.records import NewDelivery
from tests.store.conftest import PostgresSchema
from tests.support.store_data import OTHER_WS, T0, WS, agents, at, build, new_token, send
from tests.support.waiting import wait_until

DEADLINE = 20.0


class Heard:
    """The payloads a store's listener hands on, in order."""

    def __init__(self, store) -> None:
        self._queue: queue.Queue[dict] = queue.Queue()
        store.add_listener(self._queue.put)

    def next(self) -> dict:
        try:
            return self._queue.get(timeout=DEADLINE)
        except queue.Empty:
            pytest.fail(f"no change notification within {DEADLINE:g} s")

    def next_besides(self, unwanted: dict) -> dict:
        while (got := self.next()) == unwanted:
            pass
        return got


def test_a_send_names_the_replica_the_workspace_and_the_recipients(open_postgres):
    writer, reader = open_postgres(replica="hub-a"), open_postgres(replica="hub-b")
    agents(writer, WS, "alice", "bob", "carol")
    heard = Heard(reader)
    sent = send(writer, WS, "alice", ["carol", "bob"])
    assert heard.next() == {"r": "hub-a", "w": WS, "a": ["bob", "carol"], "m": sent.id}
    message_json, rows = reader.deliveries_of(WS, sent.id, ["bob", "carol", "dave"])
    assert json.loads(message_json)["id"] == sent.id
    assert sorted(rows) == [("bob", 1, "queued", None, None, None), ("carol", 1, "queued", None, None, None)]
    assert reader.deliveries_of(WS, "01a22bef-0000-7000-8000-000000000000", ["bob"]) is None


def test_a_store_hears_its_own_commits_under_its_own_replica_id(open_postgres):
    store = open_postgres()
    agents(store, WS, "alice", "bob")
    heard = Heard(store)
    sent = send(store, WS, "alice", ["bob"])
    assert heard.next() == {"r": store.replica, "w": WS, "a": ["bob"], "m": sent.id}


def test_reading_a_mailbox_names_that_mailbox(open_postgres):
    store = open_postgres(replica="r1")
    agents(store, WS, "alice", "bob")
    sent = send(store, WS, "alice", ["bob"])
    heard = Heard(store)
    bob = {"r": "r1", "w": WS, "a": ["bob"]}

    assert [i.message.id for i in store.mailbox.claim(WS, "bob", None, 10, at(1))] == [sent.id]
    assert heard.next() == bob
    assert store.mailbox.ack(WS, "bob", [sent.id], at(2)) == []
    assert heard.next() == bob
    assert store.mailbox.mark_read(WS, "bob", [sent.id], at(3)) == []
    assert heard.next() == bob
    again = send(store, WS, "alice", ["bob"])
    heard.next()
    assert [i.message.id for i in store.mailbox.surface(WS, "bob", "hook", False, 10, at(4))] == [again.id]
    assert heard.next() == bob
    assert store.directory.delete_agent(WS, "bob") is not None  # deleted
    assert heard.next() == bob


def test_other_writes_only_name_the_replica(open_postgres):
    store = open_postgres(replica="r1")
    heard = Heard(store)
    store.directory.ensure_workspace(WS, T0)
    store.directory.ensure_agent(WS, "alice", T0)
    store.directory.create_channel(WS, "team", "alice", None, T0)
    store.tokens.create_token(new_token(), T0)
    assert [heard.next() for _ in range(4)] == [{"r": "r1"}] * 4


def test_a_write_that_changes_nothing_sends_nothing(open_postgres):
    store = open_postgres(replica="r1")
    agents(store, WS, "alice", "bob")
    heard = Heard(store)
    assert store.directory.ensure_agent(WS, "alice", T0) is False
    assert store.mailbox.claim(WS, "bob", None, 10, at(1)) == []
    assert store.mailbox.surface(WS, "bob", "hook", False, 10, at(1)) == []
    assert store.mailbox.ack(WS, "bob", ["no-such-message"], at(1)) == ["no-such-message"]
    sent = send(store, WS, "alice", ["bob"])  # the first thing heard is this
    assert heard.next() == {"r": "r1", "w": WS, "a": ["bob"], "m": sent.id}


def test_a_post_to_many_mailboxes_names_only_the_workspace(open_postgres):
    store = open_postgres(replica="r1")
    members = [f"member-{i:04d}" for i in range(1000)]
    agents(store, WS, "alice", *members)
    heard = Heard(store)
    message, result = build(WS, "alice", members, channel="team")
    deliveries = [NewDelivery(m, DeliveryState.queued, channel="team") for m in members]
    seqs = store.submit_message(message, deliveries, result, None, None).result()
    assert seqs == dict.fromkeys(members, 1)
    assert heard.next() == {"r": "r1", "w": WS}


def test_payloads_stay_under_postgresqls_limit():
    assert len(payload("r", WS, ["x" * 50] * 200).encode()) <= MAX_PAYLOAD_BYTES
    assert payload("r", WS, ["bob"]) == '{"r":"r","w":"acme","a":["bob"]}'


def test_stores_on_another_schema_hear_nothing_of_this_one(open_postgres, postgres_schema):
    elsewhere = PostgresSchema()
    try:
        other = PostgresStore(elsewhere.url, replica="other")
        try:
            store = open_postgres(replica="here")
            agents(store, WS, "alice", "bob")
            agents(other, OTHER_WS, "zed")
            heard = Heard(other)
            send(store, WS, "alice", ["bob"])
            other.directory.ensure_agent(OTHER_WS, "yan", T0)
            assert heard.next() == {"r": "other"}  # its own write, and nothing of the other schema's before it
        finally:
            other.close()
    finally:
        elsewhere.drop()


def test_a_failing_callback_does_not_stop_the_others(open_postgres, caplog):
    store = open_postgres(replica="r1")

    def broken(payload: dict) -> None:
        raise RuntimeError("boom")

    store.add_listener(broken)
    heard = Heard(store)
    store.directory.ensure_workspace(WS, T0)
    assert heard.next() == {"r": "r1"}
    store.directory.ensure_workspace(OTHER_WS, T0)
    assert heard.next() == {"r": "r1"}
    assert "a change callback failed" in caplog.text


def test_the_listener_reconnects_when_its_connection_is_cut_and_reports_a_change_of_anything(
    open_postgres, postgres_schema
):
    store = open_postgres(replica="r1")
    agents(store, WS, "alice", "bob")
    heard = Heard(store)
    before = store.change_counter()
    with psycopg.connect(postgres_schema.url, autocommit=True) as admin:
        cut = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %%' AND query LIKE %s",
            (f"%{store.channel}%",),
        ).fetchall()
    assert cut == [(True,)]
    assert heard.next() == {}  # back, and anything may have changed meanwhile
    assert wait_until(lambda: store.change_counter() > before)
    sent = send(store, WS, "alice", ["bob"])
    assert heard.next_besides({}) == {"r": "r1", "w": WS, "a": ["bob"], "m": sent.id}
