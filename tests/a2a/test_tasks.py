"""A task is mail, through the official a2a-sdk client over both bindings: sent, worked on by the
agent with its own tools (the Service, as ``task update`` and the MCP tools call it), read back,
followed up, listed, canceled, streamed and subscribed to."""

from __future__ import annotations

import threading
from collections.abc import Callable

import anyio
import pytest
from a2a.client import ClientCallContext
from a2a.types import (
    CancelTaskRequest,
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
from google.protobuf.json_format import MessageToDict

from callboard.a2a.server.cards import GENERATION_AFTER
from callboard.model import Caller, MailItem
from callboard.model import Part as OurPart
from callboard.requests import TaskRequest
from callboard.tasks import TaskArtifact
from callboard.tasks import TaskState as OurState
from tests.a2a.conftest import A2A_ERRORS, BINDINGS, a2a_client, fetch_card, unique
from tests.support.a2a_hub import InProcessHub
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio


def ask(text: str, **fields: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=unique("m"), parts=[Part(text=text)], **fields)
    )


def mail_of(hub: InProcessHub, agent: str, task_id: str, timeout: float = 10.0) -> list[MailItem]:
    """The agent's unread mail of the task, once there is some (drained: marked read)."""
    caller = hub.caller(agent)
    return wait_until(
        lambda: [i for i in hub.service.mailbox.read(caller).items if i.message.task_id == task_id],
        timeout,
        f"{agent}'s mail of task {task_id}",
    )


def state_of(event: StreamResponse) -> int | None:
    if event.HasField("task"):
        return event.task.status.state
    if event.HasField("status_update"):
        return event.status_update.status.state
    return None


@pytest.fixture
def pair(hub: InProcessHub) -> tuple[str, str, str]:
    """A worker (bob), a requester with an agent token, and that token."""
    bob, asker = unique("bob"), unique("asker")
    hub.describe(bob, "reviews pull requests", ["review"])
    return bob, asker, hub.token(asker)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_task_round_trip_with_the_worker_answering_by_its_tools(
    hub: InProcessHub, pair: tuple[str, str, str], binding: str
) -> None:
    bob, asker, token = pair
    worker = hub.caller(bob)
    card = await fetch_card(hub, bob)
    async with a2a_client(card, token, binding) as client:
        # No live session of bob: the send answers at once, the task submitted.
        [sent] = [e async for e in client.send_message(ask("please review PR 7"))]
        task = sent.task
        assert task.status.state == TaskState.TASK_STATE_SUBMITTED and task.context_id
        [item] = mail_of(hub, bob, task.id)
        assert item.message.sender == asker and item.message.text == "please review PR 7"
        assert item.task_id == task.id and item.task_state == OurState.SUBMITTED
        assert item.message.thread_id == task.context_id

        hub.service.tasking.update_task(
            worker, task.id, state=OurState.INPUT_REQUIRED, parts=[OurPart(text="which branch?")]
        )
        got = await client.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert got.status.message.parts[0].text == "which branch?"
        assert any(i.message.text == "which branch?" for i in mail_of(hub, asker, task.id))  # progress is mail

        follow = ask("main", task_id=task.id, context_id=task.context_id)
        [again] = [e async for e in client.send_message(follow)]
        assert again.task.id == task.id and again.task.context_id == task.context_id
        assert [i.message.text for i in mail_of(hub, bob, task.id)] == ["main"]

        artifact = TaskArtifact(artifact_id="review", name="review.txt", parts=[OurPart(text="LGTM")])
        hub.service.tasking.update_task(
            worker, task.id, state=OurState.COMPLETED, parts=[OurPart(text="done")], artifacts=[artifact]
        )
        done = await client.get_task(GetTaskRequest(id=task.id, history_length=2))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert [(a.artifact_id, a.name, a.parts[0].text) for a in done.artifacts] == [("review", "review.txt", "LGTM")]
        assert len(done.history) == 2 and done.history[-1].role == Role.ROLE_AGENT
        # opened, taken up, asked, answered, taken up again (the worker answered it), artifact, completed
        assert MessageToDict(done.metadata)["generation"] == 7

        with pytest.raises(A2A_ERRORS):  # a finished task takes no follow-up
            [e async for e in client.send_message(ask("more", task_id=task.id))]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_list_pages_and_filters_the_callers_tasks(
    hub: InProcessHub, pair: tuple[str, str, str], binding: str
) -> None:
    bob, _, token = pair
    card = await fetch_card(hub, bob)
    async with a2a_client(card, token, binding) as client:
        ids = [
            (e.task.id, e.task.context_id)
            for e in [[x async for x in client.send_message(ask(f"t{n}"))][0] for n in range(3)]
        ]
        first = await client.list_tasks(ListTasksRequest(page_size=2))
        assert first.total_size == 3 and len(first.tasks) == 2 and first.next_page_token
        rest = await client.list_tasks(ListTasksRequest(page_size=2, page_token=first.next_page_token))
        assert {t.id for t in [*first.tasks, *rest.tasks]} == {i for i, _ in ids} and not rest.next_page_token
        one = await client.list_tasks(ListTasksRequest(context_id=ids[0][1]))
        assert [t.id for t in one.tasks] == [ids[0][0]]
        with pytest.raises(A2A_ERRORS):
            await client.list_tasks(ListTasksRequest(page_token="not-a-token"))


@pytest.mark.parametrize("binding", BINDINGS)
async def test_cancel_tells_the_worker_and_a_finished_task_cannot_be_canceled(
    hub: InProcessHub, pair: tuple[str, str, str], binding: str
) -> None:
    bob, _, token = pair
    card = await fetch_card(hub, bob)
    async with a2a_client(card, token, binding) as client:
        [sent] = [e async for e in client.send_message(ask("to cancel"))]
        mail_of(hub, bob, sent.task.id)
        canceled = await client.cancel_task(CancelTaskRequest(id=sent.task.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        notice = mail_of(hub, bob, sent.task.id)
        assert notice[0].task_state == OurState.CANCELED
        with pytest.raises(A2A_ERRORS, match="(?i)cancel"):
            await client.cancel_task(CancelTaskRequest(id=sent.task.id))
        with pytest.raises(A2A_ERRORS, match="(?i)no task|not found"):
            await client.get_task(GetTaskRequest(id="no-such-task"))


@pytest.mark.parametrize("binding", BINDINGS)
async def test_another_workspace_cannot_read_the_task(
    hub: InProcessHub, pair: tuple[str, str, str], binding: str
) -> None:
    bob, _, token = pair
    card = await fetch_card(hub, bob)
    async with a2a_client(card, token, binding) as client:
        [sent] = [e async for e in client.send_message(ask("secret"))]
    stranger = hub.token(unique("stranger"), workspace=unique("ws"))
    nosy = hub.token(unique("nosy"))  # same workspace, neither requester nor worker
    for other in (stranger, nosy):
        async with a2a_client(card, other, binding) as client:
            with pytest.raises(A2A_ERRORS):
                await client.get_task(GetTaskRequest(id=sent.task.id))
            with pytest.raises(A2A_ERRORS):
                await client.cancel_task(CancelTaskRequest(id=sent.task.id))
    async with a2a_client(card, None, binding) as client:
        with pytest.raises(A2A_ERRORS):
            [e async for e in client.send_message(ask("anonymous"))]


def work_on_mail(hub: InProcessHub, agent: str, steps: Callable[[Caller, str], None]) -> threading.Thread:
    """A worker thread: waits for the agent's first task mail, then does ``steps`` on its task."""

    def run() -> None:
        caller = hub.caller(agent)
        with hub.service.events.subscribe(caller.workspace, agent) as mailbox:
            for _ in range(200):
                items = [i for i in hub.service.mailbox.read(caller).items if i.message.task_id]
                if items:
                    steps(caller, items[0].message.task_id)
                    return
                mailbox.wait(0.1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def working_then_done(hub: InProcessHub) -> Callable[[Caller, str], None]:
    def steps(caller: Caller, task_id: str) -> None:
        hub.service.tasking.update_task(caller, task_id, state=OurState.WORKING, parts=[OurPart(text="on it")])
        art = TaskArtifact(artifact_id="out", name="out.txt", parts=[OurPart(text="result")])
        hub.service.tasking.update_task(caller, task_id, artifacts=[art])
        hub.service.tasking.update_task(caller, task_id, state=OurState.COMPLETED)

    return steps


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_streaming_send_sees_working_then_completed_with_the_artifact(
    hub: InProcessHub, pair: tuple[str, str, str], binding: str
) -> None:
    bob, _, token = pair
    card = await fetch_card(hub, bob)
    worker = work_on_mail(hub, bob, working_then_done(hub))
    async with a2a_client(card, token, binding, streaming=True) as client:
        with anyio.fail_after(20):
            events = [e async for e in client.send_message(ask("stream it"))]
    worker.join(10)
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds == ["task", "status_update", "artifact_update", "status_update"], events
    assert [state_of(e) for e in events] == [
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
        None,
        TaskState.TASK_STATE_COMPLETED,
    ]
    assert events[2].artifact_update.artifact.parts[0].text == "result"
    generations = [
        MessageToDict(e.status_update.metadata or e.artifact_update.metadata)["generation"] for e in events[1:]
    ]
    assert generations == [2, 3, 4]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_subscribe_follows_a_task_worked_on_later(
    hub: InProcessHub, pair: tuple[str, str, str], binding: str
) -> None:
    bob, _, token = pair
    card = await fetch_card(hub, bob)
    async with a2a_client(card, token, binding) as sender:
        request = ask("later")
        request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
        [first] = [e async for e in sender.send_message(request)]
        task_id = first.task.id
    async with a2a_client(card, token, binding, streaming=True) as client:
        hub.service.tasking.update_task(hub.caller(bob), task_id, state=OurState.WORKING)  # before the subscription
        worker = threading.Timer(0.3, working_then_done_later, args=(hub, bob, task_id))
        worker.start()
        with anyio.fail_after(20):
            events = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id))]
        worker.join()
        assert events[0].task.status.state == TaskState.TASK_STATE_WORKING  # the task as it is, then what follows
        assert state_of(events[-1]) == TaskState.TASK_STATE_COMPLETED
        assert any(e.HasField("artifact_update") for e in events)
        with pytest.raises(A2A_ERRORS):  # nothing more to follow on a finished task
            [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id))]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_subscribe_resumes_after_the_generation_a_subscriber_saw(
    hub: InProcessHub, pair: tuple[str, str, str], binding: str
) -> None:
    bob, _, token = pair
    card = await fetch_card(hub, bob)
    async with a2a_client(card, token, binding) as sender:
        request = ask("resume me")
        request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
        [first] = [e async for e in sender.send_message(request)]
        task_id = first.task.id
    hub.service.tasking.update_task(hub.caller(bob), task_id, state=OurState.WORKING)  # 2
    working_then_done_later(hub, bob, task_id)  # the artifact (3), completed (4)

    def after(seen: str) -> ClientCallContext:
        return ClientCallContext(service_parameters={GENERATION_AFTER: seen})

    async with a2a_client(card, token, binding, streaming=True) as client:
        with anyio.fail_after(20):
            missed = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id), context=after("2"))]
        metadata = [MessageToDict(getattr(e, e.WhichOneof("payload")).metadata) for e in missed[1:]]
        assert [m["generation"] for m in metadata] == [3, 4]  # exactly what came after 2, then the end
        assert missed[0].HasField("task") and state_of(missed[-1]) == TaskState.TASK_STATE_COMPLETED
        for bad in ("5", "-1", "two"):  # not reached, below 0, no number: refused, no stream
            with pytest.raises(A2A_ERRORS):
                [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id), context=after(bad))]
        with pytest.raises(A2A_ERRORS):  # seen it all on a finished task: nothing more to follow
            [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id), context=after("4"))]


async def test_a_resumed_subscription_replays_past_a_question_that_was_answered_since(
    hub: InProcessHub, pair: tuple[str, str, str]
) -> None:
    bob, asker, token = pair
    card = await fetch_card(hub, bob)
    task_id = hub.service.tasking.open_task(
        hub.caller(asker), TaskRequest(to=bob, parts=[OurPart(text="which?")])
    ).task.id  # 1
    hub.service.tasking.update_task(
        hub.caller(bob), task_id, state=OurState.INPUT_REQUIRED, parts=[OurPart(text="a or b?")]
    )
    hub.service.tasking.open_task(
        hub.caller(asker), TaskRequest(to=bob, parts=[OurPart(text="b")], task_id=task_id)
    )  # answered: submitted
    hub.service.tasking.update_task(hub.caller(bob), task_id, state=OurState.COMPLETED)  # taken up, completed
    seen = ClientCallContext(service_parameters={GENERATION_AFTER: "1"})
    async with a2a_client(card, token, "JSONRPC", streaming=True) as client:
        with anyio.fail_after(20):
            missed = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id), context=seen)]
    # The question it missed was answered since: a replay goes on past it, to where the task is.
    assert [state_of(e) for e in missed[1:]] == [
        TaskState.TASK_STATE_WORKING,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
        TaskState.TASK_STATE_COMPLETED,
    ]


def working_then_done_later(hub: InProcessHub, agent: str, task_id: str) -> None:
    art = TaskArtifact(artifact_id="out", parts=[OurPart(text="later result")])
    hub.service.tasking.update_task(hub.caller(agent), task_id, artifacts=[art])
    hub.service.tasking.update_task(hub.caller(agent), task_id, state=OurState.COMPLETED, parts=[OurPart(text="done")])


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_blocking_send_to_a_listening_worker_returns_the_finished_task(
    hub: InProcessHub, pair: tuple[str, str, str], binding: str
) -> None:
    bob, _, token = pair
    card = await fetch_card(hub, bob)
    listening = threading.Event()

    def steps(caller: Caller, task_id: str) -> None:
        hub.service.tasking.update_task(caller, task_id, state=OurState.COMPLETED, parts=[OurPart(text="quick answer")])

    def serve() -> None:  # bob's worker holds its mailbox open (as a runner's stream does) and answers
        caller = hub.caller(bob)
        with hub.service.events.subscribe(caller.workspace, bob) as mailbox:
            listening.set()
            for _ in range(200):
                items = [i for i in hub.service.mailbox.read(caller).items if i.message.task_id]
                if items:
                    steps(caller, items[0].message.task_id)
                    return
                mailbox.wait(0.1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert listening.wait(10)
    async with a2a_client(card, token, binding) as client:
        [answer] = [e async for e in client.send_message(ask("quick"))]
    thread.join(10)
    assert answer.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert answer.task.status.message.parts[0].text == "quick answer"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_blocking_send_waits_for_a_worker_whose_waiting_read_the_send_itself_ended(
    hub: InProcessHub, pair: tuple[str, str, str], binding: str
) -> None:
    """A long-poll read waiting on the worker's mailbox is woken by the task's commit and leaves
    the mailbox's waiters at once, before the send has its answer: the worker was there all the
    same, and the blocking send waits for its answer rather than answering "submitted"."""
    bob, _, token = pair
    card = await fetch_card(hub, bob)
    listening, answered = threading.Event(), threading.Event()

    def serve() -> None:  # one waiting read, as a script following its mailbox over the hub does
        caller = hub.caller(bob)
        with hub.service.events.subscribe(caller.workspace, bob) as mailbox:
            listening.set()
            mailbox.wait(10)
        items = wait_until(
            lambda: [i for i in hub.service.mailbox.read(caller).items if i.message.task_id], 10, "the task's mail"
        )
        task_id = items[0].message.task_id
        hub.service.tasking.update_task(
            caller, task_id, state=OurState.COMPLETED, parts=[OurPart(text="read, then answered")]
        )
        answered.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert listening.wait(10)
    async with a2a_client(card, token, binding) as client:
        [answer] = [e async for e in client.send_message(ask("quick"))]
    thread.join(10)
    assert answered.is_set()
    assert answer.task.status.state == TaskState.TASK_STATE_COMPLETED, answer
    assert answer.task.status.message.parts[0].text == "read, then answered"


async def test_an_agents_endpoint_answers_for_its_own_tasks_only(hub: InProcessHub, pair: tuple[str, str, str]) -> None:
    bob, _, token = pair
    carol = unique("carol")
    hub.describe(carol, "writes docs", [])
    async with a2a_client(await fetch_card(hub, bob), token, "JSONRPC") as to_bob:
        [sent] = [e async for e in to_bob.send_message(ask("for bob"))]
    async with a2a_client(await fetch_card(hub, carol), token, "JSONRPC") as to_carol:
        for call in (
            to_carol.get_task(GetTaskRequest(id=sent.task.id)),
            to_carol.cancel_task(CancelTaskRequest(id=sent.task.id)),
        ):
            with pytest.raises(A2A_ERRORS, match="(?i)no task"):
                await call
        with pytest.raises(A2A_ERRORS, match="(?i)no task"):
            [e async for e in to_carol.send_message(ask("sneak in", task_id=sent.task.id))]
        [for_carol] = [e async for e in to_carol.send_message(ask("for carol"))]
        listed = await to_carol.list_tasks(ListTasksRequest())  # the caller's tasks with carol only
        assert [t.id for t in listed.tasks] == [for_carol.task.id] and listed.total_size == 1
    async with a2a_client(await fetch_card(hub, bob), token, "HTTP+JSON") as to_bob:
        assert sent.task.id in [t.id for t in (await to_bob.list_tasks(ListTasksRequest())).tasks]
        assert for_carol.task.id not in [t.id for t in (await to_bob.list_tasks(ListTasksRequest())).tasks]
    assert hub.service.tasking.get_task(hub.caller(bob), sent.task.id).state == OurState.SUBMITTED
