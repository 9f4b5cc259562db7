"""The A2A door: a Callboard token or nothing, another workspace sees nothing, bodies are bounded,
and a path that is no endpoint is a 404 with no token asked for."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.a2a.conftest import unique
from tests.support.a2a_hub import InProcessHub

pytestmark = pytest.mark.anyio

SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hello"}]}},
}
VERSION = {"A2A-Version": "1.0"}


@pytest.mark.parametrize("token", [None, "cb_not-a-real-token"])
async def test_no_task_without_a_valid_token(hub: InProcessHub, token: str | None) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    headers = {**VERSION, **({"Authorization": f"Bearer {token}"} if token else {})}
    async with httpx.AsyncClient(timeout=10, headers=headers) as http:
        rpc = await http.post(f"{hub.agent_url(bob)}/jsonrpc", json=SEND)
        rest = await http.post(f"{hub.agent_url(bob)}/rest/message:send", json=SEND["params"])
        listed = await http.get(f"{hub.agent_url(bob)}/rest/tasks")
    for answer in (rpc, rest, listed):
        assert answer.status_code == 401, answer.text
        assert answer.headers["www-authenticate"].lower().startswith("bearer")
        assert answer.json()["error"]["code"] == "unauthorized"
    assert hub.service.mailbox.inbox(hub.caller(bob)) == []


async def test_another_workspaces_token_finds_no_agent(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    elsewhere = hub.user_token(unique("ws"))
    outsider = hub.token(unique("outsider"), workspace=unique("ws"))
    for token, agent_header in ((elsewhere, {"X-Callboard-Agent": "mallory"}), (outsider, {})):
        headers = {**VERSION, "Authorization": f"Bearer {token}", **agent_header}
        async with httpx.AsyncClient(timeout=10, headers=headers) as http:
            rpc = await http.post(f"{hub.agent_url(bob)}/jsonrpc", json=SEND)
            rest = await http.get(f"{hub.agent_url(bob)}/rest/tasks")
        for answer in (rpc, rest):
            assert answer.status_code == 404, answer.text
            assert answer.json()["error"]["code"] == "unknown_agent"
    assert hub.service.mailbox.inbox(hub.caller(bob)) == []


async def test_an_unknown_agent_is_not_found(hub: InProcessHub) -> None:
    token = hub.token(unique("asker"))
    async with httpx.AsyncClient(timeout=10, headers={**VERSION, "Authorization": f"Bearer {token}"}) as http:
        answer = await http.post(f"{hub.agent_url(unique('nobody'))}/jsonrpc", json=SEND)
        short = await http.post(f"{hub.url}/a2a/default", json=SEND)
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "unknown_agent"
    assert short.status_code == 404


async def test_json_rpc_answers_with_and_without_a_trailing_slash(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    token = hub.token(unique("asker"))
    body = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "no-such-task"}}
    async with httpx.AsyncClient(timeout=10, headers={**VERSION, "Authorization": f"Bearer {token}"}) as http:
        for path in ("jsonrpc", "jsonrpc/"):
            answer = await http.post(f"{hub.agent_url(bob)}/{path}", json=body)
            assert answer.status_code == 200, answer.text
            assert answer.json()["error"]["code"] == -32001  # TaskNotFound


async def test_a_body_over_the_limit_is_refused_whole(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    token = hub.token(unique("asker"))
    big = {**SEND, "params": {"message": {**SEND["params"]["message"], "parts": [{"text": "x" * 2_000_000}]}}}
    async with httpx.AsyncClient(timeout=10, headers={**VERSION, "Authorization": f"Bearer {token}"}) as http:
        answer = await http.post(f"{hub.agent_url(bob)}/jsonrpc", json=big)
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "too_large"
    assert hub.service.mailbox.inbox(hub.caller(bob)) == []


async def test_bad_input_gets_an_a2a_error_not_a_crash(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    token = hub.token(unique("asker"))
    no_parts = {**SEND, "params": {"message": {"role": "ROLE_USER", "messageId": "m2", "parts": []}}}
    async with httpx.AsyncClient(timeout=10, headers={**VERSION, "Authorization": f"Bearer {token}"}) as http:
        empty = await http.post(f"{hub.agent_url(bob)}/jsonrpc", json=no_parts)
        not_json = await http.post(f"{hub.agent_url(bob)}/jsonrpc", content=b"{nope")
        old = await http.post(f"{hub.agent_url(bob)}/jsonrpc", json=SEND, headers={"A2A-Version": "0.3"})
    assert empty.json()["error"]["code"] in (-32602, -32600), empty.text
    assert not_json.json()["error"]["code"] == -32700
    assert old.json()["error"]["code"] == -32009  # VersionNotSupported: 0.3 is opt-in
    assert hub.service.mailbox.inbox(hub.caller(bob)) == []


async def test_a_json_rpc_body_not_declared_json_is_content_type_not_supported(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    token = hub.token(unique("asker"))
    headers = {**VERSION, "Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=10, headers=headers) as http:
        plain = await http.post(
            f"{hub.agent_url(bob)}/jsonrpc", content=str(SEND).encode(), headers={"Content-Type": "text/plain"}
        )
        charset = await http.post(
            f"{hub.agent_url(bob)}/jsonrpc/",
            content=json.dumps({**SEND, "method": "GetTask", "params": {"id": "none"}}).encode(),
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
    assert plain.status_code == 200 and plain.json()["error"]["code"] == -32005, plain.text
    assert charset.json()["error"]["code"] == -32001  # declared JSON: served (task not found)
    assert hub.service.mailbox.inbox(hub.caller(bob)) == []


# Paths under /a2a that are no endpoint: a segment short, one too many, a typo.
NEAR_MISSES = (
    "/a2a/{ws}/.well-known/agent-card.json",
    "/a2a/{ws}/{agent}",
    "/a2a/{ws}/{agent}/",
    "/a2a/{ws}/{agent}/.well-known",
    "/a2a/{ws}/{agent}/.well-known/",
    "/a2a/{ws}/{agent}/.well-known/agent.json",
    "/a2a/{ws}/{agent}/.well-known/agent-card.json/",
    "/a2a/{ws}/{agent}/agent-card.json",
    "/a2a/{ws}/{agent}/card",
    "/a2a/{ws}/{agent}/jsonrpc/more",
    "/a2a/{ws}/{agent}/rest",
    "/a2a/{ws}/{agent}/rest/",
    "/a2a/{ws}/{agent}/rest/nothing",
    "/a2a/{ws}/{agent}/rest/message:sent",
    "/a2a/{ws}",
    "/a2a/{ws}/",
    "/a2a/",
    "/a2a//{agent}/jsonrpc",
)


@pytest.mark.parametrize("token", [False, True])
async def test_a_path_that_is_no_endpoint_is_not_found_without_asking_for_a_token(
    hub: InProcessHub, token: bool
) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    headers = {**VERSION, **({"Authorization": f"Bearer {hub.token(unique('asker'))}"} if token else {})}
    async with httpx.AsyncClient(timeout=10, headers=headers) as http:
        for shape in NEAR_MISSES:
            path = shape.format(ws=hub.workspace, agent=bob)
            for method in ("GET", "POST"):
                answer = await http.request(method, f"{hub.url}{path}", json=SEND if method == "POST" else None)
                assert answer.status_code == 404, (method, path, answer.status_code, answer.text)
                assert answer.json()["error"]["code"] == "not_found", (method, path, answer.text)
                assert "agent-card.json" in answer.json()["error"]["message"]  # where the card is
                assert "www-authenticate" not in answer.headers
    assert hub.service.mailbox.inbox(hub.caller(bob)) == []


async def test_a_card_is_read_with_get_and_another_method_is_not_allowed(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    async with httpx.AsyncClient(timeout=10) as http:
        for method in ("POST", "PUT", "DELETE"):
            answer = await http.request(method, f"{hub.agent_url(bob)}/.well-known/agent-card.json")
            assert answer.status_code == 405, (method, answer.text)
            assert answer.json()["error"]["code"] == "method_not_allowed"
            assert answer.headers["allow"] == "GET, HEAD"
        assert (await http.head(f"{hub.agent_url(bob)}/.well-known/agent-card.json")).status_code == 200


async def test_the_hubs_own_card_path_says_where_each_agents_card_is(hub: InProcessHub) -> None:
    """An A2A client given the hub's address looks for a card at its root."""
    async with httpx.AsyncClient(timeout=10) as http:
        for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
            answer = await http.get(f"{hub.url}{path}")
            assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found", answer.text
            assert "/a2a/WORKSPACE/AGENT/.well-known/agent-card.json" in answer.json()["error"]["message"]


async def test_an_http_json_body_not_declared_json_is_content_type_not_supported(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    headers = {**VERSION, "Authorization": f"Bearer {hub.token(unique('asker'))}", "Content-Type": "text/plain"}
    async with httpx.AsyncClient(timeout=10, headers=headers) as http:
        answer = await http.post(f"{hub.agent_url(bob)}/rest/message:send", content=json.dumps(SEND["params"]))
    assert answer.status_code == 415, answer.text  # A2A 1.0 §5.4: 415 Unsupported Media Type
    [info] = answer.json()["error"]["details"]
    assert info["reason"] == "CONTENT_TYPE_NOT_SUPPORTED", answer.text
    assert hub.service.mailbox.inbox(hub.caller(bob)) == []
