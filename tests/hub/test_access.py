"""Who may see what: a table over the whole API. Every route is tried by a credential of another
agent (an agent token acting as itself, and naming the victim) and of another workspace (a
user token of workspace B, acting as an agent of the same name, and naming workspace A).
Nothing of the victim may come back, and nothing of the victim may change. Missing, unknown
and revoked tokens are refused on every route."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from callboard.hub.routes import ROUTES, Route
from callboard.requests import SendRequest
from tests.hub.conftest import EventStream, Hub, Tenant, auth_headers, expect_http_error, new_tenant, unique
from tests.support.outside_agent import OutsideAgent
from tests.support.waiting import wait_until

PRIVATE_ROUTES = [r for r in ROUTES if not r.public]
CREDENTIAL_ONLY = {
    ("GET", "/v1/workspaces"),
    ("POST", "/v1/tokens"),
    ("GET", "/v1/tokens"),
    ("DELETE", "/v1/tokens/{token_id}"),
}


def _key(route: Route) -> tuple[str, str]:
    return (route.method, route.path)


@dataclass
class Attacker:
    token: str
    agent: str | None  # the X-Callboard-Agent header
    workspace_header: str | None
    acts_in: str  # the workspace its requests really act in
    acts_as: str  # the agent its requests really act as


@dataclass
class World:
    hub: Hub
    a: Tenant
    b: Tenant
    names: dict[str, str]  # placeholder -> value
    bob_token: str
    attackers: dict[str, Attacker] = field(default_factory=dict)
    cross_agent_markers: list[str] = field(default_factory=list)
    cross_workspace_markers: list[str] = field(default_factory=list)

    def fill(self, value: Any, extra: dict[str, str]) -> Any:
        """``value`` with every ``{placeholder}`` in its strings replaced."""
        if isinstance(value, str):
            return value.format(**self.names, **extra)
        if isinstance(value, list):
            return [self.fill(v, extra) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v, extra) for k, v in value.items()}
        return value

    def as_bob(self) -> httpx.Client:
        return self.hub.http(self.bob_token)


def _ok(answer: httpx.Response, status: int) -> Any:
    assert answer.status_code == status, (
        f"{answer.request.method} {answer.request.url}: {answer.status_code} {answer.text}"
    )
    return answer.json()


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OutsideAgent]:
    """An outside A2A agent, for workspace A's registered remote."""
    agent = OutsideAgent(tmp_path_factory.mktemp("outside")).start()
    yield agent
    agent.stop()


@pytest.fixture(scope="module")
def world(hub: Hub, outside: OutsideAgent) -> Iterator[World]:
    a, b = new_tenant(hub), new_tenant(hub)
    names = {
        "wsA": a.workspace,
        "wsB": b.workspace,
        "alice": unique("alice"),
        "bob": unique("bob"),
        "eve": unique("eve"),
        "carol": unique("carol"),
        "dave": unique("dave"),  # an agent of A that B creates in B (so never a marker)
        "chan": unique("chan"),
        "chan2": unique("chan2"),  # a channel of A that B creates in B
        "inner": unique("inner"),  # an invite-only channel of A: alice created it, invited bob (recorded)
        "secret_dm": unique("SECRET-DM"),
        "secret_subject": unique("SECRET-SUBJECT"),
        "secret_post": unique("SECRET-POST"),
        "secret_desc": unique("SECRET-DESC"),
        "laptop": unique("laptop"),
        "secret_task": unique("SECRET-TASK"),
        "secret_goal": unique("SECRET-GOAL"),
        "secret_scope": unique("SECRET-SCOPE"),
        "secret_answer": unique("SECRET-ANSWER"),
        "remote": unique("remote"),  # an outside A2A agent of A, registered with a token
        "remote_b": unique("remote-b"),  # B's own, at the same URL
        "remote_url": outside.url,
        "secret_remote_token": unique("SECRET-REMOTE-TOKEN"),
        "secret_runner": unique("SECRET-RUNNER"),  # what bob's runner works on: A's to see, not B's
    }
    n = names
    bob = a.agent_token(n["bob"])
    eve = a.agent_token(n["eve"])
    with hub.http(bob["token"]) as http:
        _ok(http.patch(f"/v1/agents/{n['bob']}", json={"description": n["secret_desc"]}), 200)
        session = _ok(http.post("/v1/sessions", json={"pid": os.getpid(), "runtime": "script"}), 201)
        on_laptop = {"pid": LAPTOP_PID, "runtime": "script", "machine": n["laptop"], "proc_start": 111}
        laptop = _ok(http.post("/v1/sessions", json=on_laptop), 201)  # a machine the hub cannot look into
        _ok(http.post("/v1/channels", json={"name": n["chan"]}), 201)
        runner = {**RUNNER_REPORT, "agent": n["bob"], "detail": n["secret_runner"]}
        _ok(http.put(f"/v1/runners/{n['bob']}", json=runner), 200)
        held = _ok(http.post("/v1/leases", json={"scope": n["secret_scope"], "patterns": ["src/"]}), 201)["lease"]
    with a.http(n["alice"]) as http:
        _ok(http.post(f"/v1/channels/{n['chan']}/join"), 200)
        _ok(http.post("/v1/channels", json={"name": n["chan2"]}), 201)
        _ok(http.post("/v1/agents", json={"name": n["dave"]}), 201)
        _ok(http.post("/v1/channels", json={"name": n["inner"], "invite_only": True}), 201)
        _ok(http.post(f"/v1/channels/{n['inner']}/members", json={"agents": [n["bob"]]}), 200)
        dm = _ok(
            http.post("/v1/messages", json={"to": n["bob"], "text": n["secret_dm"], "subject": n["secret_subject"]}),
            201,
        )
        asked = _ok(http.post("/v1/tasks", json={"to": n["bob"], "text": n["secret_task"]}), 201)["task"]
        a_round = _ok(http.post("/v1/rounds", json={"goal": n["secret_goal"], "agents": [n["bob"], n["alice"]]}), 201)
        remote = {"name": n["remote"], "url": outside.url, "token": n["secret_remote_token"]}
        _ok(http.post("/v1/remotes", json=remote), 201)
    with hub.http(bob["token"]) as http:
        post = _ok(http.post("/v1/messages", json={"to": f"#{n['chan']}", "text": n["secret_post"]}), 201)
        answer = {"state": "input-required", "message": n["secret_answer"]}  # bob asks alice back
        _ok(http.post(f"/v1/tasks/{asked['id']}/update", json=answer), 200)
    with b.http(n["bob"]) as http:  # workspace B has an agent of the same name
        _ok(http.get("/v1/whoami"), 200)
    names.update(m_secret=dm["message_id"], m_post=post["message_id"], s_bob=session["id"], tok_bob_id=bob["id"])
    spare = hub.issue(b.token, agent=n["bob"])  # a token of B's that B may revoke in its own workspace
    names.update(
        s_bob_laptop=laptop["id"],
        tok_b_spare=spare["id"],
        t_secret=asked["id"],
        r_secret=a_round["id"],
        l_secret=held["id"],
    )
    world = World(hub, a, b, names, bob["token"])
    world.attackers = {
        "eve": Attacker(eve["token"], None, None, a.workspace, n["eve"]),
        "eve-naming-bob": Attacker(eve["token"], n["bob"], None, a.workspace, n["eve"]),
        "carol": Attacker(a.token, n["carol"], None, a.workspace, n["carol"]),
        "B": Attacker(b.token, n["bob"], None, b.workspace, n["bob"]),
        "B-naming-A": Attacker(b.token, n["bob"], a.workspace, b.workspace, n["bob"]),
    }
    world.cross_agent_markers = [n[k] for k in ("secret_dm", "secret_subject", "secret_post", "m_secret", "m_post")]
    world.cross_agent_markers += [bob["id"], a.token_id, n["secret_task"], n["secret_answer"], asked["id"]]
    world.cross_agent_markers += [n["secret_goal"], a_round["id"]]
    world.cross_agent_markers.append(n["secret_remote_token"])  # a remote's token is never shown, to anyone
    world.cross_workspace_markers = world.cross_agent_markers + [
        a.workspace,
        n["alice"],
        n["eve"],
        n["carol"],
        n["chan"],
        n["secret_desc"],
        n["s_bob"],
        eve["id"],
        n["remote"],
        n["secret_runner"],
        n["secret_scope"],  # a workspace's leases are its own agents' business
        held["id"],
    ]
    yield world


# --- the requests ---------------------------------------------------------------------------------

PID = os.getpid()
LAPTOP_PID = 31337
NOW = datetime.now(UTC).isoformat()
RUNNER_REPORT = {
    "machine": "box",
    "pid": 4321,
    "cli": "codex",
    "state": "working",
    "started_at": NOW,
    "updated_at": NOW,
}
REQUESTS: dict[tuple[str, str], dict[str, Any]] = {  # what each route is asked, aimed at the victim
    ("GET", "/v1/whoami"): {},
    ("POST", "/v1/messages"): {"json": {"to": "{alice}", "text": "hi", "reply_to": "{m_secret}"}},
    ("GET", "/v1/messages/{message_id}/status"): {"path": {"message_id": "{m_secret}"}},
    ("POST", "/v1/read"): {"params": {"after": 0, "peek": "true", "limit": 1000}},
    ("GET", "/v1/events"): {"params": {"after": 0}},
    ("GET", "/v1/inbox"): {"params": {"all": "true", "limit": 1000}},
    ("POST", "/v1/ack"): {"json": {"message_ids": ["{m_secret}", "{m_post}"]}},
    ("POST", "/v1/mark-read"): {"json": {"message_ids": ["{m_secret}", "{m_post}"]}},
    ("POST", "/v1/surface"): {"params": {"via": "hook", "limit": 1000}},
    ("POST", "/v1/surfaced"): {"json": {"message_ids": ["{m_secret}", "{m_post}"]}},
    ("POST", "/v1/receipts"): {"json": {"message_ids": ["{m_secret}", "{m_post}"], "status": "expired"}},
    ("GET", "/v1/who"): {},
    ("GET", "/v1/reach"): {"params": {"address": "{bob}"}},
    ("POST", "/v1/sessions"): {"json": {"pid": PID, "runtime": "script"}},
    ("POST", "/v1/sessions/{session_id}/heartbeat"): {"path": {"session_id": "{s_bob}"}},
    ("DELETE", "/v1/sessions/{session_id}"): {"path": {"session_id": "{s_bob}"}},
    ("GET", "/v1/agents"): {},
    ("POST", "/v1/agents"): {"json": {"name": "{bob}"}},
    ("GET", "/v1/agents/{name}"): {"path": {"name": "{bob}"}},
    ("GET", "/v1/agents/{name}/card"): {"path": {"name": "{bob}"}},
    ("PATCH", "/v1/agents/{name}"): {"path": {"name": "{bob}"}, "json": {"description": "defaced"}},
    ("DELETE", "/v1/agents/{name}"): {"path": {"name": "{bob}"}},
    ("GET", "/v1/channels"): {},
    ("POST", "/v1/channels"): {"json": {"name": "{fresh}"}},
    ("POST", "/v1/channels/{name}/join"): {"path": {"name": "{chan}"}},
    ("POST", "/v1/channels/{name}/leave"): {"path": {"name": "{chan}"}},
    ("GET", "/v1/channels/{name}/members"): {"path": {"name": "{chan}"}},
    ("POST", "/v1/channels/{name}/members"): {"path": {"name": "{chan}"}, "json": {"agents": ["{eve}"]}},
    ("DELETE", "/v1/channels/{name}/members/{agent}"): {"path": {"name": "{chan}", "agent": "{bob}"}},
    ("GET", "/v1/audit"): {"params": {"limit": 1000}},
    ("GET", "/v1/workspaces"): {},
    ("POST", "/v1/tokens"): {"json": {"agent": "{bob}"}},
    ("GET", "/v1/tokens"): {},
    ("DELETE", "/v1/tokens/{token_id}"): {"path": {"token_id": "{tok_bob_id}"}},
    ("GET", "/v1/tasks"): {"params": {"page_size": 100}},
    # Answering alice's task (bob asked her back) as if one were alice: it goes on only for her.
    ("POST", "/v1/tasks"): {"json": {"to": "{bob}", "text": "hijack", "task_id": "{t_secret}"}},
    ("GET", "/v1/tasks/{task_id}"): {"path": {"task_id": "{t_secret}"}, "params": {"history_length": 100}},
    ("POST", "/v1/tasks/{task_id}/update"): {
        "path": {"task_id": "{t_secret}"},
        "json": {"state": "completed", "message": "defaced"},
    },
    ("POST", "/v1/tasks/{task_id}/cancel"): {"path": {"task_id": "{t_secret}"}},
    # A round is its coordinator's and its participants': proposing, voting or canceling in alice's
    # round, or opening one that posts to a channel one is not in.
    ("GET", "/v1/rounds"): {"params": {"all": "true"}},
    ("POST", "/v1/rounds"): {"json": {"goal": "hijack", "agents": ["{bob}"], "channel": "{inner}"}},
    ("GET", "/v1/rounds/{round_id}"): {"path": {"round_id": "{r_secret}"}},
    ("POST", "/v1/rounds/{round_id}/proposals"): {
        "path": {"round_id": "{r_secret}"},
        "json": {"parts": [{"text": "x"}]},
    },
    ("POST", "/v1/rounds/{round_id}/votes"): {"path": {"round_id": "{r_secret}"}, "json": {"endorse": "{bob}"}},
    ("POST", "/v1/rounds/{round_id}/cancel"): {"path": {"round_id": "{r_secret}"}},
    # Leases: taking one's own, listing the workspace's, renewing or releasing bob's, checking paths.
    ("POST", "/v1/leases"): {"json": {"scope": "an-attackers-clone", "patterns": ["src/x.py"]}},
    ("GET", "/v1/leases"): {"params": {"all": "true"}},
    ("POST", "/v1/leases/renew"): {"json": {"ids": ["{l_secret}"], "ttl": 99999}},
    ("POST", "/v1/leases/release"): {"json": {"ids": ["{l_secret}"]}},
    ("POST", "/v1/leases/check"): {"json": {"scope": "{secret_scope}", "paths": ["src/x.py"]}},
    # Pointing A's outside agent elsewhere (its mail would go there), or removing it.
    ("GET", "/v1/remotes"): {},
    ("POST", "/v1/remotes"): {"json": {"name": "{remote}", "url": "{remote_url}", "token": "hijacked"}},
    ("DELETE", "/v1/remotes/{name}"): {"path": {"name": "{remote}"}},
    # Overwriting bob's runner report (what runner status shows of him), or reading it from B.
    ("PUT", "/v1/runners/{agent}"): {
        "path": {"agent": "{bob}"},
        "json": {**RUNNER_REPORT, "agent": "{bob}", "state": "crashed", "detail": "defaced"},
    },
    ("GET", "/v1/runners"): {},
}


@dataclass(frozen=True)
class Row:
    attacker: str
    method: str
    route: str
    status: int
    code: str | None = None
    override: dict[str, Any] = field(default_factory=dict)  # replaces parts of REQUESTS[route]
    check: Callable[[World, Attacker, Any], None] | None = None
    before: Callable[[World], None] | None = None  # sets the scene just before the request
    shows: tuple[str, ...] = ()  # markers this row may answer (a person looking workspace-wide)

    @property
    def id(self) -> str:
        return f"{self.attacker}: {self.method} {self.route}"


def _bobs_sessions_report(world: World) -> None:
    """Bob's sessions are live now, however long the table has run."""
    with world.as_bob() as http:
        for session in ("s_bob", "s_bob_laptop"):
            _ok(http.post(f"/v1/sessions/{world.names[session]}/heartbeat", json={}), 200)


def _acts_as_itself(world: World, attacker: Attacker, body: Any) -> None:
    assert (body["workspace"], body["agent"]) == (attacker.acts_in, attacker.acts_as), body


def _unknown_there(world: World, attacker: Attacker, body: Any) -> None:
    assert body["state"] == "unknown_agent", body  # workspace A's alice is not B's


def _in_own_workspace(world: World, attacker: Attacker, body: Any) -> None:
    assert body["workspace"] == attacker.acts_in, body


def _only_own_workspace(world: World, attacker: Attacker, body: Any) -> None:
    assert [w["name"] for w in body] == [attacker.acts_in], body


def _only_own_token(world: World, attacker: Attacker, body: Any) -> None:
    assert [t["id"] for t in body] == [t["id"] for t in body if t["workspace"] == attacker.acts_in]
    if attacker.token != world.a.token and attacker.token != world.b.token:  # an agent token sees itself only
        assert len(body) == 1 and body[0]["agent"] == attacker.acts_as, body


def _only_own_records(world: World, attacker: Attacker, body: Any) -> None:
    assert {e["workspace"] for e in body} <= {attacker.acts_in}, body


def _no_old_channel_post(world: World, attacker: Attacker, body: Any) -> None:
    with world.hub.http(attacker.token, attacker.agent) as http:
        mailbox = http.post("/v1/read", params={"after": 0, "peek": "true", "limit": 1000})
    assert world.names["secret_post"] not in mailbox.text, "joining a channel delivered a post made before"


def _no_runners_of_a(world: World, attacker: Attacker, body: Any) -> None:
    assert all(r["detail"] != world.names["secret_runner"] for r in body), body


def _no_tasks(world: World, attacker: Attacker, body: Any) -> None:
    assert body["tasks"] == [] and body["total_size"] == 0, body


def _no_rounds(world: World, attacker: Attacker, body: Any) -> None:
    assert body == [], body


def _nothing_renewed(world: World, attacker: Attacker, body: Any) -> None:
    assert body == [], body


def _only_own_leases(world: World, attacker: Attacker, body: Any) -> None:
    assert all(x["workspace"] == attacker.acts_in for x in body), body


FORBIDDEN_EVERYWHERE = ["eve-naming-bob", "B-naming-A"]


def _rows() -> list[Row]:
    rows: list[Row] = []
    # Naming another agent (an agent token) or another workspace (a user token): refused outright.
    for attacker in FORBIDDEN_EVERYWHERE:
        for route in PRIVATE_ROUTES:
            if _key(route) not in CREDENTIAL_ONLY:
                rows.append(Row(attacker, route.method, route.path, 403, "forbidden"))
    rows += [
        Row("eve-naming-bob", "GET", "/v1/workspaces", 200, check=_only_own_workspace),
        Row("eve-naming-bob", "POST", "/v1/tokens", 403, "forbidden"),
        Row("eve-naming-bob", "GET", "/v1/tokens", 200, check=_only_own_token),
        Row("eve-naming-bob", "DELETE", "/v1/tokens/{token_id}", 404, "unknown_token"),
        # The token and workspace routes honour the workspace header as every other route does.
        Row("B-naming-A", "GET", "/v1/workspaces", 403, "forbidden"),
        Row("B-naming-A", "POST", "/v1/tokens", 403, "forbidden"),
        Row("B-naming-A", "GET", "/v1/tokens", 403, "forbidden"),
        Row("B-naming-A", "DELETE", "/v1/tokens/{token_id}", 403, "forbidden", {"path": {"token_id": "{tok_b_spare}"}}),
    ]
    # Another agent's token acting as itself: it reaches the workspace's directory, never bob's mail.
    read_paths = [
        ("POST", "/v1/messages", 404, "unknown_message", {}, None),  # replying to bob's message reveals it
        ("GET", "/v1/messages/{message_id}/status", 404, "unknown_message", {}, None),
        ("POST", "/v1/read", 200, None, {}, None),
        ("GET", "/v1/events", 200, None, {}, None),
        ("GET", "/v1/inbox", 200, None, {}, None),
        ("POST", "/v1/ack", 404, "unknown_message", {}, None),
        ("POST", "/v1/mark-read", 404, "unknown_message", {}, None),
        ("POST", "/v1/surface", 200, None, {}, None),
        # Naming bob's mail as one's own handed mail, or reporting on it: nothing is changed.
        ("POST", "/v1/surfaced", 200, None, {}, None),
        ("POST", "/v1/receipts", 200, None, {}, None),
        ("POST", "/v1/sessions/{session_id}/heartbeat", 404, "unknown_session", {}, None),
        ("DELETE", "/v1/sessions/{session_id}", 404, "unknown_session", {}, None),
        # A task is its requester's and its worker's: to anyone else there is no such task.
        ("GET", "/v1/tasks", 200, None, {}, _no_tasks),
        ("POST", "/v1/tasks", 404, "unknown_task", {}, None),
        ("GET", "/v1/tasks/{task_id}", 404, "unknown_task", {}, None),
        ("POST", "/v1/tasks/{task_id}/update", 404, "unknown_task", {}, None),
        ("POST", "/v1/tasks/{task_id}/cancel", 404, "unknown_task", {}, None),
        ("GET", "/v1/rounds", 200, None, {}, _no_rounds),
        ("POST", "/v1/rounds", 400, "bad_request", {}, None),
        ("GET", "/v1/rounds/{round_id}", 404, "unknown_round", {}, None),
        ("POST", "/v1/rounds/{round_id}/proposals", 404, "unknown_round", {}, None),
        ("POST", "/v1/rounds/{round_id}/votes", 404, "unknown_round", {}, None),
        ("POST", "/v1/rounds/{round_id}/cancel", 404, "unknown_round", {}, None),
    ]
    for attacker in ("eve", "carol", "B"):
        rows += [
            Row(attacker, m, p, s, c, o, k)
            for m, p, s, c, o, k in read_paths
            if not (attacker == "carol" and (m, p) == ("GET", "/v1/rounds/{round_id}"))
        ]
    # A round is the workspace's decision: a person's token looks at it (and only looks), as it
    # reads the audit trail; an agent's token sees only the rounds it takes part in.
    rows.append(Row("carol", "GET", "/v1/rounds/{round_id}", 200, shows=("secret_goal", "r_secret")))
    # Session takeover on a machine the hub cannot look into, by a person's token acting as carol.
    laptop_claim = {"pid": LAPTOP_PID, "runtime": "script", "machine": "{laptop}", "proc_start": 222}
    rows.append(
        Row(
            "carol", "POST", "/v1/sessions", 409, "already_exists", {"json": laptop_claim}, before=_bobs_sessions_report
        )
    )
    rows += [
        Row("eve", "GET", "/v1/whoami", 200, check=_acts_as_itself),
        Row("eve", "GET", "/v1/who", 200),
        Row("eve", "GET", "/v1/reach", 200),  # the workspace's directory is shared
        # Session takeover: eve claims the pid and machine of bob's live session (both shown by
        # 'who'), giving another process start time as a recycled pid would have: refused.
        Row(
            "eve",
            "POST",
            "/v1/sessions",
            409,
            "already_exists",
            {"json": {"pid": PID, "runtime": "script", "proc_start": 1}},
            before=_bobs_sessions_report,
        ),
        Row("eve", "GET", "/v1/agents", 200),
        Row("eve", "POST", "/v1/agents", 403, "forbidden"),
        Row("eve", "GET", "/v1/remotes", 200),  # the workspace's directory is shared (never a token)
        Row("eve", "POST", "/v1/remotes", 403, "forbidden"),
        Row("eve", "DELETE", "/v1/remotes/{name}", 403, "forbidden"),
        Row("eve", "GET", "/v1/runners", 200),  # the workspace's runners are shared, as its directory
        # A workspace's leases are shared (who holds what); bob's own stays bob's to renew or release.
        Row("eve", "POST", "/v1/leases", 201),
        Row("eve", "GET", "/v1/leases", 200),
        Row("eve", "POST", "/v1/leases/renew", 200, check=_nothing_renewed),
        Row("eve", "POST", "/v1/leases/release", 400, "bad_request"),
        Row("eve", "POST", "/v1/leases/check", 200),
        Row("eve", "PUT", "/v1/runners/{agent}", 403, "forbidden"),  # only bob reports bob's runner
        Row("eve", "GET", "/v1/agents/{name}", 200),  # the workspace's directory is shared
        Row("eve", "GET", "/v1/agents/{name}/card", 200),  # an A2A card is public anyway
        Row("eve", "PATCH", "/v1/agents/{name}", 403, "forbidden"),
        Row("eve", "DELETE", "/v1/agents/{name}", 403, "forbidden"),
        Row("eve", "GET", "/v1/channels", 200),
        Row("eve", "POST", "/v1/channels", 201),
        Row("eve", "POST", "/v1/channels/{name}/join", 200, check=_no_old_channel_post),
        Row("eve", "POST", "/v1/channels/{name}/leave", 403, "not_member", {"path": {"name": "{chan2}"}}),
        Row("eve", "GET", "/v1/channels/{name}/members", 200),
        # Only bob (its creator) or a person adds or removes #chan's members; the audit trail is for persons.
        Row("eve", "POST", "/v1/channels/{name}/members", 403, "forbidden"),
        Row("eve", "DELETE", "/v1/channels/{name}/members/{agent}", 403, "forbidden"),
        Row("eve", "GET", "/v1/audit", 403, "forbidden"),
        Row("eve", "GET", "/v1/workspaces", 200, check=_only_own_workspace),
        Row("eve", "POST", "/v1/tokens", 403, "forbidden"),
        Row("eve", "GET", "/v1/tokens", 200, check=_only_own_token),
        Row("eve", "DELETE", "/v1/tokens/{token_id}", 404, "unknown_token"),
    ]
    # A user token of workspace B, acting as B's agent of the same name: nothing of A exists for it.
    rows += [
        Row("B", "GET", "/v1/whoami", 200, check=_acts_as_itself),
        Row("B", "GET", "/v1/who", 200),
        Row("B", "GET", "/v1/reach", 200, override={"params": {"address": "{alice}"}}, check=_unknown_there),
        Row("B", "POST", "/v1/sessions", 201, check=_acts_as_itself),
        Row("B", "GET", "/v1/agents", 200),
        Row("B", "POST", "/v1/agents", 201, override={"json": {"name": "{dave}"}}, check=_in_own_workspace),
        Row("B", "GET", "/v1/agents/{name}", 404, "unknown_agent", {"path": {"name": "{alice}"}}),
        Row("B", "GET", "/v1/agents/{name}/card", 404, "unknown_agent", {"path": {"name": "{alice}"}}),
        Row("B", "PATCH", "/v1/agents/{name}", 404, "unknown_agent", {"path": {"name": "{alice}"}}),
        Row("B", "DELETE", "/v1/agents/{name}", 404, "unknown_agent", {"path": {"name": "{alice}"}}),
        Row("B", "GET", "/v1/remotes", 200),
        Row(
            "B",
            "POST",
            "/v1/remotes",
            201,
            override={"json": {"name": "{remote_b}", "url": "{remote_url}"}},
            check=_in_own_workspace,
        ),
        Row("B", "DELETE", "/v1/remotes/{name}", 404, "unknown_agent"),
        Row("B", "GET", "/v1/runners", 200, check=_no_runners_of_a),
        Row("B", "POST", "/v1/leases", 201),  # in its own workspace: A's bob's lease is not there
        Row("B", "GET", "/v1/leases", 200, check=_only_own_leases),
        Row("B", "POST", "/v1/leases/renew", 200, check=_nothing_renewed),
        Row("B", "POST", "/v1/leases/release", 400, "bad_request"),
        Row("B", "POST", "/v1/leases/check", 200, check=_nothing_renewed),
        Row("B", "PUT", "/v1/runners/{agent}", 200),  # B's own bob: A's report stays as it was
        Row("B", "GET", "/v1/channels", 200),
        Row("B", "POST", "/v1/channels", 201, override={"json": {"name": "{chan2}"}}, check=_in_own_workspace),
        Row("B", "POST", "/v1/channels/{name}/join", 404, "unknown_channel"),
        Row("B", "POST", "/v1/channels/{name}/leave", 404, "unknown_channel"),
        Row("B", "GET", "/v1/channels/{name}/members", 404, "unknown_channel"),
        Row("B", "POST", "/v1/channels/{name}/members", 404, "unknown_channel"),
        Row("B", "DELETE", "/v1/channels/{name}/members/{agent}", 404, "unknown_channel"),
        Row("B", "GET", "/v1/audit", 200, check=_only_own_records),
        Row("B", "GET", "/v1/workspaces", 200, check=_only_own_workspace),
        Row("B", "POST", "/v1/tokens", 403, "forbidden", {"json": {"workspace": "{wsA}"}}),
        Row("B", "GET", "/v1/tokens", 200, check=_only_own_token),
        Row("B", "DELETE", "/v1/tokens/{token_id}", 404, "unknown_token"),
    ]
    return rows


ROWS = _rows()
FULL_COVERAGE = ["eve", "eve-naming-bob", "B", "B-naming-A"]


@pytest.mark.parametrize("attacker", FULL_COVERAGE)
def test_the_table_tries_every_route_of_the_api(attacker: str) -> None:
    tried = [(r.method, r.route) for r in ROWS if r.attacker == attacker]
    assert sorted(tried) == sorted(_key(r) for r in PRIVATE_ROUTES)


def _request_text(method: str, url: str, request: dict[str, Any], attacker: Attacker) -> str:
    return json.dumps(
        [method, url, request.get("json"), request.get("params"), attacker.agent, attacker.workspace_header]
    )


def _stream_text(world: World, attacker: Attacker, params: dict[str, Any]) -> tuple[int, str]:
    """Everything the attacker's event stream holds, up to a sentinel sent to its own mailbox."""
    with world.hub.admin("sentinel", attacker.acts_in) as http:
        sentinel = _ok(http.post("/v1/messages", json={"to": attacker.acts_as, "text": "sentinel"}), 201)["message_id"]
    with EventStream(
        world.hub.url, attacker.token, attacker.agent, attacker.workspace_header, after=params.get("after")
    ) as stream:
        if stream.response.status_code != 200:
            return stream.response.status_code, stream.response.read().decode()
        stream.ready()
        events = stream.events_until(sentinel)
    return 200, json.dumps([e.item for e in events])


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_no_credential_reaches_another_agents_or_workspaces_data(world: World, row: Row) -> None:
    attacker = world.attackers[row.attacker]
    request = {**REQUESTS[(row.method, row.route)], **row.override}
    extra = {"fresh": unique("fresh")}
    path = row.route.format(**world.fill(request.get("path", {}), extra))
    body = world.fill(request.get("json"), extra)
    params = world.fill(request.get("params"), extra)

    if row.before is not None:
        row.before(world)
    before = _victim_state(world, row.route) if row.method != "GET" else None
    if (row.method, row.route) == ("GET", "/v1/events") and row.status == 200:
        status, text = _stream_text(world, attacker, params or {})
        assert status == 200, text
        answer = None
    else:
        headers = auth_headers(attacker.token, attacker.agent, attacker.workspace_header)
        with httpx.Client(base_url=world.hub.url, headers=headers, timeout=15) as http:
            answer = http.request(row.method, path, json=body, params=params)
        text = answer.text
        if row.code is not None:
            expect_http_error(answer, row.status, row.code)
        else:
            assert answer.status_code == row.status, f"{row.method} {path}: {answer.status_code} {text}"

    sent = _request_text(row.method, path, {"json": body, "params": params}, attacker)
    markers = world.cross_workspace_markers if attacker.acts_in != world.a.workspace else world.cross_agent_markers
    shown = {world.names[name] for name in row.shows}
    leaked = [m for m in markers if m in text and m not in sent and m not in shown]
    assert not leaked, f"{row.id} answered something of the victim: {leaked}\n{text[:2000]}"
    if row.check is not None and answer is not None:
        row.check(world, attacker, answer.json())
    if before is not None:
        assert _victim_state(world, row.route) == before, f"{row.id} changed the victim's data"


def _victim_state(world: World, route: str) -> dict[str, Any]:
    """What ``route`` could change of bob's (and of alice's, for A's other agent)."""
    n = world.names
    with world.as_bob() as http:  # bob's token still works
        state: dict[str, Any] = {"bob": _ok(http.get("/v1/whoami"), 200)["agent"]}
        if route.startswith(
            ("/v1/messages", "/v1/read", "/v1/ack", "/v1/events", "/v1/inbox", "/v1/surfaced", "/v1/receipts")
        ):
            items = _ok(http.get("/v1/inbox", params={"all": "true", "limit": 1000}), 200)
            state["bob's mail"] = {i["message"]["id"]: i["state"] for i in items}
            with world.a.http(n["alice"]) as alice:
                items = _ok(alice.get("/v1/inbox", params={"all": "true", "limit": 1000}), 200)
            state["alice's mail"] = {i["message"]["id"]: i["state"] for i in items}
        elif route.startswith("/v1/sessions"):
            who = _ok(http.get("/v1/who"), 200)
            state["bob's sessions"] = [
                (s["id"], s["ended_at"]) for a in who["agents"] if a["name"] == n["bob"] for s in a["sessions"]
            ]
        elif route.startswith("/v1/agents"):
            state["bob's card"] = _ok(http.get(f"/v1/agents/{n['bob']}"), 200)
            state["alice's card"] = _ok(http.get(f"/v1/agents/{n['alice']}"), 200)
        elif route.startswith("/v1/remotes"):
            with world.a.http(n["alice"]) as alice:
                remotes = _ok(alice.get("/v1/remotes"), 200)
            state["A's remotes"] = [(r["name"], r["url"], r["has_token"], r["card_fetched_at"]) for r in remotes]
        elif route.startswith("/v1/tasks"):
            task = _ok(http.get(f"/v1/tasks/{n['t_secret']}", params={"history_length": 100}), 200)
            state["bob's task"] = (task["state"], task["generation"], [m["id"] for m in task["history"]])
        elif route.startswith("/v1/leases"):
            held = _ok(http.get("/v1/leases"), 200)
            state["bob's leases"] = [(x["id"], x["expires_at"], x["released_at"]) for x in held]
        elif route.startswith("/v1/rounds"):
            shown = _ok(http.get(f"/v1/rounds/{n['r_secret']}"), 200)
            state["alice's round"] = (shown["phase"], shown["epoch"], len(shown["events"]))
        elif route.startswith("/v1/runners"):
            with world.a.http(n["alice"]) as alice:
                reports = _ok(alice.get("/v1/runners"), 200)
            state["A's runners"] = [(r["agent"], r["state"], r["detail"], r["updated_at"]) for r in reports]
        elif route.startswith("/v1/channels"):
            members = {m["agent"] for m in _ok(http.get(f"/v1/channels/{n['chan']}/members"), 200)}
            state["members of #chan"] = sorted(members & {n["bob"], n["alice"]})
            state["members of #inner"] = [m["agent"] for m in _ok(http.get(f"/v1/channels/{n['inner']}/members"), 200)]
    return state


# --- credentials that are missing, unknown or revoked ---------------------------------------------

VALID_BODIES = {
    ("POST", "/v1/messages"): {"to": "someone", "text": "hi"},
    ("POST", "/v1/ack"): {"message_ids": ["00000000-0000-7000-8000-000000000000"]},
    ("POST", "/v1/sessions"): {"pid": PID, "runtime": "script"},
    ("POST", "/v1/agents"): {"name": "newcomer"},
    ("PATCH", "/v1/agents/{name}"): {"description": "x"},
    ("POST", "/v1/channels"): {"name": "newchan"},
    ("POST", "/v1/channels/{name}/members"): {"agents": ["newcomer"]},
    ("POST", "/v1/tokens"): {"agent": "newcomer"},
    ("POST", "/v1/tasks"): {"to": "newcomer", "text": "hi"},
    ("POST", "/v1/tasks/{task_id}/update"): {"state": "working"},
    ("POST", "/v1/rounds"): {"goal": "g", "agents": ["newcomer"]},
    ("POST", "/v1/leases"): {"scope": "s", "patterns": ["src/"]},
    ("POST", "/v1/leases/check"): {"scope": "s", "paths": ["src/a.py"]},
    ("POST", "/v1/rounds/{round_id}/proposals"): {"parts": [{"text": "x"}]},
    ("POST", "/v1/rounds/{round_id}/votes"): {"endorse": "a"},
    ("PUT", "/v1/runners/{agent}"): {**RUNNER_REPORT, "agent": "a"},
}


@pytest.fixture(scope="module")
def revoked(hub: Hub) -> str:
    issued = hub.issue(agent=unique("revoked"))
    with hub.http(issued["token"]) as http:
        assert http.get("/v1/whoami").status_code == 200  # it worked before
    with hub.admin() as http:
        assert _ok(http.delete(f"/v1/tokens/{issued['id']}"), 200)["revoked_at"] is not None
    return issued["token"]


def _concrete(route: Route) -> str:
    return route.path.format(
        message_id="00000000-0000-7000-8000-000000000000",
        session_id="s",
        name="somebody",
        token_id="t",
        agent="a",
        task_id="00000000-0000-7000-8000-000000000000",
        round_id="00000000-0000-7000-8000-000000000000",
    )


@pytest.mark.parametrize("credential", ["missing", "unknown", "revoked", "not-bearer"])
@pytest.mark.parametrize("route", PRIVATE_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_every_route_refuses_a_missing_unknown_or_revoked_token(
    hub: Hub, revoked: str, route: Route, credential: str
) -> None:
    headers = {
        "missing": {},
        "unknown": {"Authorization": "Bearer cb_not-a-token-the-hub-ever-issued"},
        "revoked": {"Authorization": f"Bearer {revoked}"},
        "not-bearer": {"Authorization": f"Basic {revoked}"},
    }[credential]
    headers["X-Callboard-Agent"] = "somebody"
    with httpx.Client(base_url=hub.url, timeout=15) as http:
        answer = http.request(route.method, _concrete(route), json=VALID_BODIES.get(_key(route)), headers=headers)
    expect_http_error(answer, 401, "unauthorized")


@pytest.mark.parametrize(
    "route", [r for r in PRIVATE_ROUTES if r.body is not None], ids=lambda r: f"{r.method} {r.path}"
)
def test_a_request_without_a_token_is_refused_before_its_body_is_read(hub: Hub, route: Route) -> None:
    with httpx.Client(base_url=hub.url, timeout=15) as http:
        answer = http.request(route.method, _concrete(route), content=b"{not json", headers={"X-Callboard-Agent": "x"})
    expect_http_error(answer, 401, "unauthorized")


def test_a_revoked_token_is_refused_by_hubclient(hub: Hub) -> None:
    from callboard.errors import Unauthorized

    issued = hub.issue(agent=unique("short-lived"))
    client = hub.client(issued["token"])
    try:
        assert client.whoami().agent == issued["agent"]
        with hub.admin() as http:
            _ok(http.delete(f"/v1/tokens/{issued['id']}"), 200)
        with pytest.raises(Unauthorized):
            client.send(SendRequest(to="anyone", text="after revocation"))
        with pytest.raises(Unauthorized):
            client.read()
    finally:
        client.close()


def test_an_agent_token_cannot_end_another_agents_session_by_claiming_its_pid(tenant: Tenant) -> None:
    bob, eve = unique("bob"), unique("eve")
    with tenant.hub.http(tenant.agent_token(bob)["token"]) as http:
        session = _ok(http.post("/v1/sessions", json={"pid": PID, "runtime": "script", "machine": "box-1"}), 201)
    with tenant.hub.http(tenant.agent_token(eve)["token"]) as http:  # 'who' shows bob's pid and machine
        claim = http.post("/v1/sessions", json={"pid": PID, "runtime": "script", "machine": "box-1"})
    expect_http_error(claim, 409, "already_exists")
    with tenant.http(bob) as http:
        who = _ok(http.get("/v1/who"), 200)
    bobs = [s["id"] for a in who["agents"] if a["name"] == bob for s in a["sessions"]]
    assert bobs == [session["id"]], "eve's token ended bob's session by registering one with its pid and machine"


def test_a_recipient_sees_only_its_own_row_of_a_messages_status(tenant: Tenant) -> None:
    alice, bob, carol = unique("alice"), unique("bob"), unique("carol")
    with tenant.http(alice) as http:
        sent = _ok(http.post("/v1/messages", json={"to": [bob, carol], "text": "to both"}), 201)
        everyone = _ok(http.get(f"/v1/messages/{sent['message_id']}/status"), 200)
    assert sorted(r["agent"] for r in everyone["recipients"]) == sorted([bob, carol])  # the sender sees all
    with tenant.hub.http(tenant.agent_token(carol)["token"]) as http:
        mine = _ok(http.get(f"/v1/messages/{sent['message_id']}/status"), 200)
    assert [r["agent"] for r in mine["recipients"]] == [carol]
    assert bob not in json.dumps(mine)


def test_a_token_revoked_while_in_use_is_refused_from_the_next_request_on(hub: Hub) -> None:
    issued = hub.issue(agent=unique("busy"))
    revoked_at: list[float] = []  # monotonic time the revocation's answer arrived
    results: list[tuple[float, int]] = []  # (monotonic time the request was sent, status)
    lock = threading.Lock()

    def use() -> None:
        with hub.http(issued["token"]) as http:
            after = 0
            while after < 20:  # until 20 requests were sent after the revocation was answered
                sent = time.monotonic()
                status = http.get("/v1/whoami").status_code
                with lock:
                    results.append((sent, status))
                    after += bool(revoked_at) and sent > revoked_at[0]

    threads = [threading.Thread(target=use) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(results) >= 40, what="the token to be in use")
        with hub.admin() as http:
            _ok(http.delete(f"/v1/tokens/{issued['id']}"), 200)
        revoked_at.append(time.monotonic())
    finally:
        for thread in threads:
            thread.join(30)
    late = [status for sent, status in results if sent > revoked_at[0]]
    assert late and set(late) == {401}, f"requests sent after the revocation answered {sorted(set(late))}"
    assert any(status == 200 for sent, status in results if sent < revoked_at[0])


# --- MCP sessions ---------------------------------------------------------------------------------

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
WHO_CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "who", "arguments": {}}}


def _open_mcp_session(world: World, token: str) -> str:
    """An MCP session opened over /mcp with ``token`` (initialize, then initialized): its id."""
    with world.hub.http(token) as http:
        opened = http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert opened.status_code == 200, opened.text
        session_id = opened.headers["mcp-session-id"]
        ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        answer = http.post("/mcp", json=ready, headers={**MCP_HEADERS, "Mcp-Session-Id": session_id})
        assert answer.status_code == 202, answer.text
    return session_id


@pytest.mark.parametrize("attacker", ["eve", "carol", "B"])
def test_an_mcp_session_answers_only_the_credential_that_opened_it(world: World, attacker: str) -> None:
    """MCP session of another credential: a call in it, or a DELETE ending it, is refused, and
    the session keeps working for its owner."""
    session_id = _open_mcp_session(world, world.bob_token)
    other = world.attackers[attacker]
    in_bobs = {**MCP_HEADERS, "Mcp-Session-Id": session_id}
    with world.hub.http(other.token, other.agent) as http:
        call = http.post("/mcp", json=WHO_CALL, headers=in_bobs)
        ended = http.delete("/mcp", headers=in_bobs)
    for answer in (call, ended):
        assert answer.status_code == 404, f"{answer.request.method}: {answer.status_code} {answer.text}"
        assert world.names["bob"] not in answer.text
    with world.as_bob() as http:
        still = http.post("/mcp", json=WHO_CALL, headers=in_bobs)
        assert still.status_code == 200 and '"isError":false' in still.text.replace(" ", ""), still.text
        assert http.delete("/mcp", headers=in_bobs).status_code == 200  # its owner ends it


# --- the workspace header on the token and workspace routes ---------------------------------------


def test_an_admin_token_naming_a_workspace_acts_in_it_on_the_token_and_workspace_routes(world: World) -> None:
    a, b = world.a.workspace, world.b.workspace
    with world.hub.admin(workspace=a) as http:
        assert [w["name"] for w in _ok(http.get("/v1/workspaces"), 200)] == [a]
        listed = _ok(http.get("/v1/tokens"), 200)
        assert listed and {t["workspace"] for t in listed} == {a}
        issued = _ok(http.post("/v1/tokens", json={"label": "made in A"}), 201)
        assert (issued["kind"], issued["workspace"]) == ("user", a)
        expect_http_error(http.delete(f"/v1/tokens/{world.names['tok_b_spare']}"), 404, "unknown_token")
        expect_http_error(http.post("/v1/tokens", json={"workspace": b}), 400, "bad_request")
    with world.hub.admin() as http:  # B's token was not revoked through A
        (spare,) = [t for t in _ok(http.get("/v1/tokens"), 200) if t["id"] == world.names["tok_b_spare"]]
    assert spare["revoked_at"] is None
