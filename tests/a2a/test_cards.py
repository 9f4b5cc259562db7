"""Every agent's A2A card: public, shaped as A2A 1.0 wants, cached right, and changing with the agent."""

from __future__ import annotations

import httpx
import pytest
from a2a.types import AgentCard
from google.protobuf.json_format import ParseDict

from callboard.a2a.server.cards import GENERATION_EXTENSION
from tests.a2a.conftest import fetch_card, unique
from tests.support.a2a_hub import InProcessHub

pytestmark = pytest.mark.anyio


async def test_the_card_names_the_agent_its_skills_interfaces_capabilities_and_bearer_auth(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews pull requests", ["review", "code search"])
    card = await fetch_card(hub, bob)
    assert card.name == bob and card.description == "reviews pull requests"
    assert [(s.id, s.name, list(s.tags)) for s in card.skills] == [
        ("review", "review", ["review"]),
        ("code-search", "code search", ["code search"]),
    ]
    interfaces = {i.protocol_binding: i for i in card.supported_interfaces}
    assert set(interfaces) == {"JSONRPC", "HTTP+JSON"}
    assert interfaces["JSONRPC"].url == f"{hub.agent_url(bob)}/jsonrpc"
    assert interfaces["HTTP+JSON"].url == f"{hub.agent_url(bob)}/rest"
    assert {i.protocol_version for i in card.supported_interfaces} == {"1.0"}
    assert not any(i.tenant for i in card.supported_interfaces)
    assert card.capabilities.streaming and card.capabilities.push_notifications
    assert [e.uri for e in card.capabilities.extensions] == [GENERATION_EXTENSION]
    assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "bearer"
    assert "bearer" in card.security_requirements[0].schemes


async def test_an_agent_without_skills_still_offers_one(hub: InProcessHub) -> None:
    plain = unique("plain")
    hub.describe(plain, "", [])
    card = await fetch_card(hub, plain)
    assert len(card.skills) == 1 and card.skills[0].id == "mailbox"


async def test_the_card_is_cached_by_etag_and_date_and_changes_with_the_description(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "first words", ["review"])
    url = f"{hub.agent_url(bob)}/.well-known/agent-card.json"
    async with httpx.AsyncClient(timeout=10) as http:
        first = await http.get(url)
        assert first.status_code == 200
        etag, modified = first.headers["etag"], first.headers["last-modified"]
        assert "max-age" in first.headers["cache-control"]
        assert (await http.get(url, headers={"If-None-Match": etag})).status_code == 304
        assert (await http.get(url, headers={"If-Modified-Since": modified})).status_code == 304
        hub.describe(bob, "second words", ["review"])
        changed = await http.get(url, headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.json()["description"] == "second words" and changed.headers["etag"] != etag


async def test_no_card_for_an_unknown_agent_or_workspace(hub: InProcessHub) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        for path in (f"/a2a/default/{unique('nobody')}", f"/a2a/{unique('ws')}/bob", "/a2a/default/Not%20A%20Name"):
            answer = await http.get(f"{hub.url}{path}/.well-known/agent-card.json")
            assert answer.status_code == 404, (path, answer.text)
            assert answer.json()["error"]["code"] == "unknown_agent"


async def test_the_rest_api_serves_the_same_card(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", ["review"])
    token = hub.token(unique("asker"))
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {token}"}) as http:
        served = (await http.get(f"{hub.agent_url(bob)}/.well-known/agent-card.json")).json()
        answer = await http.get(f"{hub.url}/v1/agents/{bob}/card")
    assert answer.status_code == 200, answer.text
    assert answer.json() == served
    ParseDict(answer.json(), AgentCard(), ignore_unknown_fields=True)


async def test_a_public_url_names_the_interfaces(tmp_path) -> None:
    from callboard.hub.app import A2AOptions

    with InProcessHub(tmp_path, a2a=A2AOptions(public_url="https://hub.example.com/")) as other:
        other.describe("bob", "reviews", [])
        card = await fetch_card(other, "bob")
    assert {i.url for i in card.supported_interfaces} == {
        "https://hub.example.com/a2a/default/bob/jsonrpc",
        "https://hub.example.com/a2a/default/bob/rest",
    }
