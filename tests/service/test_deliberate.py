"""Actions with large effects are deliberate and recorded, on both stores: deleting an agent that
holds unread mail, invite-only channels, the audit trail, and what an agent token (not a person's
credential) may not do — create agents by sending, or write into a thread it is no party to.

The fixtures are the service suite's (tests/service/conftest.py): clients of one Service on a fresh
SQLite file or PostgreSQL schema. ``agent_token(name)`` acts as an agent token over the hub does.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from callboard.client.local import LocalClient
from callboard.errors import (
    BadRequest,
    Forbidden,
    HasUnreadMail,
    NotMember,
    UnknownAgent,
    UnknownMessage,
    UnknownRecipient,
)
from callboard.hub.errors import http_status
from callboard.model import Caller, new_id
from callboard.requests import ReadQuery, SendRequest
from callboard.service.door import Service
from tests.support.answers import everything, outcome
from tests.support.service_setup import WS
from tests.support.store_rows import writes_nothing


@pytest.fixture
def agent_token(service: Service) -> Callable[[str], LocalClient]:
    """``agent_token(name)``: a client acting as a hub agent token for ``name`` would."""

    def make(name: str) -> LocalClient:
        caller = Caller(workspace=WS, agent=name, person=False, token_kind="agent", token_id=f"tok-{name}")
        client = LocalClient(service, caller)
        service.directory.enter(caller)  # the token's own agent exists, as issuing the token made it
        return client

    return make


def trail(client: LocalClient) -> list[tuple[str, str, str]]:
    return [(e.actor, e.action, e.target) for e in client.audit_trail()]


# --- deleting an agent ----------------------------------------------------------------------------------


def test_deleting_an_agent_with_unread_mail_is_refused_unless_forced_and_the_forced_delete_is_recorded(db, alice, bob):
    alice.send(SendRequest(to="bob", text="one"))
    alice.send(SendRequest(to="bob", text="two"))
    with writes_nothing(db), pytest.raises(HasUnreadMail) as refused:
        alice.delete_agent("bob")
    assert refused.value.code == "has_unread_mail" and http_status(refused.value) == 409
    assert "bob has 2 unread messages" in refused.value.message and "--force" in refused.value.message
    assert len(everything(bob)) == 2

    deleted = alice.delete_agent("bob", force=True)
    assert (deleted.deleted, deleted.unread_dropped) == ("bob", 2)
    assert [a.name for a in alice.list_agents()] == ["alice"]
    (entry,) = alice.audit_trail()
    assert (entry.actor, entry.action, entry.target, entry.detail) == (
        "alice",
        "agent.delete",
        "bob",
        {"forced": True, "unread": 2},
    )
    assert (entry.token_kind, entry.token_id) == (None, None)  # the embedded store: no token


def test_an_agent_whose_mail_is_all_read_is_deleted_without_force_and_recorded(alice, bob):
    alice.send(SendRequest(to="bob", text="read me"))
    bob.read()
    assert alice.delete_agent("bob").unread_dropped == 0
    assert trail(alice) == [("alice", "agent.delete", "bob")]


# --- what an agent token may not do ------------------------------------------------------------------------


def test_an_agent_token_sending_to_a_new_name_gets_unknown_recipient_with_a_guess_and_creates_nothing(
    db, bob, agent_token
):
    eve = agent_token("eve")
    with writes_nothing(db), pytest.raises(UnknownRecipient) as refused:
        eve.send(SendRequest(to="bobb", text="typo"))
    assert "no agent named bobb exists" in refused.value.message
    assert "Did you mean 'bob'?" in refused.value.message
    assert [a.name for a in eve.list_agents()] == ["bob", "eve"]


def test_an_agent_tokens_send_to_one_that_exists_and_one_that_does_not_fails_whole(db, bob, agent_token):
    eve = agent_token("eve")
    with writes_nothing(db), pytest.raises(UnknownRecipient) as refused:
        eve.send(SendRequest(to=["bob", "nobody-here"], text="hello"))
    assert refused.value.details["addresses"] == ["nobody-here"] and "Nothing was sent" in refused.value.message
    assert bob.read(ReadQuery(peek=True)).items == []
    assert [a.name for a in bob.list_agents()] == ["bob", "eve"]


def test_an_agent_token_still_makes_its_own_agent_and_a_person_still_creates_one_by_sending(alice, agent_token):
    agent_token("eve")
    assert outcome(alice.send(SendRequest(to="newbie", text="welcome")), "newbie").new_agent is True
    assert [a.name for a in alice.list_agents()] == ["alice", "eve", "newbie"]


# --- threads ---------------------------------------------------------------------------------------------


def test_a_thread_is_joined_only_by_a_party_to_it_and_is_refused_as_an_unknown_message(db, alice, bob, carol):
    thread = alice.send(SendRequest(to="bob", text="just us")).thread_id
    with writes_nothing(db), pytest.raises(UnknownMessage) as refused:
        carol.send(SendRequest(to="bob", text="me too", thread_id=thread))
    assert refused.value.code == "unknown_message"

    assert (
        bob.send(SendRequest(to="alice", text="still us", thread_id=thread)).thread_id == thread
    )  # a recipient is a party
    assert alice.send(SendRequest(to="bob", text="and me", thread_id=thread)).thread_id == thread  # so is the sender
    fresh = new_id()
    assert (
        carol.send(SendRequest(to="bob", text="a thread of my own", thread_id=fresh)).thread_id == fresh
    )  # a new id: allowed


# --- invite-only channels ------------------------------------------------------------------------------------


def test_an_invite_only_channel_is_joined_only_by_invitation_and_says_who_can_add_you(db, alice, agent_token):
    alice.create_channel("inner", invite_only=True)
    eve = agent_token("eve")
    assert [(c.name, c.invite_only) for c in eve.list_channels()] == [("inner", True)]
    with writes_nothing(db), pytest.raises(Forbidden) as refused:
        eve.join_channel("inner")
    assert "invite-only" in refused.value.message and "alice" in refused.value.message
    assert "channel invite inner" in refused.value.message
    with writes_nothing(db), pytest.raises(NotMember):
        eve.send(SendRequest(to="#inner", text="let me in"))


def test_the_creator_and_a_person_add_and_remove_members_and_every_change_is_recorded(alice, bob, agent_token):
    owner = agent_token("owner")
    owner.create_channel("inner", invite_only=True)
    assert owner.invite_to_channel("inner", ["bob"]).members == 2  # its creator, with an agent token
    assert alice.invite_to_channel("#inner", ["alice"]).joined  # a person's credential
    assert [m.agent for m in bob.channel_members("inner")] == ["alice", "bob", "owner"]
    owner.remove_from_channel("inner", "bob")
    with pytest.raises(NotMember):
        bob.send(SendRequest(to="#inner", text="still here?"))
    assert trail(alice) == [
        ("owner", "channel.remove", "bob"),
        ("alice", "channel.invite", "alice"),
        ("owner", "channel.invite", "bob"),
        ("owner", "channel.create", "#inner"),
    ]
    assert {e.token_id for e in alice.audit_trail() if e.actor == "owner"} == {"tok-owner"}


def test_another_agents_token_cannot_add_or_remove_members_nor_see_an_invite_only_channels_members(
    db, alice, bob, agent_token
):
    alice.create_channel("inner", invite_only=True)
    alice.invite_to_channel("inner", ["bob"])
    eve = agent_token("eve")
    with writes_nothing(db):
        with pytest.raises(Forbidden):
            eve.invite_to_channel("inner", ["eve"])
        with pytest.raises(Forbidden):
            eve.remove_from_channel("inner", "bob")
        with pytest.raises(NotMember) as hidden:
            eve.channel_members("inner")
    assert "bob" not in hidden.value.message
    member = agent_token("bob")
    assert [m.agent for m in member.channel_members("inner")] == ["alice", "bob"]  # a member sees them


def test_an_invitation_naming_an_unknown_agent_adds_nobody(db, alice, bob):
    alice.create_channel("inner", invite_only=True)
    with writes_nothing(db), pytest.raises(UnknownAgent) as refused:
        alice.invite_to_channel("inner", ["bob", "bobby"])
    assert "nobody was added" in refused.value.message and "Did you mean 'bob'?" in refused.value.message
    with writes_nothing(db), pytest.raises(NotMember):
        alice.remove_from_channel("inner", "bob")


def test_open_channels_stay_open_and_are_not_recorded(alice, bob, agent_token):
    alice.create_channel("lobby")
    agent_token("eve").join_channel("lobby")
    assert not alice.list_channels()[0].invite_only
    assert alice.audit_trail() == []


# --- reading the audit trail --------------------------------------------------------------------------------


def test_the_audit_trail_is_for_persons_newest_first(db, alice, bob, agent_token):
    for name in ("x1", "x2", "x3"):
        alice.create_agent(name)
        alice.delete_agent(name)
    assert [e.target for e in alice.audit_trail(limit=2)] == ["x3", "x2"]
    eve = agent_token("eve")
    with writes_nothing(db), pytest.raises(Forbidden) as refused:
        eve.audit_trail()
    assert "user or admin token" in refused.value.message
    with pytest.raises(BadRequest):
        alice.audit_trail(limit=0)
