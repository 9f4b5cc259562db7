"""Mail put before a coding agent (``Client.surface``), urgent mail, and marking mail read
(``Client.mark_read``): the same behaviour on the embedded store and through the hub."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from callboard.client.base import Client
from callboard.client.local import LocalClient
from callboard.errors import BadRequest, UnknownMessage
from callboard.model import Caller, DeliveryState
from callboard.requests import SendRequest, SurfaceQuery
from callboard.service.door import Service
from callboard.store.sqlite.store import SQLiteStore
from tests.hub.conftest import Tenant, unique

Pair = tuple[Client, Client]  # (alice, bob)


@pytest.fixture(params=["embedded", "hub"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pair]:
    alice_name, bob_name = unique("alice"), unique("bob")
    if request.param == "embedded":
        store = SQLiteStore(tmp_path / "s.db")
        service = Service(store, machine="testhost")
        clients: list[Client] = [LocalClient(service, Caller(workspace="ws", agent=n)) for n in (alice_name, bob_name)]
    else:
        tenant: Tenant = request.getfixturevalue("tenant")
        clients = [tenant.client(n) for n in (alice_name, bob_name)]
    for client, name in zip(clients, (alice_name, bob_name), strict=True):
        client.create_agent(name)  # both exist before anything is sent
    try:
        yield clients[0], clients[1]
    finally:
        for client in clients:
            client.close()
        if request.param == "embedded":
            store.close()


def send(pair: Pair, text: str, **options) -> str:
    alice, bob = pair
    return alice.send(SendRequest(to=bob.whoami().agent, text=text, **options)).message_id


def status_of(pair: Pair, message_id: str):
    (recipient,) = pair[0].message_status(message_id).recipients
    return recipient


def test_urgent_mail_arrives_marked_urgent_and_other_mail_does_not(pair: Pair):
    urgent, plain = send(pair, "the build is red", urgent=True), send(pair, "lunch?")
    got = {item.message.id: item.message.urgent for item in pair[1].read().items}
    assert got == {urgent: True, plain: False}


def test_surfacing_takes_each_message_once_marks_it_surfaced_by_its_path_and_leaves_it_unread(pair: Pair):
    first, second = send(pair, "one"), send(pair, "two")
    bob = pair[1]
    surfaced = bob.surface(SurfaceQuery(via="hook"))
    assert [i.message.id for i in surfaced.items] == [first, second]
    assert {i.state for i in surfaced.items} == {DeliveryState.surfaced}
    assert surfaced.unread == 2 and surfaced.cursor == surfaced.items[-1].seq
    assert bob.surface(SurfaceQuery(via="hook")).items == [], "a message is put before the agent once"
    status = status_of(pair, first)
    assert (status.state, status.via, status.surfaced_at is not None) == (DeliveryState.surfaced, "hook", True)
    assert [i.message.id for i in bob.read().items] == [first, second], "surfaced mail is still unread"
    after_read = status_of(pair, first)
    assert (after_read.state, after_read.via) == (DeliveryState.read, "hook")


def test_urgent_only_surfacing_leaves_ordinary_mail_for_later(pair: Pair):
    plain, urgent = send(pair, "when you have a minute"), send(pair, "stop the deploy", urgent=True)
    bob = pair[1]
    assert [i.message.id for i in bob.surface(SurfaceQuery(via="hook", urgent_only=True)).items] == [urgent]
    assert [i.message.id for i in bob.surface(SurfaceQuery(via="hook")).items] == [plain]


def test_mail_already_read_is_not_surfaced(pair: Pair):
    send(pair, "read me")
    pair[1].read()
    assert pair[1].surface(SurfaceQuery(via="socket")).items == []


def test_a_waiting_surface_returns_mail_sent_while_it_waits(pair: Pair):
    bob = pair[1]
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(bob.surface(SurfaceQuery(via="waiter", wait=30))))
    waiter.start()
    message_id = send(pair, "wake up")
    waiter.join(60)
    assert not waiter.is_alive() and [i.message.id for i in got[0].items] == [message_id]
    assert status_of(pair, message_id).via == "waiter"


@pytest.mark.parametrize(
    "call", [lambda c: c.surface(SurfaceQuery(via="pigeon")), lambda c: c.surface(SurfaceQuery(via="hook", limit=0))]
)
def test_a_bad_surface_request_is_refused(pair: Pair, call: Callable[[Client], object]):
    send(pair, "untouched")
    with pytest.raises(BadRequest):
        call(pair[1])
    assert len(pair[1].surface(SurfaceQuery(via="hook")).items) == 1, "the refused request took nothing"


def test_mark_read_marks_only_the_messages_named(pair: Pair):
    first, second = send(pair, "one"), send(pair, "two")
    bob = pair[1]
    assert bob.mark_read([first, first]).marked == [first]
    assert status_of(pair, first).state is DeliveryState.read
    assert [i.message.id for i in bob.read().items] == [second]


def test_mark_read_with_an_unknown_id_marks_nothing(pair: Pair):
    message_id = send(pair, "still unread")
    with pytest.raises(UnknownMessage):
        pair[1].mark_read([message_id, "0193b2c4-0000-7000-8000-000000000000"])
    assert status_of(pair, message_id).state is DeliveryState.queued


def test_mark_read_leaves_an_acknowledged_message_acknowledged(pair: Pair):
    message_id = send(pair, "done")
    pair[1].ack([message_id])
    pair[1].mark_read([message_id])
    assert status_of(pair, message_id).state is DeliveryState.acked


def test_a_peek_shows_what_would_be_surfaced_and_marks_nothing(pair: Pair):
    plain, urgent = send(pair, "later"), send(pair, "now", urgent=True)
    bob = pair[1]
    assert [i.message.id for i in bob.surface(SurfaceQuery(via="hook", peek=True)).items] == [plain, urgent]
    assert [i.message.id for i in bob.surface(SurfaceQuery(via="hook", urgent_only=True, peek=True)).items] == [urgent]
    assert status_of(pair, plain).surfaced_at is None and status_of(pair, urgent).state is DeliveryState.queued
    assert [i.message.id for i in bob.surface(SurfaceQuery(via="hook")).items] == [plain, urgent], (
        "still there to surface"
    )
