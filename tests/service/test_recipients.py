"""Whom a send reaches: a channel post reaches every member once and only members; an address
that names nobody fails the whole send, names each, and stores nothing; a name close to an
existing agent is met with a guess."""

from __future__ import annotations

import pytest

from callboard.errors import (
    NotMember,
    UnknownChannel,
    UnknownRecipient,
)
from callboard.requests import ReadQuery, SendRequest
from tests.support.answers import everything, ids, outcome
from tests.support.service_setup import MACHINE, WS
from tests.support.store_rows import writes_nothing


def test_a_channel_post_reaches_every_member_except_the_sender_exactly_once(alice, bob, carol, dave, team):
    sent = alice.send(SendRequest(to=team, text="deploy at noon"))
    assert sorted((o.agent, o.address, o.channel) for o in sent.recipients) == [
        ("bob", "#team", "team"),
        ("carol", "#team", "team"),
    ]
    for client in (bob, carol):
        (item,) = client.read().items
        assert (item.message.id, item.message.channel, item.message.recipients) == (sent.message_id, "team", ["#team"])
        assert client.read(ReadQuery(after=0)).items[0].message.id == sent.message_id  # and only that one
        assert len(everything(client)) == 1
    assert everything(alice) == []
    assert everything(dave) == []

    reply = bob.send(SendRequest(to=team, text="noted"))  # any member may post; the creator is a member
    assert sorted(o.agent for o in reply.recipients) == ["alice", "carol"]
    assert ids(alice.read()) == [reply.message_id]


@pytest.mark.parametrize("to", ["bob,#team", "#team,bob", "#team,bob,#team"])
def test_an_agent_addressed_directly_and_through_the_channel_gets_one_copy(alice, bob, carol, team, to):
    sent = alice.send(SendRequest(to=to, text="one copy each"))
    assert sorted(o.agent for o in sent.recipients) == ["bob", "carol"]
    assert everything(bob) == [sent.message_id]
    assert everything(carol) == [sent.message_id]


def test_posting_to_a_channel_you_did_not_join_raises_not_member_and_stores_nothing(db, alice, bob, dave, team):
    with writes_nothing(db), pytest.raises(NotMember) as raised:
        dave.send(SendRequest(to=f"bob,{team}", text="let me in"))
    assert raised.value.code == "not_member"
    assert everything(bob) == []


def test_a_member_who_left_no_longer_gets_the_channels_posts(alice, bob, carol, team):
    left = carol.leave_channel("team")
    assert (left.joined, left.members) == (False, 2)
    sent = alice.send(SendRequest(to=team, text="after carol left"))
    assert [o.agent for o in sent.recipients] == ["bob"]
    assert everything(carol) == []


# --- unknown recipients ----------------------------------------------------------------------------


def test_a_send_with_an_address_that_names_nobody_fails_whole_naming_each_and_stores_nothing(
    db, alice, bob, carol, dave
):
    bob.register_session(runtime="claude-code")  # bob is known on this machine, as this process
    with writes_nothing(db), pytest.raises(UnknownRecipient) as raised:
        alice.send(SendRequest(to=["carol", "dave@nomachine", f"bob@{MACHINE}#99999999"], text="hello?"))
    assert raised.value.details["addresses"] == ["dave@nomachine", f"bob@{MACHINE}#99999999"]
    assert [r["address"] for r in raised.value.details["refused"]] == raised.value.details["addresses"]
    assert "dave" in raised.value.message and "99999999" in raised.value.message
    assert raised.value.message.count("Nothing was sent to anyone.") == 1
    assert everything(carol) == [] and everything(bob) == [] and everything(dave) == []


def test_a_send_with_refusals_of_several_kinds_fails_with_the_first_ones_code_and_lists_each(db, alice, carol, dave):
    dave.create_channel("closed")
    with writes_nothing(db), pytest.raises(UnknownChannel) as raised:
        alice.send(SendRequest(to=["carol", "#ghost", "#closed", "dave@nomachine"], text="hello?"))
    assert [(r["address"], r["code"]) for r in raised.value.details["refused"]] == [
        ("#ghost", "unknown_channel"),
        ("#closed", "not_member"),
        ("dave@nomachine", "unknown_recipient"),
    ]
    assert "no channel #ghost" in raised.value.message and "not a member of #closed" in raised.value.message
    assert everything(carol) == []


@pytest.mark.parametrize("to", ["#nochannel", "carol,#nochannel", "#nochannel,bob@nomachine"])
def test_a_send_to_a_channel_that_does_not_exist_says_so_and_stores_nothing(db, alice, bob, carol, to):
    with writes_nothing(db), pytest.raises(UnknownChannel) as raised:
        alice.send(SendRequest(to=to, text="anyone?"))
    assert raised.value.code == "unknown_channel"
    assert "no channel #nochannel" in raised.value.message and "channel create nochannel" in raised.value.message
    assert everything(bob) == [] and everything(carol) == []


@pytest.mark.parametrize(
    "to",
    ["bob@nomachine", f"bob@{MACHINE}#12345", f"bob@nomachine,bob@{MACHINE}#12345"],
)
def test_a_send_where_every_recipient_is_unknown_raises_unknown_recipient_and_stores_nothing(db, alice, bob, to):
    with writes_nothing(db), pytest.raises(UnknownRecipient) as raised:
        alice.send(SendRequest(to=to, text="anyone?"))
    assert raised.value.code == "unknown_recipient"
    assert everything(bob) == []


def test_a_recipient_deleted_while_the_message_is_sent_is_an_unknown_recipient(service, alice, bob, monkeypatch):
    submit = service.store.submit_message

    def deleted_meanwhile(message, deliveries, *rest):  # after the service found bob
        service.store.directory.delete_agent(WS, "bob")
        return submit(message, deliveries, *rest)

    monkeypatch.setattr(service.store, "submit_message", deleted_meanwhile)
    with pytest.raises(UnknownRecipient) as raised:
        alice.send(SendRequest(to="bob", text="hi"))
    assert raised.value.code == "unknown_recipient"
    assert raised.value.message == "agent bob was deleted while this message was being sent; nothing was stored."
    assert raised.value.details == {"addresses": ["bob"]}
    assert service.store.directory.get_agent(WS, "bob") is None  # not created again by the send


def test_a_channel_with_no_member_but_the_sender_is_an_unknown_recipient(db, alice):
    alice.create_channel("lonely")
    with writes_nothing(db), pytest.raises(UnknownRecipient):
        alice.send(SendRequest(to="#lonely", text="echo"))


def test_a_name_close_to_an_existing_agent_is_met_with_a_guess_whatever_face_sends(alice, bob):
    bob.who()
    reason = outcome(alice.send(SendRequest(to="bobb", text="typo")), "bobb").reason
    assert reason is not None and "was created" in reason and "Did you mean 'bob'?" in reason
    with pytest.raises(UnknownRecipient) as raised:
        alice.send(SendRequest(to="bobx@nowhere#1", text="x"))
    assert "Did you mean 'bob' or 'bobb'?" in raised.value.message
    known = outcome(alice.send(SendRequest(to="bob", text="right")), "bob").reason
    assert known is not None and "Did you mean" not in known  # a known name gets no guess
