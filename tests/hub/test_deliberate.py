"""Actions with large effects, over real HTTP: what an agent token may not do that a person's token
(user or admin) may — create agents by sending, manage an invite-only channel it did not create,
see that channel's members, read the audit trail — a delete that drops unread mail only when
forced, and replies only into threads the sender is party to. REST, MCP and the CLI."""

from __future__ import annotations

from typing import Any

import pytest

from tests.hub.conftest import Tenant, expect_error, expect_http_error, unique
from tests.support.hub_mcp_client import mcp_client
from tests.support.tool_results import text_of


def _ok(answer: Any, status: int = 200) -> Any:
    assert answer.status_code == status, f"{answer.request.method} {answer.request.url}: {answer.text}"
    return answer.json()


def _exists(tenant: Tenant, *agents: str) -> None:
    """Create these agents (looking creates nobody)."""
    for agent in agents:
        with tenant.http(agent) as http:
            _ok(http.post("/v1/agents", json={"name": agent}), 201)


def test_an_agent_token_cannot_create_agents_by_sending_but_a_user_token_can(tenant: Tenant) -> None:
    reviewer, eve = unique("reviewer"), unique("eve")
    _exists(tenant, reviewer)
    with tenant.hub.http(tenant.agent_token(eve)["token"]) as http:
        refused = http.post("/v1/messages", json={"to": reviewer[:-1], "text": "a typo"})
    error = expect_http_error(refused, 404, "unknown_recipient")
    assert f"Did you mean '{reviewer}'?" in error["message"]
    with tenant.http(reviewer) as http:
        assert reviewer[:-1] not in [a["name"] for a in _ok(http.get("/v1/agents"))]
        sent = _ok(http.post("/v1/messages", json={"to": reviewer[:-1], "text": "welcome"}), 201)
    assert sent["recipients"][0]["new_agent"] is True


def test_an_invite_only_channel_is_managed_by_its_creator_and_user_tokens_and_its_members_are_theirs_to_see(
    tenant: Tenant,
) -> None:
    owner, eve, bob, carol, alice = (unique(n) for n in ("owner", "eve", "bob", "carol", "alice"))
    _exists(tenant, bob, carol, alice)
    channel = unique("inner")
    with tenant.hub.http(tenant.agent_token(owner)["token"]) as as_owner:
        created = _ok(as_owner.post("/v1/channels", json={"name": channel, "invite_only": True}), 201)
        assert created["invite_only"] is True
        assert _ok(as_owner.post(f"/v1/channels/{channel}/members", json={"agents": [bob]}))["members"] == 2

    with tenant.hub.http(tenant.agent_token(eve)["token"]) as as_eve:
        expect_http_error(as_eve.post(f"/v1/channels/{channel}/members", json={"agents": [eve]}), 403, "forbidden")
        refused = expect_http_error(as_eve.post(f"/v1/channels/{channel}/join"), 403, "forbidden")
        assert owner in refused["message"] and "invite-only" in refused["message"]
        hidden = expect_http_error(as_eve.get(f"/v1/channels/{channel}/members"), 403, "not_member")
        assert bob not in hidden["message"]
        expect_http_error(as_eve.delete(f"/v1/channels/{channel}/members/{bob}"), 403, "forbidden")
        assert [c["invite_only"] for c in _ok(as_eve.get("/v1/channels")) if c["name"] == channel] == [True]

    with tenant.http(alice) as as_person:  # a user token, acting as an agent that is no member
        assert _ok(as_person.post(f"/v1/channels/{channel}/members", json={"agents": [carol]}))["members"] == 3
        members = [m["agent"] for m in _ok(as_person.get(f"/v1/channels/{channel}/members"))]
        assert members == sorted([owner, bob, carol])
        assert _ok(as_person.delete(f"/v1/channels/{channel}/members/{carol}"))["members"] == 2
    with tenant.hub.http(tenant.agent_token(bob)["token"]) as as_member:  # a member sees them too
        assert len(_ok(as_member.get(f"/v1/channels/{channel}/members"))) == 2


def test_a_delete_that_drops_unread_mail_needs_force_and_the_audit_trail_is_for_user_and_admin_tokens(
    tenant: Tenant,
) -> None:
    bob, operator, eve = unique("bob"), unique("operator"), unique("eve")
    with tenant.http(operator) as http:
        _ok(http.post("/v1/messages", json={"to": bob, "text": "unread"}), 201)
        refused = expect_http_error(http.delete(f"/v1/agents/{bob}"), 409, "has_unread_mail")
        assert "1 unread message" in refused["message"] and "force" in refused["message"]
        assert bob in [a["name"] for a in _ok(http.get("/v1/agents"))]
        assert _ok(http.delete(f"/v1/agents/{bob}", params={"force": "true"})) == {
            "deleted": bob,
            "unread_dropped": 1,
        }
        (entry,) = _ok(http.get("/v1/audit"))
    assert (entry["actor"], entry["action"], entry["target"]) == (operator, "agent.delete", bob)
    assert (entry["token_kind"], entry["token_id"], entry["detail"]) == (
        "user",
        tenant.token_id,
        {"forced": True, "unread": 1},
    )
    with tenant.hub.admin("root", tenant.workspace) as http:
        assert _ok(http.get("/v1/audit", params={"limit": 5})) == [entry]
    with tenant.hub.http(tenant.agent_token(eve)["token"]) as http:
        refused = expect_http_error(http.get("/v1/audit"), 403, "forbidden")
    assert "user or admin token" in refused["message"]


def test_a_thread_is_closed_to_an_agent_token_that_is_no_party_to_it(tenant: Tenant) -> None:
    alice, bob, eve = unique("alice"), unique("bob"), unique("eve")
    with tenant.http(alice) as http:
        thread = _ok(http.post("/v1/messages", json={"to": bob, "text": "just us"}), 201)["thread_id"]
    with tenant.hub.http(tenant.agent_token(eve)["token"]) as http:
        answer = http.post("/v1/messages", json={"to": bob, "text": "me too", "thread_id": thread})
        expect_http_error(answer, 404, "unknown_message")
        fresh = "01900000-0000-7000-8000-000000000001"
        assert (
            _ok(http.post("/v1/messages", json={"to": bob, "text": "mine", "thread_id": fresh}), 201)["thread_id"]
            == fresh
        )
    with tenant.http(bob) as http:
        got = _ok(http.post("/v1/read"))["items"]
    assert [i["message"]["parts"][0]["text"] for i in got] == ["just us", "mine"]


@pytest.mark.anyio
async def test_an_mcp_send_refused_to_an_agent_token_is_a_tool_error_that_says_what_to_do(
    tenant: Tenant, era: str
) -> None:
    reviewer, eve = unique("reviewer"), unique("eve")
    _exists(tenant, reviewer)
    channel = unique("inner")
    with tenant.http(reviewer) as http:
        _ok(http.post("/v1/channels", json={"name": channel, "invite_only": True}), 201)
    async with mcp_client(tenant.hub, era, tenant.agent_token(eve)["token"]) as client:
        typo = await client.call_tool("send_message", {"to": reviewer + "x", "message": "hi"})
        closed = await client.call_tool("send_message", {"to": f"#{channel}", "message": "hi"})
    assert typo.is_error and "unknown_recipient: " in text_of(typo)
    assert f"Did you mean '{reviewer}'?" in text_of(typo) and "Next: call list_agents" in text_of(typo)
    assert closed.is_error and "not_member: " in text_of(closed)
    assert "invite-only" in text_of(closed) and "Next: " in text_of(closed)


def test_by_cli_an_agent_token_machine_is_refused_what_a_user_token_machine_may_do(tenant: Tenant, make_cli) -> None:
    person, agent_machine = make_cli("person"), make_cli("agent")
    owner, eve = unique("owner"), unique("eve")
    person.run_json("login", tenant.hub.url, "--token", tenant.token)
    agent_machine.run_json("login", tenant.hub.url, "--token", tenant.agent_token(eve)["token"])
    channel = unique("inner")
    person.run_json("channel", "create", channel, "--invite-only", agent=owner)

    expect_error(agent_machine.run("channel", "join", channel, "--json"), "forbidden", as_json=True)
    expect_error(agent_machine.run("audit", "--json"), "forbidden", as_json=True)

    added = person.run_json("channel", "invite", channel, eve, agent=owner)
    assert added["members"] == 2
    assert [c["invite_only"] for c in agent_machine.run_json("channel", "list") if c["name"] == channel] == [True]
    trail = person.run_json("audit", agent=owner)
    assert [(e["action"], e["target"], e["token_kind"]) for e in trail] == [
        ("channel.invite", eve, "user"),
        ("channel.create", f"#{channel}", "user"),
    ]
    table = person.run("audit", agent=owner)
    assert table.returncode == 0 and f"user token {tenant.token_id}" in table.stdout
