"""The mailbox's MCP tools through the official ``mcp`` client, in memory, in both protocol eras:
the tool set, two agents exchanging mail, a waiting read woken by a send, every error path."""

from __future__ import annotations

import threading
import time

import anyio
import pytest
from mcp import Client

from callboard.client.local import LocalClient
from callboard.mcp.tools import DEFAULT_READ_LIMIT, mailbox_server, one_client
from callboard.requests import ReadQuery, SendRequest, SurfaceQuery
from tests.support.tool_results import TOOLS, failed, ok, text_of, words
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio

LONG_WAIT = 30.0  # a read that waits this long and returns early was woken


async def test_the_tool_set_is_the_eight_named_tools_each_described_briefly_with_an_output_schema(tools):
    async with tools("alice") as alice:
        listed = (await alice.list_tools()).tools
    assert {tool.name for tool in listed} == TOOLS and len(listed) <= 8
    for tool in listed:
        assert tool.description and len(tool.description) <= 80, tool
        assert tool.output_schema and "unread" in tool.output_schema["properties"], tool.name


async def test_two_agents_exchange_mail_and_the_sender_sees_it_read(tools):
    async with tools("alice") as alice, tools("bob") as bob:
        await bob.call_tool("who", {})  # bob exists
        sent = ok(await alice.call_tool("send_message", {"to": "bob", "message": "deploy at 5?", "subject": "plan"}))
        assert [(r["agent"], r["state"]) for r in sent["recipients"]] == [("bob", "queued")]
        assert ok(await bob.call_tool("list_channels", {}))["unread"] == 1  # every result carries it

        got = await bob.call_tool("read_messages", {})
        inbox = ok(got)
        assert [(m["id"], m["sender"], words(m)) for m in inbox["messages"]] == [
            (sent["message_id"], "alice", "deploy at 5?")
        ]
        assert "subject: plan" in inbox["messages"][0]["message"] and "not your user's" in inbox["note"]
        assert inbox["unread"] == 0
        text = text_of(got)
        assert "not your user's" in text and f"id: {sent['message_id']}" in text and "from: alice" in text
        assert ok(await bob.call_tool("read_messages", {}))["messages"] == []  # drained

        reply = ok(
            await bob.call_tool("send_message", {"to": "alice", "message": "yes", "reply_to": sent["message_id"]})
        )
        assert reply["thread_id"] == sent["thread_id"]
        status = ok(await alice.call_tool("message_status", {"message_id": sent["message_id"]}))
        assert status["read_by"] == ["bob"] and [d["state"] for d in status["recipients"]] == ["read"]
        assert status["unread"] == 1  # bob's reply


async def test_a_channel_post_reaches_its_members_and_list_tools_describe_the_workspace(agents, tools):
    agents("alice").create_channel("ops", "deploys")
    agents("bob").join_channel("ops")
    async with tools("alice") as alice, tools("bob") as bob:
        sent = ok(await alice.call_tool("send_message", {"to": "#ops", "message": "freeze"}))
        assert [r["agent"] for r in sent["recipients"]] == ["bob"]
        assert [m["channel"] for m in ok(await bob.call_tool("read_messages", {}))["messages"]] == ["ops"]
        channels = ok(await bob.call_tool("list_channels", {}))["channels"]
        assert channels == [
            {"name": "ops", "description": "deploys", "members": 2, "joined": True, "invite_only": False}
        ]
        found = ok(await bob.call_tool("list_agents", {"search": "ali"}))["agents"]
        assert [(a["name"], a["live"]) for a in found] == [("alice", False)]


async def test_a_waiting_read_is_woken_by_a_send_and_returns_it_before_its_wait_ends(agents, tools):
    async with tools("bob") as bob:
        await bob.call_tool("who", {})
        events, workspace = agents("bob").service.events, agents("bob").caller.workspace

        def send_once_bob_waits() -> None:
            wait_until(lambda: events.waiting(workspace, "bob"), what="bob's read to wait")
            agents("alice").send(SendRequest(to="bob", text="wake up"))

        sender = threading.Thread(target=send_once_bob_waits)
        started = time.monotonic()
        sender.start()
        with anyio.fail_after(LONG_WAIT / 2):
            inbox = ok(await bob.call_tool("read_messages", {"wait_seconds": LONG_WAIT}))
        sender.join()
    assert [words(m) for m in inbox["messages"]] == ["wake up"]
    assert time.monotonic() - started < LONG_WAIT


async def test_a_read_takes_at_most_its_limit_oldest_first_and_says_how_many_wait(agents, tools):
    alice = agents("alice")
    for i in range(DEFAULT_READ_LIMIT + 2):
        alice.send(SendRequest(to="bob", text=f"m{i}"))
    async with tools("bob") as bob:
        first = ok(await bob.call_tool("read_messages", {}))
        assert [words(m) for m in first["messages"]] == [f"m{i}" for i in range(DEFAULT_READ_LIMIT)]
        assert first["unread"] == 2 and "call read_messages" in text_of(await bob.call_tool("who", {}))


async def test_an_unknown_session_address_fails_with_its_code_a_guess_and_the_next_step(agents, tools):
    agents("alice").create_agent("backend")
    async with tools("alice") as alice:
        text = failed(
            await alice.call_tool("send_message", {"to": "bakend@nowhere#1", "message": "x", "require_live": True}),
            "unknown_recipient",
        )
    assert "Did you mean 'backend'?" in text and "Next: call list_agents" in text


async def test_a_new_name_close_to_an_existing_agent_is_sent_with_a_note_that_asks_about_it(agents, tools):
    agents("alice").create_agent("backend")
    async with tools("alice") as alice:
        sent = ok(await alice.call_tool("send_message", {"to": "bakend", "message": "x"}))
    (recipient,) = sent["recipients"]
    assert "was created" in recipient["note"] and "Did you mean 'backend'?" in recipient["note"]


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("send_message", {"to": "bob", "message": "x", "require_live": True}, "no_live_session"),
        ("send_message", {"to": "#nobody-here", "message": "x"}, "unknown_channel"),
        ("send_message", {"to": "bob,#nobody-here", "message": "x"}, "unknown_channel"),
        ("send_message", {"to": "not a name!", "message": "x"}, "bad_address"),
        ("send_message", {"to": "bob", "message": ""}, "bad_request"),
        ("send_message", {"to": "bob", "message": "x", "reply_to": "not-an-id"}, "unknown_message"),
        ("read_messages", {"limit": 0}, "bad_request"),
        ("read_messages", {"wait_seconds": -1}, "bad_request"),
        ("message_status", {"message_id": "01a22a79-cc88-7243-b3ba-ce07ca146eb5"}, "unknown_message"),
    ],
)
async def test_bad_calls_are_tool_errors_with_their_code_and_a_sentence(agents, tools, tool, arguments, code):
    agents("bob").who()
    async with tools("alice") as alice:
        text = failed(await alice.call_tool(tool, arguments), code)
    assert "Traceback" not in text and len(text) < 600
    assert agents("bob").read(ReadQuery(peek=True)).items == []  # nothing was sent


async def test_a_post_to_a_channel_the_caller_has_not_joined_says_to_join_or_write_directly(agents, tools):
    agents("bob").create_channel("ops")
    async with tools("alice") as alice:
        text = failed(await alice.call_tool("send_message", {"to": "#ops", "message": "x"}), "not_member")
    assert "Next: post only to channels you have joined" in text


async def test_missing_or_mistyped_arguments_are_tool_errors_not_crashes(tools):
    async with tools("alice") as alice:
        missing = await alice.call_tool("send_message", {"to": "bob"})
        mistyped = await alice.call_tool("read_messages", {"limit": "many"})
    assert missing.is_error and "message" in text_of(missing)
    assert mistyped.is_error and "limit" in text_of(mistyped)


async def test_mail_names_the_sending_session_and_who_says_why_an_address_cannot_be_reached(agents, tools, era):
    alice = agents("alice")
    session = alice.register_session(runtime="claude-code", pid=5120, machine="laptop", terminal="tmux:%3")
    in_session = LocalClient(alice.service, alice.caller.model_copy(update={"session_id": session.id}))
    async with Client(mailbox_server(one_client(in_session)), mode=era) as pane, tools("bob") as bob:
        await bob.call_tool("who", {})
        ok(await pane.call_tool("send_message", {"to": "bob", "message": "from my pane"}))
        got = await bob.call_tool("read_messages", {})
        (mail,) = ok(got)["messages"]
        assert (mail["sender_address"], mail["sender_terminal"]) == ("alice@laptop#5120", "tmux:%3")
        assert "from: alice (session alice@laptop#5120, in tmux:%3)" in text_of(got)

        live = ok(await bob.call_tool("who", {"address": "alice@laptop#5120"}))["reach"]
        assert live["state"] == "live" and live["session"] == "alice@laptop#5120"
        alice.end_session(session.id)
        gone = await bob.call_tool("who", {"address": "alice@laptop#5120"})
        assert ok(gone)["reach"]["state"] == "no_live_session"
        assert "session alice@laptop#5120 is not live: ended" in text_of(gone)
        refused = failed(
            await bob.call_tool("send_message", {"to": "alice@laptop#5120", "message": "still there?"}),
            "no_live_session",
        )
        assert "ended" in refused


async def test_message_status_tells_handed_from_surfaced_with_the_session_and_the_history(agents, tools):
    bob = agents("bob")
    session = bob.register_session(runtime="claude-code", machine="farhost", pid=4242)
    pane = LocalClient(bob.service, bob.caller.model_copy(update={"session_id": session.id}))
    async with tools("alice") as alice:
        sent = ok(await alice.call_tool("send_message", {"to": "bob", "message": "deploy at 5?"}))
        pane.surface(SurfaceQuery(via="socket"))
        result = await alice.call_tool("message_status", {"message_id": sent["message_id"]})
        (row,) = ok(result)["recipients"]
        assert (row["state"], row["handed_to"]) == ("handed", "bob@farhost#4242")
        assert "handed to bob@farhost#4242, waiting for its turn" in text_of(result)
        pane.confirm_surfaced([sent["message_id"]])
        (row,) = ok(await alice.call_tool("message_status", {"message_id": sent["message_id"]}))["recipients"]
        assert (row["state"], row["handed_to"]) == ("surfaced", None) and row["surfaced_at"]
        assert [step.split(" ", 2)[1] for step in row["history"]][-2:] == ["handed", "surfaced"]
        assert "(transcript)" in row["history"][-1]


async def test_list_agents_with_a_skill_finds_who_can_do_a_job(agents, tools):
    agents("alice").create_agent("bob", "reviews pull requests", ["review"])
    agents("alice").create_agent("carol", "deploys", ["deploy"])
    async with tools("alice") as alice:
        found = ok(await alice.call_tool("list_agents", {"skill": "Review"}))
        assert [(a["name"], a["skills"]) for a in found["agents"]] == [("bob", ["review"])]
        assert "bob" in text_of(await alice.call_tool("list_agents", {"skill": "review"}))
        assert ok(await alice.call_tool("list_agents", {"skill": "cooking"}))["agents"] == []
        failed(await alice.call_tool("list_agents", {"skill": " "}), "bad_request")
