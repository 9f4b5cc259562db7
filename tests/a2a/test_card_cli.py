"""``callboard agent card NAME``: the card as the hub serves it, through ``callboard up`` (its
flags included); on the embedded store, built with the default hub address, and said so."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from a2a.types import AgentCard
from google.protobuf.json_format import ParseDict

from tests.hub.conftest import CLI, Hub, unique

pytestmark = pytest.mark.e2e


def test_the_card_through_a_hub_is_the_one_it_serves(tmp_path: Path) -> None:
    flags = ["--public-url", "https://hub.example.com", "--a2a-compat-0-3", "--allow-private-webhooks"]
    hub = Hub(tmp_path / "hub", args=flags).start()
    try:
        cli = CLI.on_hub_machine(hub)
        bob = unique("bob")
        cli.run_json("agent", "create", bob, "--description", "reviews pull requests", "--skill", "review", agent=bob)
        printed = cli.run_json("agent", "card", bob, agent=bob)
        served = httpx.get(f"{hub.url}/a2a/default/{bob}/.well-known/agent-card.json", timeout=10).json()
        human = cli.run("agent", "card", bob, agent=bob)
        pushed = loopback_push_config(hub, bob)
    finally:
        hub.close()
    assert pushed["result"]["url"] == "http://127.0.0.1:9/hook", pushed  # --allow-private-webhooks reached the hub
    assert printed == served
    card = ParseDict(printed, AgentCard(), ignore_unknown_fields=True)
    assert {(i.protocol_binding, i.protocol_version, i.url) for i in card.supported_interfaces} == {
        ("JSONRPC", "1.0", f"https://hub.example.com/a2a/default/{bob}/jsonrpc"),
        ("HTTP+JSON", "1.0", f"https://hub.example.com/a2a/default/{bob}/rest"),
        ("JSONRPC", "0.3", f"https://hub.example.com/a2a/default/{bob}/jsonrpc"),
    }
    assert [s.name for s in card.skills] == ["review"] and card.description == "reviews pull requests"
    assert human.returncode == 0 and "JSONRPC" in human.stdout and "review" in human.stdout


def test_on_the_embedded_store_the_card_says_where_a_hub_would_serve_it(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "machine")
    cli.run_json("agent", "create", "bob", "--description", "reviews", "--skill", "review", agent="bob")
    proc = cli.run("agent", "card", "bob", "--json", agent="bob")
    assert proc.returncode == 0, proc.stderr
    assert "no hub" in proc.stderr and "127.0.0.1:8465" in proc.stderr
    card = ParseDict(__import__("json").loads(proc.stdout), AgentCard(), ignore_unknown_fields=True)
    assert card.supported_interfaces[0].url == "http://127.0.0.1:8465/a2a/default/bob/jsonrpc"
    missing = cli.run("agent", "card", "nobody-here", "--json", agent="bob")
    assert missing.returncode == 2 and "unknown_agent" in missing.stdout


def loopback_push_config(hub: Hub, agent: str) -> dict:
    """A task for ``agent`` and a push config to a loopback URL on it, over JSON-RPC."""
    token = hub.issue(agent=unique("asker"))["token"]
    headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
    url = f"{hub.url}/a2a/default/{agent}/jsonrpc"
    message = {"role": "ROLE_USER", "messageId": unique("m"), "parts": [{"text": "hi"}]}
    send = {"message": message, "configuration": {"returnImmediately": True}}
    with httpx.Client(headers=headers, timeout=10) as http:
        task = http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send}).json()
        config = {"taskId": task["result"]["task"]["id"], "url": "http://127.0.0.1:9/hook"}
        body = {"jsonrpc": "2.0", "id": 2, "method": "CreateTaskPushNotificationConfig", "params": config}
        return http.post(url, json=body).json()


def test_up_refuses_a_public_url_that_is_not_one(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "machine")
    proc = cli.run("up", "--port", "0", "--public-url", "ftp://hub.example.com")
    assert proc.returncode == 2 and "--public-url" in proc.stderr, proc.stderr
