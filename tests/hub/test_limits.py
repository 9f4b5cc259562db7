"""One client cannot stall the hub or make it hold what it likes: a send that guesses names for a
hundred typos in a workspace of thousands leaves every other request answering; a request's head
is capped in size (431) and in time, its body in time; a client guessing tokens is slowed down
(429) before the store is asked; a credential holds a bounded number of streams and waiting reads.

Everything is real: ``callboard up`` subprocesses, raw sockets where HTTP clients would hide
what is tested (a head that never ends), httpx otherwise.
"""

from __future__ import annotations

import json
import random
import selectors
import socket
import string
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.hub.conftest import EventStream, Hub, Tenant, auth_headers, expect_http_error, unique
from tests.support.waiting import wait_until

AGENTS = 3000
TYPOS = 100  # the most recipients one send may have
CLOSE_WITHIN = 90.0  # how long a test waits for the hub to close a connection (its bounds are far less)


@pytest.fixture
def hub_with(tmp_path: Path) -> Iterator[Callable[..., Hub]]:
    """A fresh hub started with more options of ``up``."""
    made: list[Hub] = []

    def make(*args: str) -> Hub:
        hub = Hub(tmp_path / f"hub-{len(made)}", args=list(args))
        made.append(hub)
        return hub.start()

    try:
        yield make
    finally:
        for hub in made:
            hub.close()


def _letters(count: int) -> str:
    return "".join(random.choice(string.ascii_lowercase) for _ in range(count))


def _create_agents(tenant: Tenant, names: list[str]) -> None:
    def create(chunk: list[str]) -> None:
        with tenant.http("setup") as http:
            for name in chunk:
                assert http.post("/v1/agents", json={"name": name}).status_code == 201

    with ThreadPoolExecutor(32) as pool:
        list(pool.map(create, [names[i::32] for i in range(32)]))


def test_health_answers_while_a_send_guessing_a_hundred_typos_among_thousands_of_agents_is_decided(
    tenant: Tenant,
) -> None:
    names = [f"member-{i:04d}-{_letters(6)}" for i in range(AGENTS)]
    _create_agents(tenant, names)
    typed = {}  # typo -> the name it misspells (a letter of its tail dropped)
    for name in random.sample(names, TYPOS):
        at = random.randrange(len(name) - 6, len(name))
        typed[name[:at] + name[at + 1 :]] = name
    # Addressed on a machine, a name no agent has is refused with its guesses (nothing stored),
    # and the refusal goes out the moment the guessing ends.
    request = _raw_request(
        tenant, "typist", "POST", "/v1/messages", {"to": [f"{t}@elsewhere" for t in typed], "text": "hello"}
    )
    with tenant.http("typist") as http:
        assert http.get("/v1/whoami").status_code == 200  # the sender exists: its request runs straight through
    answered_first = False
    for _ in range(5):  # rounds (the first guess of a workspace also reads its names: the longest)
        answer, answered_first = _health_while(tenant.hub, request)
        expect_http_error(answer, 404, "unknown_recipient")
        for typo, meant in typed.items():
            assert f"no agent named {typo} exists. Did you mean {meant!r}" in answer.json()["error"]["message"]
        if answered_first:
            break
    assert answered_first, "no /health sent during the send was answered before it: the hub stalled on the send"
    with tenant.http("typist") as http:  # sent to the names alone, they are created, each with its guess
        sent = http.post("/v1/messages", json={"to": list(typed), "text": "hello"})
    assert sent.status_code == 201, sent.text
    notes = {r["address"]: r["reason"] for r in sent.json()["recipients"]}
    for typo, meant in typed.items():
        assert f"Did you mean {meant!r}" in notes[typo], notes[typo]


def _raw_request(tenant: Tenant, agent: str, method: str, path: str, body: object) -> bytes:
    data = json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in auth_headers(tenant.token, agent).items())
    return head.encode() + b"\r\n" + data


def _health_while(hub: Hub, request: bytes) -> tuple[httpx.Response, bool]:
    """Write ``request``, then ask /health again and again on another connection until the
    request's answer arrives: its answer, and whether some /health answer arrived while the
    request's had not (on loopback, an answer written by the hub is readable at once, so a hub
    that answers /health only after the request has finished can never be seen doing so)."""
    with _connect(hub) as sending, _connect(hub) as health:
        health_request = b"GET /health HTTP/1.1\r\nHost: hub\r\n\r\n"
        sending.sendall(request)
        answered_first = False
        with selectors.DefaultSelector() as selector:
            selector.register(sending, selectors.EVENT_READ)
            selector.register(health, selectors.EVENT_READ)
            health.sendall(health_request)
            while True:
                ready = {key.fileobj for key, _ in selector.select(timeout=60)}
                assert ready, "neither the send nor /health was answered within 60 s"
                if sending in ready:
                    return _read_answer(sending), answered_first
                assert b" 200 " in _read_answer_bytes(health)
                answered_first = True
                health.sendall(health_request)


def _read_answer_bytes(sock: socket.socket) -> bytes:
    """One whole HTTP answer with a Content-Length, read from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(
        next(line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def _read_answer(sock: socket.socket) -> httpx.Response:
    head, _, body = _read_answer_bytes(sock).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:]]
    return httpx.Response(
        int(lines[0].split()[1]), headers=headers, content=body, request=httpx.Request("POST", "http://hub/v1/messages")
    )


def test_request_headers_over_the_limit_get_431_in_the_hubs_error_shape(hub: Hub) -> None:
    with httpx.Client(base_url=hub.url, timeout=30) as http:
        one_huge = http.get("/health", headers={"X-Padding": "a" * 20_000_000})
        many = http.get("/health", headers={f"X-Pad-{i}": "b" * 100 for i in range(2000)})
        still_fine = http.get("/health", headers={"X-Padding": "a" * 4000})
    expect_http_error(one_huge, 431, "headers_too_large")
    expect_http_error(many, 431, "headers_too_large")
    assert still_fine.status_code == 200


def _closed_by_hub(sock: socket.socket) -> bytes:
    """Everything the hub sends until it closes the connection (fails if it has not within CLOSE_WITHIN)."""
    sock.settimeout(CLOSE_WITHIN)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        pytest.fail(f"the hub kept the connection open for {CLOSE_WITHIN:g} s (received {received!r})")
    return received


def _connect(hub: Hub) -> socket.socket:
    host, port = hub.url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def test_a_connection_whose_request_head_never_ends_is_closed_by_the_hub(hub: Hub) -> None:
    with _connect(hub) as half_a_head, _connect(hub) as silent:
        half_a_head.sendall(b"GET /health HTTP/1.1\r\nHost: hub\r\nX-Slow: ")
        answer = _closed_by_hub(half_a_head)
        assert answer.startswith(b"HTTP/1.1 408 ") and b'"request_timeout"' in answer, answer
        assert _closed_by_hub(silent) == b""  # not a byte sent: closed without a word


def test_a_request_whose_body_never_ends_is_answered_408_and_closed(tenant: Tenant) -> None:
    head = (
        "POST /v1/messages HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in auth_headers(tenant.token, unique("slow")).items())
        + "\r\n"
    )
    with _connect(tenant.hub) as sock:
        sock.sendall(head.encode() + b'{"to": "someone", "text": "')
        answer = _closed_by_hub(sock)
    assert answer.startswith(b"HTTP/1.1 408 ") and b'"request_timeout"' in answer, answer


def test_a_client_sending_unknown_tokens_gets_429_before_long_and_tokens_in_use_still_work(
    make_hub: Callable[..., Hub],
) -> None:
    hub = make_hub()
    statuses: list[int] = []
    with httpx.Client(base_url=hub.url, timeout=15) as http:
        assert http.get("/v1/whoami", headers=auth_headers(hub.admin_token, "alice")).status_code == 200
        for _ in range(300):
            answer = http.get("/v1/whoami", headers=auth_headers(f"cb_guess-{_letters(20)}", "x"))
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                break
        assert statuses[0] == 401 and statuses[-1] == 429, statuses
        expect_http_error(answer, 429, "rate_limited")
        assert int(answer.headers["Retry-After"]) >= 1
        again = http.get("/v1/whoami", headers=auth_headers(f"cb_guess-{_letters(20)}", "x"))
        expect_http_error(again, 429, "rate_limited")  # refused now without a look at the store
        mine = http.get("/v1/whoami", headers=auth_headers(hub.admin_token, "alice"))
    assert mine.status_code == 200, mine.text


def test_a_credential_holds_at_most_max_streams_streams_and_waiting_reads(hub_with: Callable[..., Hub]) -> None:
    hub = hub_with("--max-streams", "2")
    token = hub.issue(kind="user", workspace="team")["token"]
    other = hub.issue(kind="user", workspace="team")["token"]
    first = EventStream(hub.url, token, "alice")
    second = EventStream(hub.url, token, "bob")
    try:
        first.ready()
        second.ready()
        with hub.http(token, "carol") as http:
            third = http.get("/v1/events")
            expect_http_error(third, 429, "too_many_streams")
            assert "--max-streams" in third.json()["error"]["message"]
            expect_http_error(http.post("/v1/read", params={"wait": 5}), 429, "too_many_streams")
            assert http.post("/v1/read").status_code == 200  # a read that does not wait is no stream
        with hub.http(other, "carol") as http:
            assert http.post("/v1/read", params={"wait": 0.1}).status_code == 200  # another credential's own count
        second.close()

        def opens_again() -> bool:
            with hub.http(token, "dave") as http:
                return http.post("/v1/read", params={"wait": 0.1}).status_code == 200

        wait_until(opens_again, what="a stream's place to be free once it closed")
    finally:
        first.close()
        second.close()
