"""Discovery through the hub: GET /v1/agents?skill=, HubClient.list_agents(skill=), and the
CLI's OASF export locating each agent's card on the hub it is logged in to."""

from __future__ import annotations

import json

from tests.hub.conftest import CLI, Tenant


def test_agents_filter_by_skill_over_rest_and_the_hub_client(tenant: Tenant) -> None:
    me = tenant.client("me")
    try:
        me.create_agent("bob", "reviews pull requests", ["Review"])
        me.create_agent("carol", "deploys", ["deploy", "code review"])
        assert [a.name for a in me.list_agents(skill="review")] == ["bob"]
        assert {a.name for a in me.list_agents()} == {"bob", "carol"}  # "me" only created others: no agent
    finally:
        me.close()
    with tenant.http("me") as http:
        assert [a["name"] for a in http.get("/v1/agents", params={"skill": "DEPLOY"}).json()] == ["carol"]
        assert http.get("/v1/agents", params={"skill": "cooking"}).json() == []
        blank = http.get("/v1/agents", params={"skill": "  "})
        assert blank.status_code == 400 and blank.json()["error"]["code"] == "bad_request", blank.text
        long = http.get("/v1/agents", params={"skill": "x" * 500})
        assert long.status_code == 413 and long.json()["error"]["code"] == "too_large", long.text
        stated = http.get("/openapi.json").json()["paths"]["/v1/agents"]["get"]["parameters"]
        assert "skill" in {p["name"] for p in stated}


def test_agent_export_through_a_hub_locates_each_card_on_that_hub(tenant: Tenant, cli: CLI) -> None:
    cli.run_json("login", tenant.hub.url, "--token", tenant.token)
    cli.run_json("agent", "create", "bob", "--skill", "review", agent="me")
    printed = cli.run("agent", "export", agent="me")
    assert printed.returncode == 0, printed.stderr
    document = json.loads(printed.stdout)
    assert document["source"] == {
        "callboard_version": document["source"]["callboard_version"],
        "hub": tenant.hub.url,
        "workspaces": [tenant.workspace],
    }
    bob = next(r for r in document["records"] if r["name"] == "bob")
    card_url = f"{tenant.hub.url}/a2a/{tenant.workspace}/bob/.well-known/agent-card.json"
    assert bob["locators"][0]["urls"] == [card_url]
    with tenant.http("me") as http:  # the record carries the very card the hub serves there
        assert bob["modules"][0]["data"]["card_data"] == http.get(card_url).json()
