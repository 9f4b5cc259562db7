"""Bad input at the service's door: each refusal raises its error with its stable code, and the
call writes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from callboard.client.local import LocalClient
from callboard.errors import (
    AlreadyExists,
    BadAddress,
    BadName,
    BadRequest,
    CallboardError,
    NotMember,
    TooLarge,
    UnknownAgent,
    UnknownChannel,
    UnknownMessage,
    UnknownRecipient,
    UnknownSession,
)
from callboard.model import (
    Caller,
    new_id,
)
from callboard.requests import InboxQuery, ReadQuery, SendRequest, SessionRequest
from tests.support.service_setup import WS
from tests.support.store_rows import writes_nothing

# --- bad input: the right error, and nothing written ------------------------------------------------------


@dataclass
class World:
    alice: LocalClient
    bob: LocalClient
    carol: LocalClient
    dave: LocalClient  # in no channel
    to_bob: str  # a message from alice to bob
    bob_session: str


@pytest.fixture
def world(alice, bob, carol, dave, team) -> World:
    message_id = alice.send(SendRequest(to="bob", text="hello")).message_id
    session = bob.register_session(runtime="claude-code")
    return World(alice, bob, carol, dave, message_id, session.id)


def _case(label: str, call: Callable[[World], object], error: type[CallboardError], code: str) -> Any:
    return pytest.param(call, error, code, id=f"{code}: {label}")


BAD_INPUTS = [
    _case(
        "malformed address",
        lambda w: w.alice.send(SendRequest(to="not an address!", text="hi")),
        BadAddress,
        "bad_address",
    ),
    _case("empty address", lambda w: w.alice.send(SendRequest(to="", text="hi")), BadAddress, "bad_address"),
    _case("no recipients", lambda w: w.alice.send(SendRequest(to=[], text="hi")), BadAddress, "bad_address"),
    _case("stray comma", lambda w: w.alice.send(SendRequest(to="bob,,carol", text="hi")), BadAddress, "bad_address"),
    _case(
        "a2a address",
        lambda w: w.alice.send(SendRequest(to="a2a:ftp://x.test/agent", text="hi")),
        BadAddress,
        "bad_address",
    ),
    _case("agent name", lambda w: w.alice.create_agent("Bad Name!"), BadName, "bad_name"),
    _case("channel name", lambda w: w.alice.create_channel("no spaces"), BadName, "bad_name"),
    _case("describe name", lambda w: w.alice.describe_agent("-bob"), BadName, "bad_name"),
    _case("runtime name", lambda w: w.bob.register_session(runtime="Claude Code"), BadName, "bad_name"),
    _case(
        "machine name",
        lambda w: w.bob.register_session(runtime="codex", machine="bad host!", pid=5),
        BadName,
        "bad_name",
    ),
    _case("empty text", lambda w: w.alice.send(SendRequest(to="newbie", text="")), BadRequest, "bad_request"),
    _case("blank text", lambda w: w.alice.send(SendRequest(to="newbie", text="  \n ")), BadRequest, "bad_request"),
    _case("no content", lambda w: w.alice.send(SendRequest(to="newbie")), BadRequest, "bad_request"),
    _case(
        "part with two contents",
        lambda w: w.alice.send(SendRequest(to="newbie", parts=[{"text": "a", "url": "https://x.test"}])),
        BadRequest,
        "bad_request",
    ),
    _case(
        "part with no content",
        lambda w: w.alice.send(SendRequest(to="newbie", text="hi", parts=[{"filename": "a.txt"}])),
        BadRequest,
        "bad_request",
    ),
    _case(
        "part with unknown field",
        lambda w: w.alice.send(SendRequest(to="newbie", parts=[{"txt": "a"}])),
        BadRequest,
        "bad_request",
    ),
    _case(
        "empty idempotency key",
        lambda w: w.alice.send(SendRequest(to="newbie", text="hi", idempotency_key="")),
        BadRequest,
        "bad_request",
    ),
    _case("read limit 0", lambda w: w.bob.read(ReadQuery(limit=0)), BadRequest, "bad_request"),
    _case("read after -1", lambda w: w.bob.read(ReadQuery(after=-1)), BadRequest, "bad_request"),
    _case("read wait -1", lambda w: w.bob.read(ReadQuery(wait=-1)), BadRequest, "bad_request"),
    _case("inbox limit 0", lambda w: w.bob.inbox(InboxQuery(limit=0)), BadRequest, "bad_request"),
    _case("ack nothing", lambda w: w.bob.ack([]), BadRequest, "bad_request"),
    _case(
        "pid 0", lambda w: w.bob.register_session(runtime="codex", machine="farhost", pid=0), BadRequest, "bad_request"
    ),
    _case("empty skill", lambda w: w.alice.create_agent("helper", skills=[""]), BadRequest, "bad_request"),
    _case(
        "oversized body",
        lambda w: w.alice.send(SendRequest(to="newbie", text="x" * (256 * 1024))),
        TooLarge,
        "too_large",
    ),
    _case(
        "too many parts",
        lambda w: w.alice.send(SendRequest(to="newbie", parts=[{"text": "x"}] * 33)),
        TooLarge,
        "too_large",
    ),
    _case(
        "too long subject",
        lambda w: w.alice.send(SendRequest(to="newbie", text="hi", subject="s" * 257)),
        TooLarge,
        "too_large",
    ),
    _case(
        "too many recipients",
        lambda w: w.alice.send(SendRequest(to=[f"r{i}" for i in range(101)], text="hi")),
        TooLarge,
        "too_large",
    ),
    _case("too long description", lambda w: w.alice.create_agent("helper", "d" * 2001), TooLarge, "too_large"),
    _case(
        "too many skills",
        lambda w: w.alice.update_agent("bob", skills=[f"s{i}" for i in range(65)]),
        TooLarge,
        "too_large",
    ),
    # Values JSON cannot carry: stored, they came back as null, and the mailbox stopped reading.
    *(
        _case(
            label, lambda w, part=part: w.alice.send(SendRequest(to="newbie", parts=[part])), BadRequest, "bad_request"
        )
        for label, part in [
            ("NaN in a data part", {"data": {"x": float("nan")}}),
            ("Infinity in a data part", {"data": [float("inf")]}),
            ("1e400 as a data part", {"data": json.loads("1e400")}),
            ("NaN in a part's metadata", {"text": "t", "metadata": {"m": float("nan")}}),
            ("a data part JSON has no form for", {"data": {"when": object()}}),
        ]
    ),
    # Numbers and text past their bounds (bounds.py), refused before anything is stored.
    *(
        _case(
            f"pid {pid}",
            lambda w, pid=pid: w.bob.register_session(runtime="codex", machine="far", pid=pid),
            BadRequest,
            "bad_request",
        )
        for pid in (2**31, 2**63, 2**70)
    ),
    _case(
        "a process start time past 2**63-1",
        lambda w: w.bob.service.register_session(
            Caller(workspace=WS, agent="bob"), SessionRequest(pid=5, runtime="codex", machine="far", proc_start=2**64)
        ),
        BadRequest,
        "bad_request",
    ),
    _case(
        "too long terminal",
        lambda w: w.bob.register_session(runtime="codex", machine="far", pid=5, terminal="t" * 201),
        TooLarge,
        "too_large",
    ),
    _case(
        "terminal with a NUL",
        lambda w: w.bob.register_session(runtime="codex", machine="far", pid=5, terminal="tmux:\x00"),
        BadRequest,
        "bad_request",
    ),
    _case("too long delivery error", lambda w: w.bob.heartbeat(w.bob_session, "e" * 501), TooLarge, "too_large"),
    _case("read after past 2**63-1", lambda w: w.bob.read(ReadQuery(after=2**63)), BadRequest, "bad_request"),
    _case("ack of 1001 ids", lambda w: w.bob.ack([new_id() for _ in range(1001)]), TooLarge, "too_large"),
    _case(
        "subject with a NUL",
        lambda w: w.alice.send(SendRequest(to="newbie", text="hi", subject="a\x00b")),
        BadRequest,
        "bad_request",
    ),
    _case("too long skill", lambda w: w.alice.create_agent("helper", skills=["s" * 101]), TooLarge, "too_large"),
    _case("malformed id to ack", lambda w: w.bob.ack(["not-an-id"]), UnknownMessage, "unknown_message"),
    _case("unknown id to ack", lambda w: w.bob.ack([new_id()]), UnknownMessage, "unknown_message"),
    _case("malformed id for status", lambda w: w.alice.message_status("42"), UnknownMessage, "unknown_message"),
    _case("unknown id for status", lambda w: w.alice.message_status(new_id()), UnknownMessage, "unknown_message"),
    _case(
        "reply to a malformed id",
        lambda w: w.alice.send(SendRequest(to="bob", text="re", reply_to="nope")),
        UnknownMessage,
        "unknown_message",
    ),
    _case(
        "reply to an unknown id",
        lambda w: w.alice.send(SendRequest(to="bob", text="re", reply_to=new_id())),
        UnknownMessage,
        "unknown_message",
    ),
    _case(
        "reply to a message not yours",
        lambda w: w.carol.send(SendRequest(to="alice", text="re", reply_to=w.to_bob)),
        UnknownMessage,
        "unknown_message",
    ),
    _case(
        "malformed thread id",
        lambda w: w.alice.send(SendRequest(to="bob", text="hi", thread_id="t-1")),
        UnknownMessage,
        "unknown_message",
    ),
    _case("describe", lambda w: w.alice.describe_agent("ghost"), UnknownAgent, "unknown_agent"),
    _case("update", lambda w: w.alice.update_agent("ghost", "boo"), UnknownAgent, "unknown_agent"),
    _case("delete", lambda w: w.alice.delete_agent("ghost"), UnknownAgent, "unknown_agent"),
    _case("join", lambda w: w.alice.join_channel("nochan"), UnknownChannel, "unknown_channel"),
    _case("leave", lambda w: w.alice.leave_channel("nochan"), UnknownChannel, "unknown_channel"),
    _case("members", lambda w: w.alice.channel_members("#nochan"), UnknownChannel, "unknown_channel"),
    _case("agent", lambda w: w.alice.create_agent("bob", "another bob"), AlreadyExists, "already_exists"),
    _case("channel", lambda w: w.bob.create_channel("team", "mine now"), AlreadyExists, "already_exists"),
    _case("heartbeat unknown", lambda w: w.bob.heartbeat(new_id()), UnknownSession, "unknown_session"),
    _case("end unknown", lambda w: w.bob.end_session(new_id()), UnknownSession, "unknown_session"),
    _case("heartbeat another agent's", lambda w: w.alice.heartbeat(w.bob_session), UnknownSession, "unknown_session"),
    _case("end another agent's", lambda w: w.alice.end_session(w.bob_session), UnknownSession, "unknown_session"),
    _case("leave a channel not joined", lambda w: w.dave.leave_channel("team"), NotMember, "not_member"),
    _case(
        "post to a channel not joined",
        lambda w: w.dave.send(SendRequest(to="#team", text="hi")),
        NotMember,
        "not_member",
    ),
    _case(
        "post to no channel",
        lambda w: w.alice.send(SendRequest(to="#nochannel", text="hi")),
        UnknownChannel,
        "unknown_channel",
    ),
    _case(
        "one of two unknown",
        lambda w: w.alice.send(SendRequest(to="bob,carol@nomachine", text="hi")),
        UnknownRecipient,
        "unknown_recipient",
    ),
]


@pytest.mark.parametrize("call, error, code", BAD_INPUTS)
def test_bad_input_raises_its_error_with_its_code_and_writes_nothing(db, world, call, error, code):
    with writes_nothing(db), pytest.raises(error) as raised:
        call(world)
    assert raised.value.code == code
    assert raised.value.message
