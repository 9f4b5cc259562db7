"""Reading without polling: the SSE stream (resuming after a disconnect with no loss and no
duplicate) and the long-poll read (woken by a send, well before its wait ends)."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import pytest

from tests.cli_runner import describe
from tests.hub.conftest import CLI, EventStream, Hub, Tenant, expect_http_error, unique
from tests.waiting import wait_until

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


def test_a_long_poll_wakes_on_a_send_and_returns_it_well_before_its_wait_ends(tenant: Tenant) -> None:
    hub, alice, bob = tenant.hub, unique("alice"), unique("bob")
    reader = tenant.client(bob)
    try:
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(reader.read, wait=LONG_WAIT)
            # The read created bob on the hub: the request is there, with nothing to return.
            wait_until(lambda: _exists(hub, tenant.token, bob), what="the long-poll to reach the hub")
            assert not waiting.done(), "an empty mailbox answered before its wait ended"
            message_id = _send(hub, tenant.token, alice, bob, "wake up")
            try:
                result = waiting.result(timeout=WAKE_DEADLINE)
            except FutureTimeout:
                pytest.fail(f"the long-poll did not wake within {WAKE_DEADLINE:g} s of a send")
    finally:
        reader.close()
    assert [(i.message.id, i.message.text) for i in result.items] == [(message_id, "wake up")]
    assert result.unread == 0


def test_a_waiting_cli_reader_wakes_on_a_send_through_the_hub(tenant: Tenant, cli: CLI) -> None:
    hub, alice, bob = tenant.hub, unique("alice"), unique("bob")
    env = {"SWITCHBOARD_HUB": hub.url, "SWITCHBOARD_TOKEN": tenant.token}
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
