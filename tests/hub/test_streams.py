"""Reading without polling: the SSE stream (resuming after a disconnect with no loss and no
duplicate) and the long-poll read (woken by a send, well before its wait ends)."""

from __future__ import annotations

import json
import random
import re
import socket
import struct
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.hub.conftest import (
    CLI,
    ONE_STREAM,
    Event,
    EventStream,
    Hub,
    Tenant,
    auth_headers,
    expect_http_error,
    unique,
    until_read_waits,
    waiting_read,
)
from tests.support.cli_runner import describe
from tests.support.waiting import wait_until

LONG_WAIT = 60.0  # a long-poll's wait: the tests' deadlines for waking are far inside it
WAKE_DEADLINE = 20.0


def _send(hub: Hub, token: str, sender: str, to: str, text: str) -> str:
    with hub.http(token, sender) as http:
        answer = http.post("/v1/messages", json={"to": to, "text": text})
    assert answer.status_code == 201, answer.text
    return answer.json()["message_id"]


@pytest.mark.parametrize("resume_by", ["last-event-id", "after"])
def test_an_sse_subscriber_resumes_after_disconnect_with_no_loss_or_duplicate(tenant: Tenant, resume_by: str) -> None:
    hub, alice, bob = tenant.hub, unique("alice"), unique("bob")
    bob_token = tenant.agent_token(bob)["token"]
    sent: list[str] = []

    first = EventStream(hub.url, bob_token)
    try:
        first.ready()
        sent += [_send(hub, tenant.token, alice, bob, f"m{i}") for i in range(1, 4)]
        received = [first.next_event(), first.next_event()]  # m3 is on the wire but never read
    finally:
        first.close()  # the disconnect
    assert [e.message_id for e in received] == sent[:2]
    assert [e.text for e in received] == ["m1", "m2"]
    assert all(e.event == "message" and e.item["message"]["sender"] == alice for e in received)
    assert received[0].id < received[1].id

    sent += [_send(hub, tenant.token, alice, bob, f"m{i}") for i in (4, 5)]  # while nobody listens
    last = received[-1].id
    resume = {"last_event_id": last} if resume_by == "last-event-id" else {"after": last}
    with EventStream(hub.url, bob_token, **resume) as second:
        second.ready()
        sent.append(_send(hub, tenant.token, alice, bob, "m6"))  # after the reconnect
        rest = second.events_until(sent[-1])
    received += rest

    assert [e.message_id for e in received] == sent  # every one, once, in order
    assert [e.text for e in received] == [f"m{i}" for i in range(1, 7)]
    ids = [e.id for e in received]
    assert ids == sorted(set(ids))


def test_sse_streaming_marks_nothing_read(tenant: Tenant) -> None:
    hub, alice, bob = tenant.hub, unique("alice"), unique("bob")
    with EventStream(hub.url, tenant.token, bob) as stream:
        stream.ready()
        message_id = _send(hub, tenant.token, alice, bob, "only streamed")
        assert stream.next_event().message_id == message_id
    with tenant.http(bob) as http:
        drained = http.post("/v1/read").json()
    assert [i["message"]["id"] for i in drained["items"]] == [message_id]


def test_an_sse_stream_without_a_resume_point_starts_from_now(tenant: Tenant) -> None:
    hub, alice, bob = tenant.hub, unique("alice"), unique("bob")
    _send(hub, tenant.token, alice, bob, "before the stream")
    with EventStream(hub.url, tenant.token, bob) as stream:
        stream.ready()
        newer = _send(hub, tenant.token, alice, bob, "after the stream opened")
        assert [e.text for e in stream.events_until(newer)] == ["after the stream opened"]


def test_an_sse_subscriber_resumes_across_a_hub_restart_with_no_loss_or_duplicate(make_hub) -> None:
    hub: Hub = make_hub()
    token = hub.admin_token
    sent = []
    with EventStream(hub.url, token, "listener") as stream:
        stream.ready()
        sent.append(_send(hub, token, "talker", "listener", "before the crash"))
        received = [stream.next_event()]
        hub.kill()
    sent.append(_send(hub.start(), token, "talker", "listener", "while reconnecting"))
    with EventStream(hub.url, token, "listener", last_event_id=received[-1].id) as stream:
        stream.ready()
        sent.append(_send(hub, token, "talker", "listener", "after the restart"))
        received += stream.events_until(sent[-1])
    assert [e.message_id for e in received] == sent
    assert [e.text for e in received] == ["before the crash", "while reconnecting", "after the restart"]


def test_a_bad_last_event_id_is_bad_request(tenant: Tenant) -> None:
    with tenant.http(unique("bob")) as http:
        answer = http.get("/v1/events", headers={"Last-Event-ID": "not-a-number"})
    expect_http_error(answer, 400, "bad_request")


def _exists(hub: Hub, token: str, agent: str) -> bool:
    with hub.http(token, "observer") as http:
        return http.get(f"/v1/agents/{agent}").status_code == 200


def test_a_long_poll_wakes_on_a_send_and_returns_it_well_before_its_wait_ends(make_hub) -> None:
    hub = make_hub(args=ONE_STREAM)  # its waiting read is seen by the place it holds
    token = hub.issue(kind="user", workspace="team")["token"]
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(waiting_read, hub, token, "bob", LONG_WAIT, LONG_WAIT + 10)
        until_read_waits(hub, token)  # the request is there, with nothing to return
        assert not waiting.done(), "an empty mailbox answered before its wait ended"
        message_id = _send(hub, token, "alice", "bob", "wake up")
        try:
            answer = waiting.result(timeout=WAKE_DEADLINE)
        except FutureTimeout:
            pytest.fail(f"the long-poll did not wake within {WAKE_DEADLINE:g} s of a send")
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert [(i["message"]["id"], i["message"]["parts"]) for i in result["items"]] == [
        (message_id, [{"text": "wake up"}])
    ]
    assert result["unread"] == 0


def test_a_waiting_cli_reader_wakes_on_a_send_through_the_hub(tenant: Tenant, cli: CLI) -> None:
    hub, alice, bob = tenant.hub, unique("alice"), unique("bob")
    env = {"CALLBOARD_HUB": hub.url, "CALLBOARD_TOKEN": tenant.token}
    proc = cli.spawn("read", "--wait", LONG_WAIT, "--json", agent=bob, env=env)
    try:
        wait_until(
            lambda: _exists(hub, tenant.token, bob) or proc.poll() is not None, what="the reader to reach the hub"
        )
        assert proc.poll() is None, proc.communicate()
        _send(hub, tenant.token, alice, bob, "wake the cli")
        try:
            out, err = proc.communicate(timeout=WAKE_DEADLINE)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the waiting reader did not wake within {WAKE_DEADLINE:g} s of a send")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert '"wake the cli"' in out, describe_proc(proc, out, err)


def describe_proc(proc: subprocess.Popen[str], out: str, err: str) -> str:
    return describe(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))


def test_a_long_poll_for_an_empty_mailbox_answers_empty_when_its_wait_ends(tenant: Tenant) -> None:
    with tenant.http(unique("idle")) as http:
        answer = http.post("/v1/read", params={"wait": 0.3})
    assert answer.status_code == 200, answer.text
    assert answer.json()["items"] == []


# --- the stream's fast path under load: slow readers, many streams, readers that go -------------
#
# While a stream waits caught up, a delivery pushed right after its cursor is written from
# within the publisher's call; a write the client is slow to take carries on in a task, and
# later deliveries take the stream's own path behind it. These tests speak raw HTTP/1.1 over
# sockets with a small receive buffer and small segments: the hub's send buffer grows by
# segments, to ~100 KB with these where Linux would let it grow to megabytes. Where a test
# must be sure that the hub holds a backlog itself (uvicorn paused its writes), it writes
# megabytes past the largest a send buffer may grow here.

SMALL_RCVBUF = 4096
SMALL_MSS = 1024
PAST_PUSH_BACKLOG = 300  # more deliveries than a stream keeps pushed (256): the rest is read from the store
BURSTS, BURST_BYTES = 3, 2_500_000  # a slow reader's connection holds ~0.1 MB, ~1.4 MB once it ran a while
BULKY_MIN, BULKY_MAX = 10_000, 40_000  # characters of text a message
CATCH_UP_DEADLINE = 60.0


def _kernel_send_buffer_max() -> int:
    """How large a TCP socket's send buffer may grow here (Linux tunes it up to tcp_wmem's
    maximum): what the hub's kernel may take off its hands before the hub has to wait."""
    try:
        return int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    except (OSError, ValueError, IndexError):
        return 4 * 1024 * 1024


# Unread stream bytes past which the hub itself holds a backlog (uvicorn paused its writes):
# past the hub socket's send buffer at its largest, the reader's tiny window, and a margin.
BACKED_UP = _kernel_send_buffer_max() + 1_000_000


def _post(http: httpx.Client, to: str, text: str) -> str:
    answer = http.post("/v1/messages", json={"to": to, "text": text})
    assert answer.status_code == 201, answer.text
    return answer.json()["message_id"]


def _bulky(index: int, rng: random.Random) -> str:
    """A large text that says which message it is, and whose every byte is checkable."""
    body = rng.randbytes(rng.randint(BULKY_MIN, BULKY_MAX) // 2).hex()
    return f"#{index:04d} {body} #{index:04d}"


class RawEventStream:
    """GET /v1/events over a bare socket: the chunked body decoded, then its SSE blocks.

    ``rcvbuf`` and ``mss`` are set before connecting (the window the hub may fill, and the
    segments it fills it with); a reader that stops calling ``next_event`` stops reading, and
    the hub's writes back up. Every read has a deadline: waiting past it fails the test."""

    def __init__(
        self,
        url: str,
        token: str,
        agent: str,
        *,
        rcvbuf: int | None = None,
        mss: int | None = None,
        after: int | None = None,
    ) -> None:
        parts = urlsplit(url)
        assert parts.hostname is not None and parts.port is not None, url
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if mss is not None and hasattr(socket, "TCP_MAXSEG"):
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
        self.sock.settimeout(10.0)
        self.sock.connect((parts.hostname, parts.port))
        query = "" if after is None else f"?after={after}"
        fields = {"Host": parts.netloc, "Accept": "text/event-stream", **auth_headers(token, agent)}
        head = f"GET /v1/events{query} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
        self.sock.sendall(head.encode("latin-1"))
        self._raw = bytearray()  # received, not yet de-chunked
        self._body = bytearray()  # de-chunked, not yet split into blocks
        self.ended = False  # the terminating chunk arrived
        self.status = 0
        self.headers: dict[str, str] = {}

    def __enter__(self) -> RawEventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, *, reset: bool = False) -> None:
        """Hang up; with ``reset``, abortively (an RST, as a crashed client's kernel sends)."""
        if self.sock.fileno() == -1:
            return
        if reset:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def _receive(self, deadline: float, what: str) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            pytest.fail(f"timed out waiting for {what}")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(1 << 16)
        except TimeoutError:
            pytest.fail(f"timed out waiting for {what}")
        assert data, f"the hub closed the connection while we waited for {what}"
        self._raw += data

    def _dechunk(self) -> None:
        while not self.ended:
            end = self._raw.find(b"\r\n")
            if end < 0:
                return
            size = int(bytes(self._raw[:end]).split(b";")[0], 16)
            if len(self._raw) < end + 2 + size + 2:
                return
            assert self._raw[end + 2 + size : end + 4 + size] == b"\r\n", "a malformed chunk"
            self._body += self._raw[end + 2 : end + 2 + size]
            del self._raw[: end + 4 + size]
            self.ended = size == 0

    def ready(self, deadline: float | None = None) -> int:
        """Read the answer's head and the opening block; the cursor the stream starts after."""
        deadline = deadline or time.monotonic() + 10.0
        while b"\r\n\r\n" not in self._raw:
            self._receive(deadline, "the answer's head")
        head, _, rest = bytes(self._raw).partition(b"\r\n\r\n")
        self._raw = bytearray(rest)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        self.status = int(status_line.split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        assert self.status == 200, (status_line, self.headers)
        assert self.headers["content-type"].startswith("text/event-stream"), self.headers
        assert self.headers.get("transfer-encoding") == "chunked", self.headers
        first = self.next_block(deadline)
        assert first is not None and "retry" in first, first
        opening = re.fullmatch(r"stream of \S+, after (\d+)", first[""][0])
        assert opening, first
        return int(opening.group(1))

    def next_block(self, deadline: float) -> dict[str, list[str]] | None:
        """The fields of the next block (comments under ""), or None at the body's end."""
        while True:
            self._dechunk()
            end = self._body.find(b"\n\n")
            if end >= 0:
                text = self._body[:end].decode()
                del self._body[: end + 2]
                block: dict[str, list[str]] = {}
                for line in text.split("\n"):
                    name, _, value = line.partition(":")
                    block.setdefault(name, []).append(value[1:] if value.startswith(" ") else value)
                return block
            if self.ended:
                assert not self._body, f"the stream ended inside a block: {bytes(self._body[:200])!r}"
                return None
            self._receive(deadline, "the next event")

    def next_event(self, deadline: float) -> Event:
        while True:
            block = self.next_block(deadline)
            assert block is not None, "the event stream ended"
            if "data" in block:
                assert block.get("event") == ["message"], block
                return Event(int(block["id"][0]), "message", json.loads("\n".join(block["data"])))

    def events(self, count: int, deadline: float) -> list[Event]:
        return [self.next_event(deadline) for _ in range(count)]


def _slow_reader(url: str, token: str, agent: str) -> RawEventStream:
    """A stream whose connection holds little: once its reader stops, the hub soon has to wait."""
    return RawEventStream(url, token, agent, rcvbuf=SMALL_RCVBUF, mss=SMALL_MSS)


def _expect_in_order(events: list[Event], cursor: int, sent: list[str], texts: dict[str, str]) -> None:
    """``events`` are exactly the deliveries of ``sent``, once each, in order, ids cursor+1, cursor+2, …"""
    got = [e.message_id for e in events]
    missing, extra = set(sent) - set(got), [m for m in got if m not in set(sent)]
    assert not missing and not extra, f"{len(missing)} missing, unexpected {extra[:5]}"
    assert len(got) == len(set(got)), "a delivery arrived twice"
    assert got == sent, "deliveries arrived out of order"
    assert [e.id for e in events] == list(range(cursor + 1, cursor + 1 + len(sent)))
    assert [e.item["seq"] for e in events] == [e.id for e in events]
    for event in events:
        assert event.text == texts[event.message_id], f"the text of {event.message_id} was altered"


@pytest.mark.parametrize(("via", "pace"), [("direct", "stalled"), ("channel", "stalled"), ("direct", "bursts")])
def test_a_reader_that_falls_behind_gets_every_event_once_in_order_when_it_reads_again(
    tenant: Tenant, via: str, pace: str
) -> None:
    hub, alice, bob, carol = tenant.hub, unique("alice"), unique("bob"), unique("carol")
    to = bob
    if via == "channel":
        to = f"#{unique('chan')}"
        with tenant.http(alice) as http:
            assert http.post("/v1/channels", json={"name": to[1:]}).status_code == 201
        with tenant.http(bob) as http:
            assert http.post(f"/v1/channels/{to[1:]}/join").status_code == 200
    rng = random.Random(f"{via} {pace}")
    texts: dict[str, str] = {}
    sent: list[str] = []
    received: list[Event] = []
    with _slow_reader(hub.url, tenant.token, bob) as slow:
        cursor = slow.ready()
        deadline = time.monotonic() + CATCH_UP_DEADLINE
        with tenant.http(alice) as http:

            def send(text: str) -> int:
                sent.append(_post(http, to, text))
                texts[sent[-1]] = text
                return len(text)

            if pace == "stalled":
                # bob reads nothing: megabytes more than the connection's kernel buffers hold,
                # so the hub has to wait on bob's stream; then many small ones at once, more
                # than a stream keeps pushed while it waits.
                volume = 0
                while volume < BACKED_UP:
                    volume += send(_bulky(len(sent), rng))
                _expect_others_served(tenant, alice, carol)
                for _ in range(PAST_PUSH_BACKLOG):
                    send(f"#{len(sent):04d} small")
                _expect_others_served(tenant, alice, carol)
            else:
                # bob keeps still while a burst backs the hub's writes up, then reads all of it:
                # his stream catches up and waits on the fast path again, to back up anew.
                for burst in range(BURSTS):
                    volume = 0
                    while volume < BURST_BYTES:
                        volume += send(_bulky(len(sent), rng))
                    for _ in range(rng.randint(1, 20)):
                        send(f"#{len(sent):04d} small")
                    if burst == 0:
                        _expect_others_served(tenant, alice, carol)
                    received += slow.events(len(sent) - len(received), deadline)
        received += slow.events(len(sent) - len(received), deadline)
        _expect_in_order(received, cursor, sent, texts)

        # Caught up again, the stream takes the fast path: the next send arrives, and nothing else.
        with tenant.http(alice) as http:
            last = _post(http, to, "after the backlog")
        after = slow.next_event(time.monotonic() + WAKE_DEADLINE)
        assert (after.message_id, after.id, after.text) == (last, received[-1].id + 1, "after the backlog")


def _expect_others_served(tenant: Tenant, sender: str, reader: str) -> None:
    """While a stream is backed up, the hub still answers: a health check, a send, another stream."""
    with tenant.http(sender) as http:
        assert http.get("/health").status_code == 200
    with EventStream(tenant.hub.url, tenant.token, reader) as other:
        other.ready()
        message_id = _send(tenant.hub, tenant.token, sender, reader, "still served")
        event = other.next_event()
    assert (event.message_id, event.text) == (message_id, "still served")


CHANNEL_MEMBERS = 50
CHANNEL_SENDERS = 4
POSTS_EACH = 5


def test_every_member_stream_gets_every_post_of_a_burst_once_in_order(tenant: Tenant) -> None:
    hub, channel = tenant.hub, unique("chan")
    senders = [unique(f"poster{i}") for i in range(CHANNEL_SENDERS)]
    members = [unique(f"member{i}") for i in range(CHANNEL_MEMBERS)]
    with tenant.http(senders[0]) as http:
        assert http.post("/v1/channels", json={"name": channel}).status_code == 201
    for agent in senders[1:] + members:
        with tenant.http(agent) as http:
            assert http.post(f"/v1/channels/{channel}/join").status_code == 200

    streams = [RawEventStream(hub.url, tenant.token, m) for m in members]
    try:
        cursors = [s.ready() for s in streams]

        def post_all(sender: str) -> list[tuple[str, str]]:
            with tenant.http(sender) as http:  # back to back: no waiting for the streams
                return [
                    (_post(http, f"#{channel}", f"{sender} post {n}"), f"{sender} post {n}") for n in range(POSTS_EACH)
                ]

        with ThreadPoolExecutor(CHANNEL_SENDERS) as pool:
            by_sender = list(pool.map(post_all, senders))
        texts = {message_id: text for posts in by_sender for message_id, text in posts}
        deadline = time.monotonic() + CATCH_UP_DEADLINE
        received = [s.events(len(texts), deadline) for s in streams]
    finally:
        for stream in streams:
            stream.close()

    order = [e.message_id for e in received[0]]  # the order the posts committed in
    for posts in by_sender:  # each sender's posts in the order it sent them
        mine = [message_id for message_id, _ in posts]
        assert [m for m in order if m in set(mine)] == mine
    for member, cursor, events in zip(members, cursors, received, strict=True):
        assert [e.message_id for e in events] == order, f"{member} got the posts in another order"
        _expect_in_order(events, cursor, order, texts)


LEAVE_AFTER = 30  # events read by the reader that goes while reading


@pytest.mark.parametrize("moment", ["stalled", "reading"])
def test_a_reader_that_goes_while_deliveries_are_pushed_leaves_the_hub_serving_without_error(
    make_hub, moment: str
) -> None:
    hub: Hub = make_hub()
    token, channel = hub.admin_token, "busy"
    poster, leaver, stayer = "poster", "leaver", "stayer"
    with hub.http(token, poster) as http:
        assert http.post("/v1/channels", json={"name": channel}).status_code == 201
    for agent in (leaver, stayer):
        with hub.http(token, agent) as http:
            assert http.post(f"/v1/channels/{channel}/join").status_code == 200
    rng = random.Random(moment)
    texts: list[str] = []
    while sum(len(t) for t in texts) < BACKED_UP + 2_000_000:  # the posts go on well after it went
        texts.append(_bulky(len(texts), rng))
    backed_up_at = next(n for n in range(len(texts)) if sum(len(t) for t in texts[:n]) > BACKED_UP)
    sent: list[str] = []

    def post_all() -> None:
        with hub.http(token, poster) as http:
            for text in texts:
                sent.append(_post(http, f"#{channel}", text))

    leaving = _slow_reader(hub.url, token, leaver)
    staying = RawEventStream(hub.url, token, stayer)
    try:
        leaver_cursor, stayer_cursor = leaving.ready(), staying.ready()
        deadline = time.monotonic() + CATCH_UP_DEADLINE
        with ThreadPoolExecutor(2) as pool:
            posting = pool.submit(post_all)
            staying_reads = pool.submit(staying.events, len(texts), deadline)
            if moment == "stalled":  # it never reads, and goes once the hub holds a backlog for it
                left_with: list[Event] = []
                wait_until(lambda: len(sent) >= backed_up_at or posting.done(), CATCH_UP_DEADLINE, "the backlog")
            else:  # it reads, then goes in the middle of the posts
                left_with = leaving.events(LEAVE_AFTER, deadline)
            assert not posting.done(), "the posts were over before the reader went"
            leaving.close(reset=True)
            posting.result(timeout=CATCH_UP_DEADLINE)
            stayed_with = staying_reads.result(timeout=CATCH_UP_DEADLINE)
    finally:
        leaving.close()
        staying.close()
    contents = dict(zip(sent, texts, strict=True))
    _expect_in_order(stayed_with, stayer_cursor, sent, contents)
    _expect_in_order(left_with, leaver_cursor, sent[: len(left_with)], contents)

    # The hub goes on: it answers, and the reader that went resumes where it left off.
    with hub.http(token, poster) as http:
        assert http.get("/health").status_code == 200
        sent.append(_post(http, leaver, "after the hang-up"))
    contents[sent[-1]] = "after the hang-up"
    resume_at = left_with[-1].id if left_with else leaver_cursor
    with RawEventStream(hub.url, token, leaver, after=resume_at) as again:
        assert again.ready() == resume_at
        rest = again.events(len(sent) - len(left_with), time.monotonic() + CATCH_UP_DEADLINE)
    _expect_in_order(left_with + rest, leaver_cursor, sent, contents)
    log = hub.log_text()
    assert not any(word in log for word in ("Traceback", "ERROR", "Exception")), log[-4000:]
