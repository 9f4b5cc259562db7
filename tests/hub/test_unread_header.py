"""Every answer the hub gives an agent carries that agent's unread count (X-Callboard-Unread),
so a client knows it without a request of its own, and an MCP tool call through a hub is one
request."""

from __future__ import annotations

import httpx
import pytest
from mcp import Client as McpClient

from callboard.client.hub import HubClient
from callboard.headers import UNREAD_HEADER
from callboard.hub.routes import ROUTES
from callboard.mcp.tools import mailbox_server, one_client
from tests.hub.conftest import Hub, Tenant, unique
from tests.support.tool_results import ok


def unread_of(answer: httpx.Response) -> int | None:
    assert answer.status_code < 300, answer.text
    raw = answer.headers.get(UNREAD_HEADER)
    return None if raw is None else int(raw)


def test_every_answer_to_an_agent_carries_its_unread_count(tenant: Tenant) -> None:
    bob, carol = unique("bob"), unique("carol")
    with tenant.http(unique("alice")) as alice:
        for text in ("one", "two"):
            assert alice.post("/v1/messages", json={"to": bob, "text": text}).status_code == 201
    with tenant.http(bob) as http:
        assert unread_of(http.get("/v1/whoami")) == 2
        assert unread_of(http.get("/v1/who")) == 2
        assert unread_of(http.get("/v1/agents")) == 2
        assert unread_of(http.get("/v1/channels")) == 2
        assert unread_of(http.get("/v1/inbox")) == 2
        assert unread_of(http.post("/v1/read", params={"peek": "true", "limit": 1})) == 2
        assert unread_of(http.post("/v1/messages", json={"to": carol, "text": "hi"})) == 2
        assert unread_of(http.post("/v1/messages", json={"to": bob, "text": "to myself"})) == 3
        assert unread_of(http.post("/v1/read", params={"limit": 1})) == 2  # one taken
        assert unread_of(http.post("/v1/read")) == 0
        assert unread_of(http.get("/v1/tokens")) is None  # a credential's business: no agent's
    with tenant.http(carol) as http, http.stream("GET", "/v1/events") as stream:
        assert unread_of(stream) == 1


def test_the_openapi_document_states_the_header_on_every_agents_answer(hub: Hub) -> None:
    with hub.http() as http:
        document = http.get("/openapi.json").json()
    for route in ROUTES:
        answer = document["paths"][route.path][route.method.lower()]["responses"]["2XX"]
        assert (UNREAD_HEADER in answer.get("headers", {})) == (route.agent and not route.public), route


class Counting(httpx.HTTPTransport):
    """A transport that counts the requests a client makes."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(f"{request.method} {request.url.path}")
        return super().handle_request(request)


@pytest.mark.anyio
async def test_a_tool_call_through_a_hub_is_one_request(tenant: Tenant) -> None:
    transport = Counting()
    client = HubClient(tenant.hub.url, tenant.token, unique("alice"), transport=transport)
    try:
        async with McpClient(mailbox_server(one_client(client))) as tools:
            for tool, arguments in [
                ("send_message", {"to": unique("bob"), "message": "hello"}),
                ("list_agents", {}),
                ("list_channels", {}),
                ("read_messages", {}),
                ("who", {}),
            ]:
                transport.requests.clear()
                result = ok(await tools.call_tool(tool, arguments))
                assert len(transport.requests) == 1, (tool, transport.requests)
                assert result["unread"] == 0
            sent = ok(await tools.call_tool("send_message", {"to": client.whoami().agent, "message": "me"}))
            assert sent["unread"] == 1  # a send to oneself counts once it has committed
            transport.requests.clear()
            status = ok(await tools.call_tool("message_status", {"message_id": sent["message_id"]}))
            assert len(transport.requests) == 1 and status["unread"] == 1
    finally:
        client.close()
