"""The PostgreSQL store's start and stop: its schema steps (several replicas starting at once),
what it says when it cannot start, and what it shows of its URL."""

from __future__ import annotations

import asyncio
import threading

import psycopg
import pytest

from callboard.errors import StoreUnavailable
from callboard.model import DeliveryState
from callboard.store.postgres.connection import channel_for, without_password
from callboard.store.postgres.schema import MIGRATIONS, VERSION_TABLE
from callboard.store.postgres.store import PostgresStore
from callboard.store.records import NewDelivery
from tests.support.store_data import WS, agents, build, send


def version_of(url: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(f"SELECT version FROM {VERSION_TABLE}").fetchall()


def test_stores_starting_at_once_on_an_empty_schema_apply_every_step_once(postgres_schema):
    count = 6
    start = threading.Barrier(count)
    opened: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            start.wait(timeout=30)
            opened.append(PostgresStore(postgres_schema.url))
        except BaseException as error:  # reported on the test's thread
            errors.append(error)

    threads = [threading.Thread(target=open_one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert errors == []
        assert len(opened) == count
        assert version_of(postgres_schema.url) == [(len(MIGRATIONS),)]
        agents(opened[0], WS, "alice", "bob")
        assert send(opened[-1], WS, "alice", ["bob"]).seqs == {"bob": 1}
    finally:
        for store in opened:
            store.close()


def test_a_store_opened_on_a_schema_at_the_newest_step_changes_nothing(open_postgres, postgres_schema):
    first = open_postgres()
    agents(first, WS, "alice")
    open_postgres()
    assert version_of(postgres_schema.url) == [(len(MIGRATIONS),)]
    assert [a.name for a in first.directory.list_agents(WS)] == ["alice"]


def test_a_schema_a_newer_replica_brought_forward_is_left_as_it_is(open_postgres, postgres_schema):
    open_postgres().close()
    with psycopg.connect(postgres_schema.url) as conn:
        conn.execute(f"UPDATE {VERSION_TABLE} SET version = version + 1")
    store = open_postgres()  # a step it does not know: presumably additive, as every step so far
    assert version_of(postgres_schema.url) == [(len(MIGRATIONS) + 1,)]
    agents(store, WS, "alice")


def test_a_search_path_naming_no_existing_schema_is_refused_clearly(postgres_schema):
    url = postgres_schema.url.replace(postgres_schema.name, postgres_schema.name + "_missing")
    with pytest.raises(StoreUnavailable, match="no schema of the search_path"):
        PostgresStore(url)


def test_a_database_that_cannot_be_reached_is_store_unavailable():
    url = "postgresql://postgres:secret@127.0.0.1:1/test?connect_timeout=2"
    with pytest.raises(StoreUnavailable) as raised:
        PostgresStore(url)
    assert raised.value.code == "store_unavailable"
    assert "127.0.0.1:1" in raised.value.message
    assert "secret" not in raised.value.message


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://sb:hunter2@db.internal:5432/mail", "postgresql://sb@db.internal:5432/mail"),
        (
            "postgresql://sb@db/mail?password=hunter2&options=-csearch_path%3Dhub",
            "postgresql://sb@db/mail?options=-csearch_path%3Dhub",
        ),
        ("postgres://db/mail", "postgres://db/mail"),
    ],
)
def test_location_is_the_url_without_its_password(url, shown):
    assert without_password(url) == shown


def test_location_is_a_connection_string_without_its_password():
    shown = without_password("host=db dbname=mail user=sb password=hunter2")
    assert sorted(shown.split()) == ["dbname=mail", "host=db", "user=sb"]


def test_location_and_replica_are_set(open_postgres, postgres_schema):
    store = open_postgres(replica="hub-a")
    assert store.location == postgres_schema.url
    assert store.replica == "hub-a"
    assert store.schema == postgres_schema.name
    other = open_postgres()
    assert other.replica and other.replica != store.replica


def test_a_long_schema_name_still_gives_a_valid_channel_name():
    assert channel_for("hub") == "callboard.hub"
    long = channel_for("x" * 63)
    assert len(long.encode()) <= 63 and long != channel_for("y" * 63)


def test_committing_on_loop_only_yields(open_postgres):
    store = open_postgres()

    async def inside() -> None:
        async with store.committing_on_loop():
            agents(store, WS, "alice")

    asyncio.run(inside())
    assert store.directory.get_agent(WS, "alice") is not None


def test_submit_message_answers_at_once_and_resolves_when_the_send_commits(open_postgres, postgres_schema):
    store = open_postgres()
    agents(store, WS, "alice", "bob")
    message, result = build(WS, "alice", ["bob"])
    with psycopg.connect(postgres_schema.url) as blocker:  # holds bob's mailbox, as a long send would
        blocker.execute("SELECT FROM agents WHERE workspace = %s AND name = 'bob' FOR UPDATE", (WS,))
        pending = store.submit_message(message, [NewDelivery("bob", DeliveryState.queued)], result, None, None)
        assert not pending.done()
        blocker.rollback()
    assert pending.result(timeout=30) == {"bob": 1}


def test_close_lets_sends_already_submitted_finish_and_later_calls_fail_as_unavailable(open_postgres):
    store = open_postgres()
    agents(store, WS, "alice", "bob")
    pendings = []
    for _ in range(20):
        message, result = build(WS, "alice", ["bob"])
        pendings.append(store.submit_message(message, [NewDelivery("bob", DeliveryState.queued)], result, None, None))
    store.close()
    assert sorted(p.result(timeout=30)["bob"] for p in pendings) == list(range(1, 21))
    with pytest.raises(StoreUnavailable):
        store.mailbox.last_seq(WS, "bob")
    message, result = build(WS, "alice", ["bob"])
    with pytest.raises(StoreUnavailable):
        store.submit_message(message, [NewDelivery("bob", DeliveryState.queued)], result, None, None).result()
