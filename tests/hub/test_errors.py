"""Bad input is answered with its 4xx code as JSON ``{"error": {"code", "message"}}``, never a
500: bad JSON on every POST/PATCH route of the route table, bad names and addresses, unknown
ids, oversized bodies, bad query parameters — and a client that sends too fast gets a 429."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from callboard.hub.routes import ROUTES, Route
from tests.hub.conftest import Hub, Tenant, expect_http_error, new_tenant, unique

MIB = 1024 * 1024
NOT_JSON = {
    "syntax": b"{not json",
    "truncated": b'{"to": "someone", "text": "hi"',
    "not-utf8": b"\xff\xfe\xfd{}",
}
WRONG_SHAPE = {"array": b"[]", "null": b"null", "string": b'"hello"', "unknown-field": b'{"no_such_field": 1}'}


@dataclass
class World:
    """A workspace on the shared hub with something behind every path parameter."""

    tenant: Tenant
    agent: str
    session_id: str
    channel: str
    values: dict[str, str] = field(default_factory=dict)

    @property
    def hub(self) -> Hub:
        return self.tenant.hub

    def path(self, route: Route) -> str:
        return route.path.format(**self.values)


@pytest.fixture(scope="module")
def world(hub: Hub) -> Iterator[World]:
    tenant = new_tenant(hub)
    agent, channel = unique("owner"), unique("chan")
    with tenant.http(agent) as http:
        session = http.post("/v1/sessions", json={"pid": os.getpid(), "runtime": "script"})
        assert session.status_code == 201, session.text
        assert http.post("/v1/channels", json={"name": channel}).status_code == 201
    session_id = session.json()["id"]
    values = {
        "message_id": str(uuid.uuid4()),
        "session_id": session_id,
        "name": agent,
        "token_id": tenant.token_id,
        "task_id": str(uuid.uuid4()),  # bad input is refused before any task is looked for
        "round_id": str(uuid.uuid4()),  # or any round
    }
    yield World(tenant, agent, session_id, channel, values)


def _values_for(world: World, route: Route) -> dict[str, str]:
    values = dict(world.values)
    if route.path.startswith("/v1/channels/"):
        values["name"] = world.channel
    return values


WRITE_ROUTES = [r for r in ROUTES if r.method in ("POST", "PATCH")]
BODY_ROUTES = [r for r in WRITE_ROUTES if r.body is not None]


def _route_id(route: Route) -> str:
    return f"{route.method} {route.path}"


@pytest.mark.parametrize("route", WRITE_ROUTES, ids=_route_id)
def test_bad_json_on_every_post_and_patch_route_is_400_bad_request(world: World, route: Route) -> None:
    path = route.path.format(**_values_for(world, route))
    wrong = []
    with world.tenant.http(world.agent) as http:
        for kind, body in NOT_JSON.items():
            answer = http.request(route.method, path, content=body, headers={"Content-Type": "application/json"})
            try:
                expect_http_error(answer, 400, "bad_request")
            except AssertionError as error:
                wrong.append(f"{kind} body {body!r}: {error}".splitlines()[0])
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("body", WRONG_SHAPE.values(), ids=WRONG_SHAPE.keys())
@pytest.mark.parametrize("route", BODY_ROUTES, ids=_route_id)
def test_json_of_the_wrong_shape_is_400_bad_request(world: World, route: Route, body: bytes) -> None:
    path = route.path.format(**_values_for(world, route))
    with world.tenant.http(world.agent) as http:
        answer = http.request(route.method, path, content=body, headers={"Content-Type": "application/json"})
    expect_http_error(answer, 400, "bad_request")


def test_a_body_over_the_limit_is_413_too_large(world: World) -> None:
    body = b'{"to": "someone", "text": "' + b"x" * (MIB + 10) + b'"}'
    with world.tenant.http(world.agent) as http:
        answer = http.post("/v1/messages", content=body, headers={"Content-Type": "application/json"})
    expect_http_error(answer, 413, "too_large")


def test_a_chunked_body_over_the_limit_is_413_too_large(world: World) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: the hub must count as it reads
        yield b'{"to": "someone", "text": "'
        for _ in range(20):
            yield b"x" * (64 * 1024)
        yield b'"}'

    with world.tenant.http(world.agent) as http:
        answer = http.post("/v1/messages", content=chunks(), headers={"Content-Type": "application/json"})
    assert "content-length" not in answer.request.headers
    expect_http_error(answer, 413, "too_large")


def test_an_oversized_send_stores_nothing(world: World) -> None:
    target = unique("target")
    with world.tenant.http(world.agent) as http:
        answer = http.post("/v1/messages", json={"to": target, "text": "y" * (300 * 1024)})
        expect_http_error(answer, 413, "too_large")
        assert http.get(f"/v1/agents/{target}").status_code == 404  # not even created


@dataclass(frozen=True)
class Bad:
    what: str
    method: str
    path: str
    status: int
    code: str
    json: Any = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


NIL = "00000000-0000-7000-8000-000000000000"  # a well-formed message id nothing has
BAD_INPUTS = [
    Bad(
        "agent header with a bad name",
        "GET",
        "/v1/whoami",
        400,
        "bad_name",
        headers={"X-Callboard-Agent": "no spaces"},
    ),
    Bad(
        "workspace header with a bad name",
        "GET",
        "/v1/whoami",
        400,
        "bad_name",
        headers={"X-Callboard-Workspace": "-x-"},
    ),
    Bad(
        "send to a bad address", "POST", "/v1/messages", 400, "bad_address", json={"to": "not an address", "text": "hi"}
    ),
    Bad("send to a bad channel", "POST", "/v1/messages", 400, "bad_address", json={"to": "#bad channel", "text": "hi"}),
    Bad(
        "send to a bad address in a list",
        "POST",
        "/v1/messages",
        400,
        "bad_address",
        json={"to": ["ok", "b@d@x"], "text": "hi"},
    ),
    Bad("send with no text or parts", "POST", "/v1/messages", 400, "bad_request", json={"to": "someone", "text": "  "}),
    Bad("send without a recipient", "POST", "/v1/messages", 400, "bad_request", json={"text": "hi"}),
    Bad(
        "send with a bad part",
        "POST",
        "/v1/messages",
        400,
        "bad_request",
        json={"to": "x", "parts": [{"text": "a", "url": "b"}]},
    ),
    Bad(
        "send to too many recipients",
        "POST",
        "/v1/messages",
        413,
        "too_large",
        json={"to": [f"r{i}" for i in range(101)], "text": "hi"},
    ),
    Bad(
        "send with an over-long subject",
        "POST",
        "/v1/messages",
        413,
        "too_large",
        json={"to": "x", "text": "hi", "subject": "s" * 300},
    ),
    Bad(
        "reply to an unknown message",
        "POST",
        "/v1/messages",
        404,
        "unknown_message",
        json={"to": "x", "text": "hi", "reply_to": NIL},
    ),
    Bad(
        "reply to a malformed id",
        "POST",
        "/v1/messages",
        404,
        "unknown_message",
        json={"to": "x", "text": "hi", "reply_to": "nope"},
    ),
    Bad(
        "send to a machine never seen",
        "POST",
        "/v1/messages",
        404,
        "unknown_recipient",
        json={"to": "x@nowhere", "text": "hi"},
    ),
    Bad(
        "require_live to an agent with no session",
        "POST",
        "/v1/messages",
        409,
        "no_live_session",
        json={"to": "sleepy", "text": "hi", "require_live": True},
    ),
    Bad("status of an unknown message", "GET", f"/v1/messages/{NIL}/status", 404, "unknown_message"),
    Bad("status of a malformed message id", "GET", "/v1/messages/not-an-id/status", 404, "unknown_message"),
    Bad("ack of an unknown message", "POST", "/v1/ack", 404, "unknown_message", json={"message_ids": [NIL]}),
    Bad("ack of nothing", "POST", "/v1/ack", 400, "bad_request", json={"message_ids": []}),
    Bad("read wait that is not a number", "POST", "/v1/read", 400, "bad_request", params={"wait": "soon"}),
    Bad("read wait past the limit", "POST", "/v1/read", 400, "bad_request", params={"wait": 100000}),
    Bad("read limit 0", "POST", "/v1/read", 400, "bad_request", params={"limit": 0}),
    Bad("read after below 0", "POST", "/v1/read", 400, "bad_request", params={"after": -1}),
    Bad("read peek that is not a boolean", "POST", "/v1/read", 400, "bad_request", params={"peek": "maybe"}),
    Bad("events after that is not a number", "GET", "/v1/events", 400, "bad_request", params={"after": "x"}),
    Bad("inbox limit that is not a number", "GET", "/v1/inbox", 400, "bad_request", params={"limit": "ten"}),
    Bad("inbox limit past the limit", "GET", "/v1/inbox", 400, "bad_request", params={"limit": 1_000_000}),
    Bad("session with pid 0", "POST", "/v1/sessions", 400, "bad_request", json={"pid": 0}),
    Bad(
        "session with a bad machine",
        "POST",
        "/v1/sessions",
        400,
        "bad_name",
        json={"pid": 1, "machine": "bad machine!"},
    ),
    Bad("heartbeat of an unknown session", "POST", f"/v1/sessions/{NIL}/heartbeat", 404, "unknown_session"),
    Bad("end of an unknown session", "DELETE", f"/v1/sessions/{NIL}", 404, "unknown_session"),
    Bad("create an agent with a bad name", "POST", "/v1/agents", 400, "bad_name", json={"name": "-bad-"}),
    Bad("create an agent that exists", "POST", "/v1/agents", 409, "already_exists", json={"name": "{agent}"}),
    Bad(
        "an over-long description",
        "POST",
        "/v1/agents",
        413,
        "too_large",
        json={"name": "{fresh}", "description": "d" * 3000},
    ),
    Bad("describe an unknown agent", "GET", "/v1/agents/{fresh}", 404, "unknown_agent"),
    Bad("describe a bad agent name", "GET", "/v1/agents/bad%20name", 400, "bad_name"),
    Bad("update an unknown agent", "PATCH", "/v1/agents/{fresh}", 404, "unknown_agent", json={"description": "x"}),
    Bad("delete an unknown agent", "DELETE", "/v1/agents/{fresh}", 404, "unknown_agent"),
    Bad("create a channel with a bad name", "POST", "/v1/channels", 400, "bad_name", json={"name": "bad name"}),
    Bad("create a channel that exists", "POST", "/v1/channels", 409, "already_exists", json={"name": "{channel}"}),
    Bad("join an unknown channel", "POST", "/v1/channels/{fresh}/join", 404, "unknown_channel"),
    Bad("leave an unknown channel", "POST", "/v1/channels/{fresh}/leave", 404, "unknown_channel"),
    Bad("members of an unknown channel", "GET", "/v1/channels/{fresh}/members", 404, "unknown_channel"),
    Bad("members of a bad channel name", "GET", "/v1/channels/bad!name/members", 400, "bad_name"),
    Bad("token of an unknown kind", "POST", "/v1/tokens", 400, "bad_request", json={"kind": "superuser"}),
    Bad("token for a bad agent name", "POST", "/v1/tokens", 400, "bad_name", json={"agent": "bad name"}),
    Bad("revoke an unknown token", "DELETE", f"/v1/tokens/{NIL}", 404, "unknown_token"),
    Bad("an unknown endpoint", "GET", "/v1/nothing-here", 404, "not_found"),
    Bad("a method a route does not take", "PUT", "/v1/messages", 405, "method_not_allowed", json={}),
]


@pytest.mark.parametrize("bad", BAD_INPUTS, ids=lambda b: b.what)
def test_bad_input_is_answered_with_its_code(world: World, bad: Bad) -> None:
    fill = {"agent": world.agent, "channel": world.channel, "fresh": unique("nobody")}
    path = bad.path.format(**fill)
    body = (
        {k: (v.format(**fill) if isinstance(v, str) else v) for k, v in bad.json.items()}
        if isinstance(bad.json, dict)
        else bad.json
    )
    with world.tenant.http(world.agent) as http:
        answer = http.request(bad.method, path, json=body, params=bad.params, headers=bad.headers)
    expect_http_error(answer, bad.status, bad.code)


def test_an_idempotency_key_reused_for_another_message_is_409(world: World) -> None:
    key = unique("key")
    with world.tenant.http(world.agent) as http:
        first = http.post("/v1/messages", json={"to": "idem", "text": "one", "idempotency_key": key})
        again = http.post("/v1/messages", json={"to": "idem", "text": "one", "idempotency_key": key})
        other = http.post("/v1/messages", json={"to": "idem", "text": "two", "idempotency_key": key})
    assert first.status_code == 201, first.text
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["message_id"] == first.json()["message_id"]
    expect_http_error(other, 409, "idempotency_conflict")


def test_a_client_that_sends_too_fast_gets_429_with_retry_after(make_hub) -> None:
    hub: Hub = make_hub(rate_limit=5)
    fast, calm = hub.issue(agent="fast")["token"], hub.issue(agent="calm")["token"]
    hub.issue(agent="inbox-owner")  # an agent token sends only to agents that exist
    statuses: list[int] = []
    with hub.http(fast) as http:
        for i in range(300):
            answer = http.post("/v1/messages", json={"to": "inbox-owner", "text": f"burst {i}"})
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                break
    assert statuses[-1] == 429, statuses
    assert set(statuses[:-1]) == {201}, statuses
    error = expect_http_error(answer, 429, "rate_limited")
    retry_after = answer.headers.get("Retry-After")
    assert retry_after is not None and retry_after.isdigit() and int(retry_after) >= 1, (retry_after, error)

    with hub.http(calm) as http:  # the limit is per credential: another one is not held back
        assert http.get("/v1/whoami").status_code == 200
    with hub.admin("inbox-owner") as http:  # the refused send stored nothing
        stored = http.post("/v1/read", params={"peek": "true", "after": 0}).json()["items"]
    assert len(stored) == statuses.count(201)


def test_openapi_lists_every_route_of_the_route_table(hub: Hub) -> None:
    with hub.http() as http:
        document = http.get("/openapi.json").json()
    listed = {(method.upper(), path) for path, operations in document["paths"].items() for method in operations}
    assert listed == {(r.method, r.path) for r in ROUTES}
    for route in ROUTES:
        operation = document["paths"][route.path][route.method.lower()]
        assert operation["summary"] == route.summary
        if route.body is not None:
            assert "requestBody" in operation, route


@pytest.mark.parametrize("route", BODY_ROUTES, ids=_route_id)
def test_a_client_gone_mid_body_is_no_error_of_the_hubs(world: World, route: Route) -> None:
    """A process stopped while its request body was on the way (a follower SIGTERMed mid
    mark-read): nothing is done and nothing is logged as an error (the autouse check reads the
    hub's log). The hub then answers the next request as before."""
    host, port = world.hub.url.removeprefix("http://").split(":")
    head = (
        f"{route.method} {world.path(route)} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {world.tenant.token}\r\n"
        f"X-Callboard-Agent: {world.agent}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(head.encode() + b'{"par')
    size = world.hub.log_size()
    with world.tenant.http(world.agent) as http:
        assert http.get("/v1/whoami").status_code == 200
    assert "Traceback" not in world.hub.log_text(size - 2000 if size > 2000 else 0)
