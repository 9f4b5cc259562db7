"""Discovery through the real CLI on the embedded store: agents by skill, and the directory
exported as OASF records another directory can import."""

from __future__ import annotations

import json
from datetime import datetime


def _agents(cli) -> None:
    cli.run_json("agent", "create", "bob", "--description", "reviews pull requests", "--skill", "Review", agent="me")
    cli.run_json("agent", "create", "carol", "--skill", "deploy", "--skill", "code review", agent="me")


def test_agent_list_with_a_skill_shows_only_those_offering_it(cli, expect_error) -> None:
    _agents(cli)
    assert [a["name"] for a in cli.run_json("agent", "list", "--skill", "review", agent="me")] == ["bob"]
    assert [a["name"] for a in cli.run_json("agent", "list", "--skill", "DEPLOY", agent="me")] == ["carol"]
    assert cli.run_json("agent", "list", "--skill", "cooking", agent="me") == []
    human = cli.run("agent", "list", "--skill", "review", agent="me")
    assert human.returncode == 0 and "bob" in human.stdout and "carol" not in human.stdout, human.stdout
    expect_error(cli.run("agent", "list", "--skill", " ", "--json", agent="me"), "bad_request", as_json=True)


def test_agent_export_writes_oasf_records_with_skills_and_card_locators(cli, tmp_path) -> None:
    _agents(cli)
    printed = cli.run("agent", "export", "--base-url", "https://hub.example:8465", agent="me")
    assert printed.returncode == 0, printed.stderr
    document = json.loads(printed.stdout)
    assert (document["format"], document["source"]["hub"]) == ("oasf", "https://hub.example:8465")
    records = {r["name"]: r for r in document["records"]}
    assert set(records) == {"bob", "carol"}  # "me" only created others: it is no agent itself
    bob = records["bob"]
    for field in ("name", "version", "schema_version", "description", "authors", "created_at", "skills", "locators"):
        assert bob[field], field  # OASF's required fields, filled
    assert bob["description"] == "reviews pull requests" and bob["skills"] == [{"name": "Review"}]
    datetime.fromisoformat(bob["created_at"])  # RFC 3339
    card = "https://hub.example:8465/a2a/default/bob/.well-known/agent-card.json"
    assert bob["locators"] == [{"type": "url", "urls": [card], "annotations": {"a2a.card": "true"}}]
    [module] = bob["modules"]
    assert (module["name"], module["data"]["card_url"]) == ("integration/a2a", card)
    card_data = module["data"]["card_data"]  # the card the hub serves, whole
    assert {i["protocolBinding"] for i in card_data["supportedInterfaces"]} == {"JSONRPC", "HTTP+JSON"}
    assert all(
        i["url"].startswith("https://hub.example:8465/a2a/default/bob/") for i in card_data["supportedInterfaces"]
    )
    assert [(s["id"], s["name"]) for s in card_data["skills"]] == [("review", "Review")]
    assert records["carol"]["description"]  # none given: the record still says what it is

    target = tmp_path / "directory.json"
    wrote = cli.run("agent", "export", "--output", target, "--json", agent="me")
    assert json.loads(wrote.stdout) == {"output": str(target), "format": "oasf", "records": 2}
    assert "no hub" in wrote.stderr  # the embedded store: the cards assume the default hub address, and say so
    on_disk = json.loads(target.read_text())
    assert on_disk["source"]["hub"] == "http://127.0.0.1:8465"
    assert on_disk["records"][0]["locators"][0]["urls"][0].startswith("http://127.0.0.1:8465/a2a/default/")


def test_agent_export_refuses_a_bad_address_or_format_and_writes_nothing(cli, expect_error, tmp_path) -> None:
    target = tmp_path / "never.json"
    refused = cli.run("agent", "export", "--base-url", "hub.example", "--output", target, "--json", agent="me")
    assert "http://" in expect_error(refused, "bad_request", as_json=True)["message"]
    expect_error(cli.run("agent", "export", "--format", "xml", "--json", agent="me"), "usage", as_json=True)
    unwritable = cli.run("agent", "export", "--output", tmp_path / "no" / "such" / "dir.json", "--json", agent="me")
    expect_error(unwritable, "bad_request", as_json=True)
    assert not target.exists()
