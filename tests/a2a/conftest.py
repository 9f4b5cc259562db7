"""The A2A face against a real hub on a loopback port (``tests/support/a2a_hub.py``), spoken to
by the official a2a-sdk client over both bindings. The worker side answers through the Service,
as an agent's MCP tools and ``callboard task update`` do."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import httpx
import pytest
from a2a.client import A2AClientError, Client, ClientConfig, ClientFactory
from a2a.types import AgentCard
from a2a.utils.errors import A2AError
from google.protobuf.json_format import ParseDict

from tests.support.a2a_hub import InProcessHub
from tests.support.outside_agent import OutsideAgent

BINDINGS = ("JSONRPC", "HTTP+JSON")
A2A_ERRORS = (A2AClientError, A2AError)  # what the SDK client raises for an error answer


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessHub]:
    with InProcessHub(tmp_path_factory.mktemp("a2a-hub"), allow_private_webhooks=True) as running:
        yield running


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OutsideAgent]:
    """A real outside A2A agent (the SDK's own server, streaming) for the outbound tests."""
    agent = OutsideAgent(tmp_path_factory.mktemp("outside")).start()
    yield agent
    agent.stop()


@pytest.fixture(scope="module")
def outside_polled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OutsideAgent]:
    """The same, with a card that offers no streaming (the client polls)."""
    agent = OutsideAgent(tmp_path_factory.mktemp("outside-polled"), streaming=False).start()
    yield agent
    agent.stop()


@pytest.fixture(autouse=True)
def _no_hub_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test during which the hub logged an error (a traceback: bad input must not cause one)."""
    if "hub" not in request.fixturenames:
        yield
        return
    hub: InProcessHub = request.getfixturevalue("hub")
    before = len(hub.errors)
    yield
    assert hub.errors[before:] == [], "the hub logged errors:\n" + "\n".join(hub.errors[before:])


async def fetch_card(hub: InProcessHub, agent: str, workspace: str | None = None) -> AgentCard:
    async with httpx.AsyncClient(timeout=10) as http:
        answer = await http.get(f"{hub.agent_url(agent, workspace)}/.well-known/agent-card.json")
    assert answer.status_code == 200, answer.text
    return ParseDict(answer.json(), AgentCard(), ignore_unknown_fields=True)


@asynccontextmanager
async def a2a_client(
    card: AgentCard, token: str | None, binding: str, *, streaming: bool = False
) -> AsyncIterator[Client]:
    """The official SDK's client for ``card`` over ``binding``, with ``token`` (None: none)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding])
        client = ClientFactory(config).create(card)
        try:
            yield client
        finally:
            await client.close()
