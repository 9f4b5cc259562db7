"""A revoked token's open streams and waiting reads end when the revocation is made: no event is
written and no mail is read for it afterwards, on the hub that revoked it at once, and on another
replica of a shared PostgreSQL store within its recheck time.

Real hubs, real HTTP: httpx and the SSE reader of the conftest; a raw socket where the test must
know the hub has begun a long-poll (it asks for ``Expect: 100-continue``, which the hub answers
when it reads the request's body, just before the poll waits).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.hub.conftest import EventStream, Hub, Tenant, auth_headers, expect_http_error, unique
from tests.support.postgres import fresh_database


def _revoke(tenant: Tenant, token_id: str) -> None:
    with tenant.http() as http:
        answer = http.delete(f"/v1/tokens/{token_id}")
    assert answer.status_code == 200, answer.text


def _state_of(tenant: Tenant, agent: str, message_id: str) -> str:
    with tenant.http(agent) as http:
        items = http.get("/v1/inbox", params={"all": "true"}).json()
    return next(item["state"] for item in items if item["message"]["id"] == message_id)


def _send(tenant: Tenant, sender: str, to: str, text: str) -> str:
    with tenant.http(sender) as http:
        answer = http.post("/v1/messages", json={"to": to, "text": text})
    assert answer.status_code == 201, answer.text
    return answer.json()["message_id"]


def test_revoking_a_token_ends_its_event_stream_before_any_later_mail_is_written(tenant: Tenant) -> None:
    bob = unique("bob")
    issued = tenant.agent_token(bob)
    before = _send(tenant, "alice", bob, "before the revocation")
    with EventStream(tenant.hub.url, issued["token"], after=0) as stream:
        stream.ready()
        assert stream.next_event().message_id == before
        _revoke(tenant, issued["id"])
        after = _send(tenant, "alice", bob, "after the revocation")
        rest = []
        while (block := stream.next_block()) is not None:  # the hub ends the stream
            rest.append(block)
    assert not [b for b in rest if "data" in b], f"the stream went on after the revocation: {rest}"
    assert _state_of(tenant, bob, after) != "read"
    with tenant.hub.http(issued["token"]) as http:
        expect_http_error(http.get("/v1/events"), 401, "unauthorized")


def _begin_long_poll(hub: Hub, token: str, wait: float) -> socket.socket:
    """A POST /v1/read?wait= the hub has begun: it has read the (empty) body and waits next."""
    host, port = hub.url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    head = f"POST /v1/read?wait={wait:g} HTTP/1.1\r\nHost: hub\r\nContent-Length: 0\r\nExpect: 100-continue\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in auth_headers(token).items())
    sock.sendall(head.encode() + b"\r\n")
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(4096)
    assert received.startswith(b"HTTP/1.1 100 "), received
    return sock


def _answer_of(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the hub closed the connection without an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(65536)
    return int(head.split()[1]), body


def test_revoking_a_token_ends_its_waiting_long_poll_and_later_mail_stays_unread(tenant: Tenant) -> None:
    bob = unique("bob")
    issued = tenant.agent_token(bob)
    with _begin_long_poll(tenant.hub, issued["token"], wait=30) as sock:
        _revoke(tenant, issued["id"])
        after = _send(tenant, "alice", bob, "after the revocation")
        status, body = _answer_of(sock)
    assert status == 401 and b'"unauthorized"' in body, (status, body)
    assert _state_of(tenant, bob, after) != "read"


@pytest.fixture(scope="module")
def two_replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Hub]]:
    with fresh_database() as url:
        root = tmp_path_factory.mktemp("revoking-replicas")
        hubs = [Hub(root / f"r{i}", args=["--db", url], prints_admin=i == 0) for i in range(2)]
        try:
            hubs[0].start()
            hubs[1].start()
            hubs[1].admin_token = hubs[0].admin_token
            yield hubs
        finally:
            for hub in hubs:
                hub.close()


def test_a_token_revoked_through_one_replica_ends_its_stream_on_another(two_replicas: list[Hub]) -> None:
    first, second = two_replicas
    bob = unique("bob")
    issued = first.issue(agent=bob)
    # The recheck is 5 s; the stream's reader waits up to 30 s for its end (keep-alives come every 15 s).
    with EventStream(second.url, issued["token"], read_timeout=30) as stream:
        stream.ready()
        with first.admin() as http:
            assert http.delete(f"/v1/tokens/{issued['id']}").status_code == 200
        rest = []
        while (block := stream.next_block()) is not None:
            rest.append(block)
    assert not [b for b in rest if "data" in b], rest
    with httpx.Client(base_url=second.url, timeout=15) as http:
        expect_http_error(http.get("/v1/events", headers=auth_headers(issued["token"])), 401, "unauthorized")
