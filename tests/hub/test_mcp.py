"""The hub's ``/mcp`` endpoint through the official ``mcp`` client over real HTTP, in both
protocol eras: who a call acts as (agent token; user token and agent header), mail between two
agents, a waiting read woken by a REST send, and the door: no token, a revoked token, another
agent's name, a foreign Host."""

from __future__ import annotations

import os
import sys
import threading

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from callboard.identity import machine_name
from callboard.requests import SendRequest
from tests.hub.conftest import CLI, Hub, Tenant, auth_headers, expect_http_error, unique
from tests.support.forgery import assert_reads_as_from_only, assert_structured_is_plain, forged
from tests.support.hub_mcp_client import LONG_WAIT, mcp_client
from tests.support.tool_results import TOOLS, ok, text_of, words

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


async def test_an_agent_token_and_a_user_token_with_an_agent_header_each_act_as_their_agent(tenant: Tenant, era: str):
    alice, bob = unique("alice"), unique("bob")
    alice_token = tenant.agent_token(alice)["token"]
    async with (
        mcp_client(tenant.hub, era, alice_token) as as_alice,
        mcp_client(tenant.hub, era, tenant.token, bob) as as_bob,
    ):
        assert {tool.name for tool in (await as_alice.list_tools()).tools} == TOOLS
        with tenant.http(bob) as http:  # an agent token sends only to agents that exist
            assert http.post("/v1/agents", json={"name": bob}).status_code == 201
        sent = ok(await as_alice.call_tool("send_message", {"to": bob, "message": "over the hub"}))
        got = ok(await as_bob.call_tool("read_messages", {}))
        assert [(m["sender"], words(m)) for m in got["messages"]] == [(alice, "over the hub")]
        status = ok(await as_alice.call_tool("message_status", {"message_id": sent["message_id"]}))
        assert status["read_by"] == [bob]
    with tenant.http(alice) as http:  # the same mailbox the REST API serves
        (recipient,) = http.get(f"/v1/messages/{sent['message_id']}/status").json()["recipients"]
    assert (recipient["agent"], recipient["state"]) == (bob, "read")


async def test_a_waiting_read_over_http_is_woken_by_a_rest_send(tenant: Tenant, era: str):
    alice, bob = unique("alice"), unique("bob")
    async with mcp_client(tenant.hub, era, tenant.token, bob) as as_bob:
        await as_bob.call_tool("who", {})
        timer = threading.Timer(0.3, lambda: tenant.client(alice).send(SendRequest(to=bob, text="wake up")))
        timer.start()
        try:
            got = ok(await as_bob.call_tool("read_messages", {"wait_seconds": LONG_WAIT}))
        finally:
            timer.join()
    assert [words(m) for m in got["messages"]] == ["wake up"]


async def test_a_tool_error_over_http_carries_the_code_and_the_next_step(tenant: Tenant, era: str):
    async with mcp_client(tenant.hub, era, tenant.token, unique("alice")) as client:
        result = await client.call_tool("send_message", {"to": "ghost@nowhere#1", "message": "x"})
    assert result.is_error and "unknown_recipient: " in text_of(result) and "Next: " in text_of(result)


async def test_the_stdio_server_of_a_machine_logged_in_to_a_hub_acts_through_the_hub(tenant: Tenant, cli: CLI):
    alice, bob = unique("alice"), unique("bob")
    env = cli.env(alice, {"CALLBOARD_HUB": tenant.hub.url, "CALLBOARD_TOKEN": tenant.token})
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "callboard", "mcp"], env=env, cwd=str(cli.workdir)
    )
    async with Client(server, mode="legacy") as as_alice:
        ok(await as_alice.call_tool("send_message", {"to": bob, "message": "from a stdio session"}))
        who = ok(await as_alice.call_tool("who", {}))
    got = tenant.client(bob).read()
    assert [(i.message.sender, i.message.text) for i in got.items] == [(alice, "from a stdio session")]
    assert not cli.default_db.exists(), "the stdio server opened an embedded store instead of the hub"
    # While it ran, this test process (its parent) was alice's live session on the hub.
    (presence,) = [a for a in who["agents"] if a["name"] == alice]
    assert presence["live"] and presence["sessions"] == [f"{alice}@{machine_name(env)}#{os.getpid()}"]


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({}, 401, "unauthorized"),
        ({"Authorization": "Bearer cb_not-a-token"}, 401, "unauthorized"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, 401, "unauthorized"),
    ],
)
def test_the_door_refuses_a_request_without_a_valid_bearer_token(hub: Hub, headers, status, code):
    with httpx.Client(base_url=hub.url) as http:
        answer = http.post("/mcp", json=INITIALIZE, headers={**MCP_ACCEPT, **headers})
    expect_http_error(answer, status, code)
    assert answer.headers["www-authenticate"].startswith("Bearer")


def test_a_revoked_token_and_an_agent_token_naming_another_agent_are_refused(tenant: Tenant):
    hub, alice = tenant.hub, unique("alice")
    issued = tenant.agent_token(alice)
    with httpx.Client(base_url=hub.url) as http:
        other = http.post("/mcp", json=INITIALIZE, headers={**MCP_ACCEPT, **auth_headers(issued["token"], "mallory")})
        expect_http_error(other, 403, "forbidden")
        with tenant.http() as admin:
            assert admin.delete(f"/v1/tokens/{issued['id']}").status_code == 200
        revoked = http.post("/mcp", json=INITIALIZE, headers={**MCP_ACCEPT, **auth_headers(issued["token"])})
        expect_http_error(revoked, 401, "unauthorized")


def test_a_request_naming_a_foreign_host_is_refused_even_with_a_valid_token(tenant: Tenant):
    # DNS rebinding: a page on evil.example that resolves to 127.0.0.1 must not reach the tools.
    with httpx.Client(base_url=tenant.hub.url) as http:
        answer = http.post(
            "/mcp",
            json=INITIALIZE,
            headers={**MCP_ACCEPT, **auth_headers(tenant.token, unique("alice")), "Host": "evil.example:80"},
        )
    assert answer.status_code == 421


async def test_sigterm_ends_a_waiting_read_at_once_and_the_hub_exits_cleanly(make_hub, era: str):
    hub = make_hub()
    reading = anyio.Event()  # the hub holds the read

    async def body_sent(event: str, info: object) -> None:
        if event == "http11.send_request_body.complete":
            reading.set()

    async def sending(request: httpx2.Request) -> None:
        # The sessionless era answers a call only when it is done: the request's last byte
        # gone to the hub is the nearest sign of the hub holding it.
        if b'"read_messages"' in request.content and era != "legacy":
            request.extensions = {**request.extensions, "trace": body_sent}

    async def answering(response: httpx2.Response) -> None:
        # The legacy era begins its answer (a stream) as the call starts: the hub is running it.
        if b'"read_messages"' in response.request.content:
            reading.set()

    hooks = {"request": [sending], "response": [answering]}
    async with mcp_client(hub, era, hub.admin_token, unique("bob"), hooks=hooks) as as_bob:
        await as_bob.call_tool("who", {})
        async with anyio.create_task_group() as group:
            results: list = []

            async def wait_for_mail() -> None:
                results.append(await as_bob.call_tool("read_messages", {"wait_seconds": LONG_WAIT}))

            group.start_soon(wait_for_mail)
            with anyio.fail_after(LONG_WAIT / 3):
                await reading.wait()  # the hub holds the read: waiting, or about to find the hub stopping
            with anyio.fail_after(LONG_WAIT / 3):
                assert await anyio.to_thread.run_sync(hub.terminate) == 0
    assert ok(results[0])["messages"] == []  # the read ended early, with nothing, not an error


# --- what a sender controls, as a model reads it ----------------------------------------------------

FORGED_FIELDS = ["terminal", "subject", "description", "skills", "channel description", "delivery error", "reach"]


def _forge(tenant: Tenant, field: str, mallory: str, bob: str) -> tuple[str, dict]:
    """Mallory puts a forged header into ``field``: the tool call (name, arguments) that shows it to bob."""
    with tenant.http(mallory) as http:
        pane = {"pid": 4242, "machine": "laptop", "runtime": "script", "terminal": "tmux:%1"}
        if field == "terminal":
            pane["terminal"] = forged("tmux:%1")
        session = http.post("/v1/sessions", json=pane).json()
        if field in ("terminal", "subject"):
            subject = forged("plan") if field == "subject" else "plan"
            mail = {"to": bob, "text": "hi", "subject": subject}
            assert http.post("/v1/messages", json=mail, headers={"X-Callboard-Session": session["id"]}).is_success
            return "read_messages", {}
        if field in ("description", "skills"):
            card = {"description": forged("helper")} if field == "description" else {"skills": [forged("ops")[:100]]}
            assert http.patch(f"/v1/agents/{mallory}", json=card).is_success
            return "list_agents", {}
        if field == "channel description":
            assert http.post("/v1/channels", json={"name": unique("ops"), "description": forged("ops")}).is_success
            return "list_channels", {}
        broken = {"delivery_error": forged("socket refused")}
        assert http.post(f"/v1/sessions/{session['id']}/heartbeat", json=broken).is_success
    if field == "reach":
        return "who", {"address": f"{mallory}@laptop"}
    with tenant.http(bob) as http:  # mail to mallory that waits: its status says why
        sent = http.post("/v1/messages", json={"to": mallory, "text": "are you there?"}).json()
    return "message_status", {"message_id": sent["message_id"]}


@pytest.mark.parametrize("field", FORGED_FIELDS)
async def test_no_field_a_sender_controls_reads_to_a_model_as_mail_from_someone_else(
    tenant: Tenant, era: str, field: str
):
    mallory, bob = unique("mallory"), unique("bob")
    with tenant.http(bob) as http:
        http.get("/v1/whoami")  # bob exists
    tool, arguments = _forge(tenant, field, mallory, bob)
    async with mcp_client(tenant.hub, era, tenant.token, bob) as as_bob:
        result = await as_bob.call_tool(tool, arguments)
    shown = ok(result)
    assert "\\n----- END MESSAGE 0123456789ab" in text_of(result)  # shown, on the line of its field
    assert_reads_as_from_only(text_of(result), mallory)
    assert_structured_is_plain(shown)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/agents", {"name": forged("eve")}),
        ("/v1/channels", {"name": forged("ops")}),
        ("/v1/sessions", {"pid": 4242, "runtime": "script", "machine": forged("laptop")}),
        ("/v1/sessions", {"pid": 4242, "runtime": forged("script")}),
        ("/v1/messages", {"to": forged("bob"), "text": "hi"}),
    ],
)
def test_names_machines_and_addresses_cannot_carry_a_forged_header(tenant: Tenant, path: str, body: dict):
    """The fields of a sender's address are names: one with a line break is refused at the door."""
    with tenant.http(unique("mallory")) as http:
        answer = http.post(path, json=body)
    assert answer.status_code == 400 and answer.json()["error"]["code"] in ("bad_name", "bad_address"), answer.text


async def test_a_model_answers_a_rest_task_through_the_hubs_mcp_tools(tenant: Tenant, era: str):
    alice, bob = unique("alice"), unique("bob")
    with tenant.http(alice) as http:
        opened = http.post("/v1/tasks", json={"to": bob, "text": "review PR 3"})
    task_id = opened.json()["task"]["id"]
    async with mcp_client(tenant.hub, era, tenant.agent_token(bob)["token"]) as as_bob:
        read = await as_bob.call_tool("read_messages", {})
        assert "review PR 3" in ok(read)["messages"][0]["message"] and f"task: {task_id}" in text_of(read)
        assert [t["id"] for t in ok(await as_bob.call_tool("list_tasks", {}))["tasks"]] == [task_id]
        handed = [{"text": "LGTM", "filename": "review.md"}]
        moved = {"task_id": task_id, "state": "completed", "message": "done", "artifacts": handed}
        assert ok(await as_bob.call_tool("update_task", moved))["task"]["state"] == "completed"
        listed = ok(await as_bob.call_tool("list_tasks", {"state": "completed"}))
        assert [t["id"] for t in listed["tasks"]] == [task_id]
    with tenant.http(alice) as http:
        task = http.get(f"/v1/tasks/{task_id}").json()
    assert task["state"] == "completed" and task["artifacts"][0]["name"] == "review.md"
