"""Sending through the service: conversations and threads, lists of recipients, idempotent sends,
per-pair order, and what a send answers for each recipient (queued, delivered, a new agent,
``require_live``)."""

from __future__ import annotations

import os
import threading

import pytest

from callboard.client.local import LocalClient
from callboard.errors import (
    IdempotencyConflict,
    NoLiveSession,
)
from callboard.model import (
    DeliveryState,
)
from callboard.requests import ReadQuery, SendRequest
from tests.support.answers import everything, ids, outcome, row
from tests.support.service_setup import MACHINE, new_agent
from tests.support.store_rows import writes_nothing
from tests.support.threads import in_thread

# --- conversations ---------------------------------------------------------------------------


def test_two_agents_exchange_messages_and_a_reply_joins_the_parents_thread(alice, bob):
    sent = alice.send(SendRequest(to="bob", text="can you review #42?", subject="review"))
    assert sent.thread_id == sent.message_id  # a new message starts its own thread

    (item,) = bob.read().items
    first = item.message
    assert (first.id, first.sender, first.text, first.subject, first.thread_id) == (
        sent.message_id,
        "alice",
        "can you review #42?",
        "review",
        sent.message_id,
    )
    assert first.recipients == ["bob"]

    reply = bob.send(SendRequest(to="alice", text="on it", reply_to=first.id))
    assert reply.thread_id == sent.thread_id
    (item,) = alice.read().items
    assert (item.message.id, item.message.sender, item.message.reply_to, item.message.thread_id) == (
        reply.message_id,
        "bob",
        first.id,
        sent.thread_id,
    )

    again = alice.send(
        SendRequest(to="bob", text="thanks", reply_to=reply.message_id)
    )  # a reply to a reply stays in the thread
    assert again.thread_id == sent.thread_id
    assert bob.read().items[0].message.reply_to == reply.message_id


def test_a_send_to_a_comma_list_reaches_each_recipient_once(alice, bob, carol, dave):
    sent = alice.send(SendRequest(to="bob, carol,BOB", text="standup in 5"))
    assert [o.address for o in sent.recipients] == ["bob", "carol"]
    assert all(o.state == "queued" for o in sent.recipients)
    for client in (bob, carol):
        assert ids(client.read()) == [sent.message_id]
    assert dave.read().items == []
    assert alice.read().items == []


def test_a_send_to_a_list_of_addresses_reaches_each_recipient_once(alice, bob, carol, dave):
    sent = alice.send(SendRequest(to=["bob", "carol,dave", "bob"], text="release is out"))
    assert [o.address for o in sent.recipients] == ["bob", "carol", "dave"]
    for client in (bob, carol, dave):
        (item,) = client.read().items
        assert item.message.id == sent.message_id
        assert item.message.recipients == ["bob", "carol", "dave"]


# --- idempotent send --------------------------------------------------------------------------------


def test_an_idempotent_resend_returns_the_same_message_id_and_stores_no_copy(db, alice, bob):
    first = alice.send(SendRequest(to="bob", text="deploy v2", idempotency_key="deploy-v2"))
    assert first.duplicate is False
    with writes_nothing(db):
        again = alice.send(SendRequest(to="bob", text="deploy v2", idempotency_key="deploy-v2"))
    assert again.duplicate is True
    assert again.model_copy(update={"duplicate": False}) == first
    assert ids(bob.read()) == [first.message_id]
    assert (
        alice.send(SendRequest(to="bob", text="deploy v2", idempotency_key="deploy-v2")).message_id == first.message_id
    )  # after the read too
    assert everything(bob) == [first.message_id]


@pytest.mark.parametrize(
    "change",
    [{"text": "deploy v3"}, {"to": "carol"}, {"subject": "urgent"}, {"require_live": True}],
    ids=["body", "recipients", "subject", "require_live"],
)
def test_the_same_idempotency_key_for_a_different_message_raises_idempotency_conflict(db, alice, bob, carol, change):
    alice.send(SendRequest(to="bob", text="deploy v2", idempotency_key="deploy-v2"))
    request = {"to": "bob", "text": "deploy v2", **change}
    with writes_nothing(db), pytest.raises(IdempotencyConflict) as raised:
        alice.send(SendRequest(to=request.pop("to"), text=request.pop("text"), idempotency_key="deploy-v2", **request))
    assert raised.value.code == "idempotency_conflict"


def test_the_same_idempotency_key_from_another_sender_is_another_message(alice, bob, carol):
    a = alice.send(SendRequest(to="bob", text="hi", idempotency_key="k"))
    c = carol.send(SendRequest(to="bob", text="hi", idempotency_key="k"))
    assert a.message_id != c.message_id and not c.duplicate
    assert everything(bob) == [a.message_id, c.message_id]


def test_racing_sends_with_one_idempotency_key_store_one_message(alice, bob):
    start = threading.Barrier(6)

    def send() -> object:
        start.wait(timeout=30)
        return alice.send(SendRequest(to="bob", text="exactly once", idempotency_key="race"))

    racers = [in_thread(send) for _ in range(6)]
    for thread, _ in racers:
        thread.join(timeout=30)
    boxes = [box for _, box in racers]
    assert all("error" not in box for box in boxes), [box.get("error") for box in boxes]
    results = [box["result"] for box in boxes]
    assert len({r.message_id for r in results}) == 1
    assert sorted(r.duplicate for r in results) == [False] + [True] * 5
    assert everything(bob) == [results[0].message_id]


# --- order ------------------------------------------------------------------------------------------


def test_messages_from_one_sender_to_one_recipient_are_read_in_send_order(alice, bob, carol):
    sent: dict[str, list[str]] = {}

    def burst(client: LocalClient) -> None:
        sent[client.caller.agent] = [
            client.send(SendRequest(to="bob", text=f"{client.caller.agent} {i}")).message_id for i in range(40)
        ]

    senders = [in_thread(lambda c=c: burst(c)) for c in (alice, carol)]  # interleaved with each other
    for thread, box in senders:
        thread.join(timeout=30)
        assert "error" not in box, box.get("error")

    items = bob.read(ReadQuery(limit=1000)).items
    assert [i.seq for i in items] == list(range(1, 81))
    for sender in ("alice", "carol"):
        assert [i.message.id for i in items if i.message.sender == sender] == sent[sender]


# --- what a send answers: queued, delivered, new agent, require_live ------------------------------------


def test_a_send_to_an_existing_agent_with_no_session_is_queued(alice, bob):
    sent = alice.send(SendRequest(to="bob", text="when you are back"))
    bob_outcome = outcome(sent, "bob")
    assert (bob_outcome.state, bob_outcome.agent, bob_outcome.sessions, bob_outcome.new_agent) == (
        "queued",
        "bob",
        [],
        False,
    )
    assert bob_outcome.reason
    assert ids(bob.read()) == [sent.message_id]


def test_a_send_to_a_new_name_is_queued_and_creates_the_agent(service, alice):
    assert [a.name for a in alice.list_agents()] == ["alice"]
    sent = alice.send(SendRequest(to="newbie", text="welcome"))
    newbie = outcome(sent, "newbie")
    assert (newbie.state, newbie.new_agent, newbie.sessions) == ("queued", True, [])
    assert alice.describe_agent("newbie").name == "newbie"
    assert ids(alice.as_agent("newbie").read()) == [sent.message_id]


def test_require_live_with_a_live_session_answers_delivered_naming_the_session(alice, bob):
    session = bob.register_session(runtime="claude-code")  # this test process: alive
    assert session.live
    sent = alice.send(SendRequest(to="bob", text="are you there?", require_live=True))
    bob_outcome = outcome(sent, "bob")
    assert (bob_outcome.state, bob_outcome.sessions) == ("delivered", [f"bob@{MACHINE}#{os.getpid()}"])
    assert session.address == f"bob@{MACHINE}#{os.getpid()}"
    assert row(alice.message_status(sent.message_id), "bob").state == DeliveryState.delivered
    assert ids(bob.read()) == [sent.message_id]


def test_require_live_with_no_live_session_raises_and_stores_nothing(db, alice, bob):
    with writes_nothing(db), pytest.raises(NoLiveSession) as raised:
        alice.send(SendRequest(to="bob", text="urgent", require_live=True))
    assert raised.value.code == "no_live_session"
    assert everything(bob) == []


def test_require_live_to_a_new_name_raises_and_creates_no_agent(db, alice):
    with writes_nothing(db), pytest.raises(NoLiveSession) as raised:
        alice.send(SendRequest(to="newbie", text="urgent", require_live=True))
    assert raised.value.code == "no_live_session"
    assert [a.name for a in alice.list_agents()] == ["alice"]


def test_require_live_to_a_channel_with_one_member_not_live_raises_and_stores_nothing(db, alice, bob, carol, team):
    bob.register_session(runtime="claude-code")
    with writes_nothing(db), pytest.raises(NoLiveSession) as raised:
        alice.send(SendRequest(to=team, text="all hands", require_live=True))
    assert raised.value.code == "no_live_session"
    assert raised.value.details["recipients"] == ["carol"]
    assert everything(bob) == [] and everything(carol) == []


def test_require_live_to_a_large_channel_names_a_few_members_in_its_message_and_all_in_its_details(
    service, db, alice, team
):
    members = [f"member-{i}" for i in range(8)]
    for name in members:
        new_agent(service, name).join_channel("team")
    with writes_nothing(db), pytest.raises(NoLiveSession) as raised:
        alice.send(SendRequest(to=team, text="all hands", require_live=True))
    assert "bob (in #team), carol (in #team), member-0 (in #team)" in raised.value.message
    assert "and 5 more;" in raised.value.message
    assert raised.value.details["recipients"] == ["bob", "carol", *members]
