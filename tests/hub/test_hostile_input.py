"""What a careless or hostile client sends the hub: values JSON cannot carry, numbers and ids
past their bounds, resume points in other scripts' digits, megabyte labels, methods a path does
not take. Each is answered 4xx with its stable code, leaves nothing behind, and breaks nothing
for anyone else (the folder's autouse check fails a test whose hub logged a traceback)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from callboard import address, limits
from tests.hub.conftest import CLI, Tenant, expect_error, expect_http_error, unique

NON_JSON_NUMBERS = {
    "NaN in a data object": b'{"to": "%s", "parts": [{"data": {"x": NaN}}]}',
    "Infinity in a data list": b'{"to": "%s", "parts": [{"data": [Infinity]}]}',
    "-Infinity as the data": b'{"to": "%s", "parts": [{"data": -Infinity}]}',
    "1e400 as the data": b'{"to": "%s", "parts": [{"data": 1e400}]}',
    "NaN in a part's metadata": b'{"to": "%s", "parts": [{"text": "t", "metadata": {"m": NaN}}]}',
}


@pytest.mark.parametrize("body", NON_JSON_NUMBERS.values(), ids=NON_JSON_NUMBERS.keys())
def test_a_value_json_cannot_carry_is_refused_and_the_mailbox_still_reads(tenant: Tenant, body: bytes) -> None:
    sender, reader, fresh = unique("alice"), unique("bob"), unique("nobody")
    with tenant.http(sender) as http:
        assert http.post("/v1/messages", json={"to": reader, "text": "before"}).status_code == 201
        for to in (reader, fresh):
            answer = http.post("/v1/messages", content=body % to.encode(), headers={"Content-Type": "application/json"})
            expect_http_error(answer, 400, "bad_request")
        expect_http_error(http.get(f"/v1/agents/{fresh}"), 404, "unknown_agent")  # nothing stored, not even it
    with tenant.http(reader) as http:
        got = http.post("/v1/read", params={"peek": "true", "after": 0})
        assert got.status_code == 200, got.text
        assert [item["message"]["parts"] for item in got.json()["items"]] == [[{"text": "before"}]]


def test_the_command_line_refuses_a_data_part_json_cannot_carry(cli: CLI) -> None:
    proc = cli.run("send", "bob", "see the data", "--data", '{"x": NaN}', agent="alice")
    expect_error(proc, "bad_request", as_json=False)
    assert "NaN" in proc.stderr or "nan" in proc.stderr
    assert cli.run_json("read", "--peek", agent="bob")["items"] == []


@dataclass(frozen=True)
class Out:
    """A request with something out of its bounds, and the 4xx it must get."""

    what: str
    method: str
    path: str
    status: int
    code: str
    json: Any = None
    params: dict[str, Any] | None = None
    headers: dict[str, str | bytes] = field(default_factory=dict)


SEQ_PAST = str(2**63)
OUT_OF_BOUNDS = [
    *(
        Out(f"pid {pid}", "POST", "/v1/sessions", 400, "bad_request", json={"pid": pid})
        for pid in (2**31, 2**40, 2**63, 2**70)
    ),
    Out("pid -1", "POST", "/v1/sessions", 400, "bad_request", json={"pid": -1}),
    Out("proc_start 2**64", "POST", "/v1/sessions", 400, "bad_request", json={"pid": 4242, "proc_start": 2**64}),
    Out("proc_start -1", "POST", "/v1/sessions", 400, "bad_request", json={"pid": 4242, "proc_start": -1}),
    Out(
        "a 201-character terminal", "POST", "/v1/sessions", 413, "too_large", json={"pid": 4242, "terminal": "t" * 201}
    ),
    Out("a runtime past a name", "POST", "/v1/sessions", 400, "bad_name", json={"pid": 4242, "runtime": "r" * 65}),
    Out("read after 2**63", "POST", "/v1/read", 400, "bad_request", params={"after": SEQ_PAST}),
    Out("read after 10**30", "POST", "/v1/read", 400, "bad_request", params={"after": "1" + "0" * 30}),
    Out("read after of 5000 digits", "POST", "/v1/read", 400, "bad_request", params={"after": "9" * 5000}),
    Out("read after '²'", "POST", "/v1/read", 400, "bad_request", params={"after": "²"}),
    Out("read limit in Arabic-Indic digits", "POST", "/v1/read", 400, "bad_request", params={"limit": "١٠"}),
    Out("read limit 1001", "POST", "/v1/read", 400, "bad_request", params={"limit": 1001}),
    *(
        Out(f"read wait {w}", "POST", "/v1/read", 400, "bad_request", params={"wait": w})
        for w in ("nan", "inf", "1e400")
    ),
    Out("inbox limit 10**30", "GET", "/v1/inbox", 400, "bad_request", params={"limit": "1" + "0" * 30}),
    Out("surface limit '²'", "POST", "/v1/surface", 400, "bad_request", params={"via": "hook", "limit": "²"}),
    Out("events after 2**63", "GET", "/v1/events", 400, "bad_request", params={"after": SEQ_PAST}),
    Out("events after '²'", "GET", "/v1/events", 400, "bad_request", params={"after": "²"}),
    Out("Last-Event-ID of 5000 nines", "GET", "/v1/events", 400, "bad_request", headers={"Last-Event-ID": "9" * 5000}),
    Out("Last-Event-ID '²' in Latin-1", "GET", "/v1/events", 400, "bad_request", headers={"Last-Event-ID": b"\xb2"}),
    Out("Last-Event-ID '²' in UTF-8", "GET", "/v1/events", 400, "bad_request", headers={"Last-Event-ID": "²".encode()}),
    Out("a 500,000-character token label", "POST", "/v1/tokens", 413, "too_large", json={"label": "x" * 500_000}),
    Out("a 201-character token label", "POST", "/v1/tokens", 413, "too_large", json={"label": "x" * 201}),
    Out("a token label with a NUL", "POST", "/v1/tokens", 400, "bad_request", json={"label": "a\x00b"}),
    Out("ack of 1001 ids", "POST", "/v1/ack", 413, "too_large", json={"message_ids": [SEQ_PAST] * 1001}),
    Out("reach a pid past 2**31-1", "GET", "/v1/reach", 400, "bad_address", params={"address": f"bob@box#{2**31}"}),
    Out("a session id that is no id", "DELETE", "/v1/sessions/%00", 404, "unknown_session"),
    Out(
        "a session header that is no id",
        "GET",
        "/v1/whoami",
        404,
        "unknown_session",
        headers={"X-Callboard-Session": "x" * 300},
    ),
    Out(
        "a subject with a NUL",
        "POST",
        "/v1/messages",
        400,
        "bad_request",
        json={"to": "bob", "text": "t", "subject": "\x00"},
    ),
]


@pytest.mark.parametrize("out", OUT_OF_BOUNDS, ids=lambda o: o.what)
def test_a_number_or_text_past_its_bound_gets_its_code_and_leaves_nothing(tenant: Tenant, out: Out) -> None:
    agent = unique("carol")
    with tenant.http(agent) as http:
        tokens = len(http.get("/v1/tokens").json())
        answer = http.request(out.method, out.path, json=out.json, params=out.params, headers=out.headers)
        expect_http_error(answer, out.status, out.code)
        who = http.get("/v1/who")
        assert who.status_code == 200, who.text
        assert len(http.get("/v1/tokens").json()) == tokens
        assert who.json()["agents"] == []  # no agent was created: not the caller, nor a recipient
        assert who.json()["machines"] == []  # nor a session


def test_a_process_header_in_other_digits_is_ignored_not_a_failure(tenant: Tenant) -> None:
    with tenant.http(unique("dave")) as http:
        for value in ("laptop ²:-", "laptop 1:²", f"laptop {2**31}:-", f"laptop 1:{2**64}", "laptop" + " 1:1" * 500):
            answer = http.get("/v1/whoami", headers={"X-Callboard-Process": value.encode("latin-1")})
            assert answer.status_code == 200 and answer.json()["session"] is None, (value, answer.text)


ALLOWED = {
    ("PUT", "/v1/agents"): "GET, HEAD, POST",
    ("DELETE", "/v1/messages"): "POST",
    ("GET", "/v1/read"): "POST",
    ("PATCH", "/v1/sessions/0193a6f0-7c1e-7b3a-9d2e-5f4a3b2c1d0e"): "DELETE",
    ("PUT", "/v1/agents/someone"): "DELETE, GET, HEAD, PATCH",
}


@pytest.mark.parametrize(("method", "path"), ALLOWED, ids=[f"{m} {p}" for m, p in ALLOWED])
def test_a_405_says_which_methods_the_path_takes(tenant: Tenant, method: str, path: str) -> None:
    with tenant.http(unique("erin")) as http:
        answer = http.request(method, path)
    expect_http_error(answer, 405, "method_not_allowed")
    assert answer.headers.get("Allow") == ALLOWED[(method, path)]


def test_openapi_states_the_bounds_the_hub_keeps(tenant: Tenant) -> None:
    with tenant.http() as http:
        document = http.get("/openapi.json").json()
    schemas, paths = document["components"]["schemas"], document["paths"]
    pid = schemas["SessionRequest"]["properties"]["pid"]
    assert (pid["minimum"], pid["maximum"]) == (1, 2**31 - 1)
    assert schemas["SessionRequest"]["properties"]["proc_start"]["anyOf"][0]["maximum"] == 2**63 - 1
    assert schemas["TokenRequest"]["properties"]["label"]["anyOf"][0]["maxLength"] == limits.TOKEN_LABEL_CHARS
    assert schemas["AgentRequest"]["properties"]["name"]["pattern"] == address.NAME_PATTERN
    query = {p["name"]: p for p in paths["/v1/read"]["post"]["parameters"]}
    assert query["limit"]["schema"] == {"type": "integer", "minimum": 1, "maximum": limits.READ_LIMIT_MAX}
    assert query["after"]["schema"]["maximum"] == 2**63 - 1
    assert query["wait"]["schema"]["maximum"] == limits.WAIT_SECONDS_MAX
    events = {p["name"]: p for p in paths["/v1/events"]["get"]["parameters"]}
    assert re.fullmatch(events["Last-Event-ID"]["schema"]["pattern"], "42")
    assert not re.fullmatch(events["Last-Event-ID"]["schema"]["pattern"], "²")
    (message_id,) = [p for p in paths["/v1/messages/{message_id}/status"]["get"]["parameters"] if p["in"] == "path"]
    assert message_id["schema"]["pattern"] == address.UUID_PATTERN
    surface = {p["name"]: p for p in paths["/v1/surface"]["post"]["parameters"]}
    assert surface["via"]["required"] and surface["via"]["schema"]["enum"] == ["socket", "hook", "waiter", "runner"]
    assert "links" in paths["/v1/messages"]["post"]["responses"]["2XX"]
