"""The outbound A2A client against a real outside agent (the a2a-sdk's own server on loopback):
cards, streaming and polling, input-required round trips, and every way a remote goes wrong."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from callboard.a2a.remote.card import fetch_card
from callboard.a2a.remote.client import RemoteConnection
from callboard.a2a.remote.parts import part_from_a2a, part_to_a2a
from callboard.a2a.remote.timeouts import RemoteTimeouts
from callboard.a2a.remote.tracking import RemoteUpdate, TaskTracker
from callboard.errors import BadAddress, BadRemoteAnswer, RemoteTimedOut, RemoteUnreachable
from callboard.model import Part, new_id
from callboard.tasks import TaskState
from tests.support.outside_agent import OutsideAgent
from tests.support.waiting import scaled

pytestmark = pytest.mark.anyio

# A hanging remote's tests wait out FAST's deadline; a healthy remote gets ROOMY's, so a loaded
# machine (CI's two cores) cannot make it look slow.
FAST = RemoteTimeouts(connect=1.0, call=1.0, deadline=3.0, poll_first=0.05, poll_most=0.2)
ROOMY = RemoteTimeouts(connect=10.0, call=10.0, deadline=30.0, poll_first=0.05, poll_most=0.2)


@pytest.fixture
def own_outside(tmp_path: Path) -> Iterator[OutsideAgent]:
    """An outside agent of this test's own, to kill or start late."""
    agent = OutsideAgent(tmp_path)
    yield agent
    agent.stop()


async def _send(url: str, text: str, timeouts: RemoteTimeouts = ROOMY, **kw) -> tuple[list[RemoteUpdate], TaskTracker]:
    card = await fetch_card(url, timeouts=timeouts)
    tracker = kw.pop("tracker", None) or TaskTracker("outside")
    async with RemoteConnection("outside", card, timeouts=timeouts) as remote:
        updates = [u async for u in remote.send(kw.pop("message_id", new_id()), [Part(text=text)], tracker=tracker)]
    assert updates[0].kind == "taken" and [u.kind for u in updates].count("taken") == 1
    return updates[1:], tracker


def _texts(updates: list[RemoteUpdate]) -> list[str]:
    out = []
    for u in updates:
        parts = u.artifact.parts if u.artifact else u.parts
        out += [f"{u.kind}:{u.state.value}:{p.text}" for p in parts] or [f"{u.kind}:{u.state.value}"]
    return out


async def test_card_is_fetched_and_checked(outside: OutsideAgent, outside_polled: OutsideAgent) -> None:
    card = await fetch_card(outside.url)
    assert (card.name, card.streaming, card.url) == ("outside-echo", True, outside.url)
    assert card.card["supportedInterfaces"][0]["protocolBinding"] == "JSONRPC"
    assert (await fetch_card(outside_polled.url + "/.well-known/agent-card.json")).streaming is False


@pytest.mark.parametrize("streamed", [True, False])
async def test_completed_task_with_artifact(
    outside: OutsideAgent, outside_polled: OutsideAgent, streamed: bool
) -> None:
    agent = outside if streamed else outside_polled
    message_id = new_id()
    updates, tracker = await _send(agent.url, "complete the review", message_id=message_id)
    texts = [t.split(":", 2)[::2] for t in _texts(updates)]  # kind and text: a poll may miss "working"
    expected = [["status", "on it"], ["artifact", "result: complete the review"], ["status", "done"]]
    assert texts == expected if streamed else texts[-2:] == expected[-2:]
    assert tracker.state is TaskState.COMPLETED and tracker.task_id and tracker.context_id
    assert {u.remote_task_id for u in updates} == {tracker.task_id}
    # Our message id is the A2A message id the remote saw.
    assert [s["message_id"] for s in agent.seen() if s["text"] == "complete the review"][-1] == message_id


@pytest.mark.parametrize("streamed", [True, False])
async def test_input_required_then_follow_up_continues_the_same_task(
    outside: OutsideAgent, outside_polled: OutsideAgent, streamed: bool
) -> None:
    agent = outside if streamed else outside_polled
    updates, tracker = await _send(agent.url, "ask me")
    assert _texts(updates)[-1] == "status:input-required:which branch?"
    first_task = tracker.task_id
    more, tracker = await _send(agent.url, "main", tracker=tracker)
    assert tracker.task_id == first_task
    assert [t.split(":", 2)[::2] for t in _texts(more)] == [["artifact", "answer: main"], ["status", "done"]]
    assert {u.remote_task_id for u in more} == {first_task}


async def test_appended_chunks_and_plain_replies(outside: OutsideAgent) -> None:
    updates, _ = await _send(outside.url, "chunks please")
    chunks = [u for u in updates if u.kind == "artifact"]
    assert [(c.artifact.artifact_id, c.append, c.artifact.parts[0].text) for c in chunks] == [
        ("a1", False, "part one"),
        ("a1", True, "part two"),
    ]
    updates, tracker = await _send(outside.url, "reply now")
    assert _texts(updates) == ["status:completed:hi: reply now"] and tracker.settled


async def test_polling_a_snapshot_repeats_nothing_already_passed_on(outside: OutsideAgent) -> None:
    updates, tracker = await _send(outside.url, "chunks again")
    card = await fetch_card(outside.url)
    tracker.state = TaskState.WORKING  # as if a stream had broken before its last event
    async with RemoteConnection("outside", card, timeouts=ROOMY) as remote:
        again = [u async for u in remote.follow(tracker)]
    assert _texts(again) == ["status:completed"]


@pytest.mark.e2e  # waits out a remote's deadline
async def test_a_hanging_remote_times_out_within_the_deadline(
    outside: OutsideAgent, outside_polled: OutsideAgent
) -> None:
    for agent in (outside, outside_polled):
        started = time.monotonic()
        got: list[RemoteUpdate] = []
        card = await fetch_card(agent.url)
        async with RemoteConnection("outside", card, timeouts=FAST) as remote:
            with pytest.raises(RemoteTimedOut, match="past its deadline|did not finish within") as caught:
                async for update in remote.send(new_id(), [Part(text="hang on")]):
                    if update.kind != "taken":
                        got.append(update)
        assert _texts(got) == ["status:working:on it"]
        assert "working" in caught.value.message or "3 s" in caught.value.message
        assert time.monotonic() - started < FAST.deadline + scaled(10)  # the deadline, not forever


async def test_a_remote_that_never_answers_the_send_times_out(outside: OutsideAgent) -> None:
    started = time.monotonic()
    with pytest.raises(RemoteTimedOut, match="did not answer in time|did not finish"):
        await _send(outside.url, "stall forever", timeouts=FAST)
    assert time.monotonic() - started < FAST.deadline + scaled(10)  # the deadline, not forever


@pytest.mark.e2e  # waits out a remote's deadline
async def test_a_remote_dying_mid_stream_fails_with_the_reason(own_outside: OutsideAgent) -> None:
    own_outside.start()
    card = await fetch_card(own_outside.url)
    got: list[RemoteUpdate] = []
    async with RemoteConnection("outside", card, timeouts=FAST) as remote:
        with pytest.raises(RemoteTimedOut, match="could not be reached") as caught:
            async for update in remote.send(new_id(), [Part(text="die now")]):
                if update.kind != "taken":
                    got.append(update)
    assert _texts(got) == ["status:working:on it"]
    assert "left task" in caught.value.message and not own_outside.alive()


async def test_a_remote_down_at_send_is_unreachable_then_the_same_id_gets_through(own_outside: OutsideAgent) -> None:
    own_outside.start()
    card = await fetch_card(own_outside.url)
    own_outside.stop()
    message_id = new_id()
    async with RemoteConnection("outside", card, timeouts=FAST) as remote:
        with pytest.raises(RemoteUnreachable, match="could not be reached"):
            [u async for u in remote.send(message_id, [Part(text="complete later")])]
    own_outside.start()
    async with RemoteConnection("outside", card, timeouts=FAST) as remote:
        updates = [u async for u in remote.send(message_id, [Part(text="complete later")])]
    assert updates[-1].state is TaskState.COMPLETED
    assert [s["message_id"] for s in own_outside.seen()] == [message_id]


async def test_garbage_is_a_bad_answer(tmp_path: Path) -> None:
    junk = OutsideAgent(tmp_path, mode="garbage").start()
    junk_card = OutsideAgent(tmp_path, mode="garbage-card").start()
    try:
        card = await fetch_card(junk.url)
        async with RemoteConnection("junk", card, timeouts=FAST) as remote:
            with pytest.raises(BadRemoteAnswer, match="remote agent junk"):
                [u async for u in remote.send(new_id(), [Part(text="complete")])]
        with pytest.raises(BadRemoteAnswer, match="is not an A2A agent card: it is not JSON"):
            await fetch_card(junk_card.url)
    finally:
        junk.stop()
        junk_card.stop()


async def test_unreachable_and_malformed_urls(tmp_path: Path) -> None:
    port = OutsideAgent(tmp_path).port  # nothing listens there
    with pytest.raises(RemoteUnreachable, match="card at .* did not arrive: nothing answered there"):
        await fetch_card(f"http://127.0.0.1:{port}", timeouts=FAST)
    with pytest.raises(BadAddress, match="http:// or https://"):
        await fetch_card("ftp://example.invalid/agent")


@pytest.mark.parametrize(
    "part",
    [
        Part(text="hi", media_type="text/plain"),
        Part(data={"n": 42, "x": [1.5, 2], "deep": {"ok": True}}),
        Part(url="https://example.invalid/report.pdf", filename="report.pdf"),
        Part(raw="aGVsbG8=", metadata={"k": 1}),
    ],
)
def test_parts_go_out_and_come_back_unchanged(part: Part) -> None:
    assert part_from_a2a(part_to_a2a(part), "remote") == part


def test_a_part_with_no_content_is_a_bad_answer() -> None:
    from a2a.types import Part as A2APart

    with pytest.raises(BadRemoteAnswer, match="not A2A 1.0: a message part holds none of text"):
        part_from_a2a(A2APart(), "remote")
