"""Looking writes nothing, over a hub: REST requests, /mcp tool calls (the official ``mcp``
client) and A2A calls that only look, or that fail, leave every table of the hub's store as it
was, though a user token names an agent nobody made in X-Callboard-Agent; a user token that
names no agent may look (who, agents, channels, runners, workspaces, tokens, audit, a message's
status), and the CLI of a machine logged in with it too. The hub's store is read before and after
each call by a connection of its own (tests/support/store_rows.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.hub.conftest import CLI, EventStream, Hub, auth_headers
from tests.support.postgres import fresh_schema
from tests.support.store_rows import changed, snapshot
from tests.support.tool_results import ok

WS = "crew"
UNKNOWN_ID = "0190aaaa-0000-7000-8000-000000000000"
NOBODY = "zed"
A2A_VERSION = {"A2A-Version": "1.0"}
T = TypeVar("T")


class Setup:
    """A fresh hub with alice, bob, #team (alice's), a message from alice to bob and a task bob
    was asked, in workspace crew; a user token for it."""

    def __init__(self, hub: Hub, db: str | Path) -> None:
        self.hub, self.db = hub, db
        self.token = hub.issue(kind="user", workspace=WS)["token"]
        with self.http("alice") as alice:
            self.message = _ok(alice.post("/v1/messages", json={"to": "bob", "text": "the build is green"}))[
                "message_id"
            ]
            _ok(alice.post("/v1/channels", json={"name": "team"}))
            self.task = _ok(alice.post("/v1/tasks", json={"to": "bob", "text": "review it"}))["task"]["id"]

    def http(self, agent: str | None) -> httpx.Client:
        return self.hub.http(self.token, agent)

    def wrote(self, call: Callable[[], T]) -> tuple[dict[str, str], T]:
        """What ``call()`` changed in the hub's store, and its answer."""
        before = snapshot(self.db)
        answer = call()
        return changed(before, snapshot(self.db)), answer

    def request(self, http: httpx.Client, method: str, path: str, body: Any) -> tuple[dict[str, str], httpx.Response]:
        """What the request changed in the hub's store, and its answer."""
        return self.wrote(
            lambda: http.request(method, path, json=body) if body is not None else http.request(method, path)
        )


def _ok(answer: httpx.Response) -> Any:
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


@pytest.fixture
def setup(make_hub: Callable[..., Hub]) -> Setup:
    hub = make_hub()
    return Setup(hub, hub.db_path)


@pytest.fixture(params=["sqlite", "postgres"])
def on_either_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Setup]:
    """The setup on a fresh hub of the embedded store, or of a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield request.getfixturevalue("setup")
        return
    with fresh_schema() as url:
        hub = Hub(tmp_path / "pg-hub", args=["--db", url], prints_admin=True)
        try:
            yield Setup(hub.start(), url)
        finally:
            hub.close()


# (method, path, JSON body or None): requests that only look, answered 200 to a user token
# whether or not it names an agent.
LOOKS: list[tuple[str, str, Any]] = [
    ("GET", "/v1/who", None),
    ("GET", "/v1/reach?address=bob", None),
    ("GET", "/v1/agents", None),
    ("GET", "/v1/agents/bob", None),
    ("GET", "/v1/agents/bob/card", None),
    ("GET", "/v1/remotes", None),
    ("GET", "/v1/channels", None),
    ("GET", "/v1/channels/team/members", None),
    ("GET", "/v1/runners", None),
    ("GET", "/v1/workspaces", None),
    ("GET", "/v1/tokens", None),
    ("GET", "/v1/audit", None),
]


def _own(setup: Setup) -> list[tuple[str, str, Any]]:
    """Requests on the caller's own mailbox, tasks and sessions that look, or fail."""
    return [
        ("GET", "/v1/whoami", None),
        ("GET", "/v1/inbox?all=true", None),
        ("POST", "/v1/read", None),
        ("POST", "/v1/read?peek=true", None),
        ("POST", "/v1/read?wait=0.2", None),
        ("POST", "/v1/surface?via=hook", None),
        ("GET", "/v1/tasks", None),
        ("GET", f"/v1/tasks/{setup.task}", None),
        ("GET", f"/v1/messages/{setup.message}/status", None),
        ("GET", f"/v1/messages/{UNKNOWN_ID}/status", None),
        ("POST", "/v1/messages", {"to": "bad name!", "text": "hi"}),
        ("POST", "/v1/messages", {"to": "bob", "text": "hi", "reply_to": UNKNOWN_ID}),
        ("POST", "/v1/messages", {"to": "#team", "text": "hi"}),
        ("POST", "/v1/ack", {"message_ids": [UNKNOWN_ID]}),
        ("POST", "/v1/mark-read", {"message_ids": [UNKNOWN_ID]}),
        ("POST", "/v1/channels", {"name": "team"}),
        ("POST", "/v1/channels/nowhere/join", None),
        ("POST", "/v1/channels/team/leave", None),
        ("POST", f"/v1/tasks/{setup.task}/cancel", None),
        ("POST", f"/v1/tasks/{setup.task}/update", {"state": "working"}),
        ("POST", f"/v1/sessions/{UNKNOWN_ID}/heartbeat", {}),
        ("DELETE", f"/v1/sessions/{UNKNOWN_ID}", None),
        ("DELETE", "/v1/agents/nobody", None),
    ]


def test_rest_requests_as_an_agent_nobody_made_that_look_or_fail_write_nothing(on_either_store: Setup) -> None:
    setup = on_either_store
    wrote = {}
    with setup.http(NOBODY) as http:
        for method, path, body in [*LOOKS, *_own(setup)]:
            found, answer = setup.request(http, method, path, body)
            assert answer.status_code < 500, answer.text
            if found:
                wrote[f"{method} {path} {body or ''}"] = found
        with EventStream(setup.hub.url, setup.token, NOBODY) as stream:  # a stream opened, and closed
            stream.ready()
    assert wrote == {}
    with setup.http("alice") as http:
        assert NOBODY not in [a["name"] for a in _ok(http.get("/v1/agents"))]


def test_a_user_token_naming_no_agent_looks_and_is_told_no_identity_for_the_rest(on_either_store: Setup) -> None:
    setup = on_either_store
    with setup.http(None) as http:
        for method, path, body in LOOKS:
            found, answer = setup.request(http, method, path, body)
            assert found == {}, path
            assert answer.status_code == 200, f"{method} {path}: {answer.text}"
            assert "x-callboard-unread" not in answer.headers  # no mailbox to count
        status = _ok(http.get(f"/v1/messages/{setup.message}/status"))  # as its sender sees it
        assert [(r["agent"], r["state"]) for r in status["recipients"]] == [("bob", "queued")]
        for method, path, body in [*_own(setup), ("POST", "/v1/messages", {"to": "bob", "text": "hi"})]:
            if "/status" in path:
                continue
            found, answer = setup.request(http, method, path, body)
            assert found == {}, path
            assert answer.status_code == 400, f"{method} {path}: {answer.text}"
            assert answer.json()["error"]["code"] == "no_identity", answer.text


@pytest.mark.anyio
async def test_mcp_tools_that_look_or_fail_write_nothing(setup: Setup, era: str) -> None:
    calls = [
        ("who", {}),
        ("who", {"address": "bob"}),
        ("list_agents", {}),
        ("list_channels", {}),
        ("list_tasks", {}),
        ("read_messages", {}),
        ("message_status", {"message_id": UNKNOWN_ID}),
        ("send_message", {"to": "bad name!", "message": "hi"}),
    ]
    headers = auth_headers(setup.token, NOBODY)
    untouched = snapshot(setup.db)  # the session's opening (legacy: initialize) writes nothing either
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(f"{setup.hub.url}/mcp", http_client=http), mode=era) as client:
            for name, arguments in calls:
                before = snapshot(setup.db)
                result = await client.call_tool(name, arguments)
                assert changed(before, snapshot(setup.db)) == {}, name
                if name != "send_message" and name != "message_status":
                    ok(result)
    assert changed(untouched, snapshot(setup.db)) == {}


def test_a2a_calls_that_look_or_fail_write_nothing(setup: Setup) -> None:
    base = f"{setup.hub.url}/a2a/{WS}/bob"
    headers = {**A2A_VERSION, **auth_headers(setup.token, NOBODY)}
    rpc = [
        {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": UNKNOWN_ID}},
        {"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "CancelTask", "params": {"id": setup.task}},
    ]
    with httpx.Client(headers=headers, timeout=15) as http:
        for body in rpc:
            found, answer = setup.request(http, "POST", f"{base}/jsonrpc", body)
            assert found == {}, body
            assert answer.status_code == 200, answer.text
        assert setup.request(http, "GET", f"{base}/rest/tasks", None)[0] == {}


@pytest.fixture
def logged_in(setup: Setup, make_cli: Callable[[str], CLI]) -> Iterator[tuple[CLI, dict[str, str]]]:
    cli = make_cli("person")
    yield cli, {"CALLBOARD_HUB": setup.hub.url, "CALLBOARD_TOKEN": setup.token, "CALLBOARD_WORKSPACE": WS}


def test_the_cli_of_a_person_logged_in_with_a_user_token_looks_without_an_agent(setup: Setup, logged_in) -> None:
    cli, env = logged_in
    assert cli.outside_any_project()
    commands = [
        ("who",),
        ("agent", "list"),
        ("agent", "card", "bob"),
        ("channel", "list"),
        ("runner", "status"),
        ("workspace", "list"),
        ("token", "list"),
        ("audit",),
        ("status", setup.message),
    ]
    for args in commands:
        found, proc = setup.wrote(partial(cli.run, *args, "--json", env=env))
        assert found == {}, args
        assert proc.returncode == 0, f"{' '.join(args)}: {proc.stdout} {proc.stderr}"
    refused = cli.run("send", "bob", "hi", env=env)
    assert refused.returncode == 2 and refused.stderr.startswith("error: no_identity: "), refused.stderr
    assert not cli.default_db.exists(), "a command opened an embedded store instead of the hub"
