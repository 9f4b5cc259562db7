"""Faults, with real ``callboard up`` processes and the official a2a-sdk client:

- a hub SIGKILLed after a task was sent and worked on (input-required with a message, an
  artifact) keeps it all: restarted on the same store (SQLite, or PostgreSQL), GetTask shows the
  same task, generation and history, ListTasks and SubscribeToTask work, and the worker's and the
  requester's mail is still there;
- a subscriber on one of two replicas of a PostgreSQL store, following a task worked through the
  other, loses its replica mid-stream; it subscribes again through the other one, naming the
  generation it saw last (the generation extension's service parameter), and gets exactly the
  events it missed, none twice, through to completion.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from a2a.client import ClientCallContext
from a2a.types import (
    AgentCard,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from google.protobuf.json_format import MessageToDict, ParseDict

from callboard.a2a.server.cards import GENERATION_AFTER
from tests.a2a.conftest import A2A_ERRORS, a2a_client, unique
from tests.hub.conftest import FAILURE_IN_LOG, Hub
from tests.support.postgres import fresh_database
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

STREAM_DEADLINE = 30.0


# --- helpers -------------------------------------------------------------------------------------


@contextmanager
def store_url(kind: str) -> Iterator[str | None]:
    """None for the embedded SQLite store, else a fresh PostgreSQL database's URL."""
    if kind == "sqlite":
        yield None
        return
    with fresh_database() as url:
        yield url


def hub_on(root: Path, url: str | None, *, first: bool = True) -> Hub:
    return Hub(root, args=["--db", url], prints_admin=first) if url else Hub(root)


def no_tracebacks(*hubs: Hub) -> None:
    for hub in hubs:
        log = hub.log_text()
        assert not any(marker in log for marker in FAILURE_IN_LOG), hub.describe()


def create_agent(hub: Hub, name: str) -> None:
    """The agent, created (looking at its empty mailbox would create nothing)."""
    with hub.admin(name) as http:
        answer = http.post("/v1/agents", json={"name": name})
    assert answer.status_code == 201, answer.text
    assert mailbox(hub, name) == []


def work(hub: Hub, worker: str, task_id: str, **update: Any) -> dict[str, Any]:
    """The worker's move through the hub's REST face (as ``callboard task update`` makes it)."""
    with hub.admin(worker) as http:
        answer = http.post(f"/v1/tasks/{task_id}/update", json=update)
    assert answer.status_code == 200, answer.text
    return answer.json()


def mailbox(hub: Hub, agent: str) -> list[dict[str, Any]]:
    """Every item of ``agent``'s mailbox, read or not (peeked: reading changes nothing)."""
    with hub.admin(agent) as http:
        answer = http.post("/v1/read", params={"peek": "true", "after": 0, "limit": 1000})
    assert answer.status_code == 200, answer.text
    return answer.json()["items"]


def card_of(hub: Hub, agent: str) -> AgentCard:
    answer = httpx.get(f"{hub.url}/a2a/default/{agent}/.well-known/agent-card.json", timeout=10)
    assert answer.status_code == 200, answer.text
    return ParseDict(answer.json(), AgentCard(), ignore_unknown_fields=True)


def ask(text: str, *, task_id: str = "", stream: bool = False) -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id=unique("m"), parts=[Part(text=text)], task_id=task_id)
    if stream:
        return SendMessageRequest(message=message)
    return SendMessageRequest(message=message, configuration=SendMessageConfiguration(return_immediately=True))


def generation(event: StreamResponse) -> int:
    payload = getattr(event, event.WhichOneof("payload"))
    return int(MessageToDict(payload.metadata)["generation"])


def resuming_after(seen: int | str) -> ClientCallContext:
    """The call context of a subscriber that saw the task up to generation ``seen``."""
    return ClientCallContext(service_parameters={GENERATION_AFTER: str(seen)})


def as_dict(message: Any) -> dict[str, Any]:
    return MessageToDict(message)


async def in_thread(function: Any, *args: Any, **kwargs: Any) -> Any:
    """A blocking call (the hub's REST face, a kill) off the event loop, so streams keep flowing."""
    return await anyio.to_thread.run_sync(lambda: function(*args, **kwargs))


# --- 1: a SIGKILLed hub keeps its tasks --------------------------------------------------------


@pytest.mark.parametrize(("store", "binding"), [("sqlite", "JSONRPC"), ("postgresql", "HTTP+JSON")])
async def test_a_task_and_its_updates_survive_a_sigkill_of_the_hub(tmp_path: Path, store: str, binding: str) -> None:
    with store_url(store) as url:
        hub = hub_on(tmp_path / "hub", url).start()
        try:
            await _survives_sigkill(hub, binding)
        finally:
            hub.close()
        no_tracebacks(hub)


async def _survives_sigkill(hub: Hub, binding: str) -> None:
    bob, asker = unique("bob"), unique("asker")
    create_agent(hub, bob)
    token = hub.issue(agent=asker)["token"]
    async with a2a_client(card_of(hub, bob), token, binding) as client:
        [sent] = [e async for e in client.send_message(ask("review PR 7"))]
        task_id = sent.task.id
        await in_thread(work, hub, bob, task_id, state="working")
        artifact = {"artifact_id": "review", "name": "review.md", "parts": [{"text": "two nits"}]}
        await in_thread(work, hub, bob, task_id, artifacts=[artifact])
        await in_thread(work, hub, bob, task_id, state="input-required", message="which branch?")
        before = await client.get_task(GetTaskRequest(id=task_id, history_length=10))
    bobs_mail, askers_mail = mailbox(hub, bob), mailbox(hub, asker)
    assert before.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert as_dict(before.metadata)["generation"] == 4  # submitted, working, the artifact, input-required
    assert [i["task_id"] for i in bobs_mail] == [task_id]
    assert len(askers_mail) == 3 and {i["task_id"] for i in askers_mail} == {task_id}

    hub.kill()  # no shutdown at all, right after the last acknowledged update
    hub.start()

    card = card_of(hub, bob)
    async with a2a_client(card, token, binding, streaming=True) as client:
        after = await client.get_task(GetTaskRequest(id=task_id, history_length=10))
        assert as_dict(after) == as_dict(before)  # state, status message, artifact, generation, history
        assert [p.text for p in after.status.message.parts] == ["which branch?"]
        assert [a.artifact_id for a in after.artifacts] == ["review"]
        listed = await client.list_tasks(ListTasksRequest())
        assert [t.id for t in listed.tasks] == [task_id] and listed.total_size == 1
        assert mailbox(hub, bob) == bobs_mail and mailbox(hub, asker) == askers_mail

        # What a subscriber that saw only the task's first event missed, replayed from the store.
        with anyio.fail_after(STREAM_DEADLINE):
            replayed = [
                e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id), context=resuming_after(1))
            ]
        assert [e.WhichOneof("payload") for e in replayed] == [
            "task",
            "status_update",
            "artifact_update",
            "status_update",
        ]
        assert [generation(e) for e in replayed[1:]] == [2, 3, 4]

        # The task goes on: the requester answers, the worker completes it, a subscriber sees both
        # (it has the task, so it was subscribed before either moved).
        async def finish() -> None:
            async with a2a_client(card, token, binding) as answering:
                _ = [e async for e in answering.send_message(ask("main", task_id=task_id))]
            await in_thread(work, hub, bob, task_id, state="completed", message="merged")

        with anyio.fail_after(STREAM_DEADLINE):
            live: list[StreamResponse] = []
            async with anyio.create_task_group() as group:
                stream = client.subscribe(SubscribeToTaskRequest(id=task_id))
                live.append(await anext(stream))  # the task: subscribed before anything moves
                group.start_soon(finish)
                live += [e async for e in stream]
    # Submitted again by the answer; taken up (working) and completed in the worker's one update.
    assert [generation(e) for e in live] == [4, 5, 6, 7]
    states = [e.status_update.status.state for e in live[1:]]
    assert states == [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]
    assert live[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert [i["task_id"] for i in mailbox(hub, bob)] == [task_id, task_id]  # the requester's answer, mailed


# --- 2: a subscriber's replica dies mid-stream ------------------------------------------------


async def _collect(stream: AsyncIterator[StreamResponse], into: list[StreamResponse], errors: list[str]) -> None:
    """Every event of ``stream`` until it ends or breaks (its replica killed under it)."""
    try:
        async for event in stream:
            into.append(event)
    except (*A2A_ERRORS, httpx.HTTPError) as error:
        errors.append(f"{type(error).__name__}: {error}")


@pytest.mark.parametrize(("first", "binding"), [("subscribe", "JSONRPC"), ("send-stream", "HTTP+JSON")])
async def test_a_subscriber_whose_replica_dies_resumes_on_the_other_without_loss(
    tmp_path: Path, first: str, binding: str
) -> None:
    with fresh_database() as url:
        one = hub_on(tmp_path / "r1", url, first=True).start()
        two = hub_on(tmp_path / "r2", url, first=False)
        try:
            two.start()
            two.admin_token = one.admin_token
            await _resumes(one, two, first, binding)
        finally:
            one.close()
            two.close()
        no_tracebacks(one, two)


async def _resumes(one: Hub, two: Hub, first: str, binding: str) -> None:
    bob, asker = unique("bob"), unique("asker")
    create_agent(two, bob)
    token = one.issue(agent=asker)["token"]
    before_kill: list[StreamResponse] = []
    broken: list[str] = []
    async with a2a_client(card_of(one, bob), token, binding, streaming=True) as on_one:
        if first == "subscribe":
            async with a2a_client(card_of(one, bob), token, binding) as sending:
                [sent] = [e async for e in sending.send_message(ask("build it"))]
            stream = on_one.subscribe(SubscribeToTaskRequest(id=sent.task.id))
        else:
            stream = on_one.send_message(ask("build it", stream=True))
        with anyio.fail_after(STREAM_DEADLINE):
            async with anyio.create_task_group() as group:
                first_event = await anext(stream)
                before_kill.append(first_event)
                task_id = first_event.task.id
                group.start_soon(_collect, stream, before_kill, broken)
                await in_thread(work, two, bob, task_id, state="working", message="on it")
                await in_thread(wait_until, lambda: len(before_kill) >= 2, what="replica 1's stream to see 'working'")
                await in_thread(one.kill)  # mid-stream: the task is working, the subscriber is still following
                # Replica 1 is gone; the work goes on through replica 2.
                artifact = {"artifact_id": "build", "name": "build.log", "parts": [{"text": "ok"}]}
                await in_thread(work, two, bob, task_id, artifacts=[artifact])
                await in_thread(work, two, bob, task_id, message="tests passing")
    assert broken, "the stream on the killed replica did not break"
    seen = max(generation(e) for e in before_kill[1:])
    assert [generation(e) for e in before_kill[1:]] == [2] == [seen]

    after: list[StreamResponse] = []
    async with a2a_client(card_of(two, bob), token, binding, streaming=True) as on_two:
        with anyio.fail_after(STREAM_DEADLINE):
            async with anyio.create_task_group() as group:
                stream = on_two.subscribe(SubscribeToTaskRequest(id=task_id), context=resuming_after(seen))
                after.append(await anext(stream))
                group.start_soon(_collect, stream, after, broken)
                await in_thread(wait_until, lambda: len(after) >= 3, what="the missed events")
                await in_thread(work, two, bob, task_id, state="completed", message="done")
    assert len(broken) == 1, broken  # only the killed replica's stream broke
    assert after[0].WhichOneof("payload") == "task"
    updates = before_kill[1:] + after[1:]
    generations = [generation(e) for e in updates]
    assert generations == list(range(2, 6)), generations  # exactly once each, in order, none lost
    assert [e.WhichOneof("payload") for e in after[1:]] == ["artifact_update", "status_update", "status_update"]
    assert after[1].artifact_update.artifact.artifact_id == "build"
    assert after[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    async with a2a_client(card_of(two, bob), token, binding) as reading:
        task = await reading.get_task(GetTaskRequest(id=task_id))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED and as_dict(task.metadata)["generation"] == 5
    assert [a.artifact_id for a in task.artifacts] == ["build"]


# --- resuming: where one may resume from --------------------------------------------------------


async def test_resuming_after_a_generation_the_task_has_not_reached_or_no_number_is_refused(tmp_path: Path) -> None:
    hub = Hub(tmp_path / "hub").start()
    try:
        bob, asker = unique("bob"), unique("asker")
        create_agent(hub, bob)
        token = hub.issue(agent=asker)["token"]
        card = card_of(hub, bob)
        async with a2a_client(card, token, "JSONRPC") as sending:
            [sent] = [e async for e in sending.send_message(ask("x"))]
        task_id = sent.task.id
        async with a2a_client(card, token, "JSONRPC", streaming=True) as client:
            await in_thread(work, hub, bob, task_id, state="completed", message="done")
            for bad, said in (("7", "at generation 3"), ("-1", "0 or more"), ("soon", "whole number")):
                with pytest.raises(A2A_ERRORS) as refused:
                    _ = [
                        e
                        async for e in client.subscribe(SubscribeToTaskRequest(id=task_id), context=resuming_after(bad))
                    ]
                assert said in str(refused.value), refused.value
            # A final task: what was missed is still given; having seen it all, there is nothing to follow.
            missed = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id), context=resuming_after(1))]
            assert [generation(e) for e in missed] == [3, 2, 3]  # the task (taken up, completed), then each
            assert missed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
            with pytest.raises(A2A_ERRORS) as finished:
                _ = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id), context=resuming_after(3))]
            assert "completed" in str(finished.value)
    finally:
        hub.close()
    no_tracebacks(hub)
