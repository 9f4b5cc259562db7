"""The REST endpoints of /v1/tasks: tasks (mail with an A2A lifecycle) for scripts and people.

The A2A face (``/a2a/``) serves the same tasks to A2A clients; these are the hub's own REST
shape of them, written the way every endpoint is (``hub/endpoint.py``): the rules are the
service's, here only what the request brings and what to answer."""

from __future__ import annotations

from callboard.hub.endpoint import Answer, Call
from callboard.hub.long_poll import long_poll
from callboard.hub.schemas import TaskUpdateRequest
from callboard.limits import HISTORY_MAX, PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, SEQ_MAX, WAIT_SECONDS_MAX
from callboard.model import Caller, Part
from callboard.requests import TaskListQuery, TaskRequest
from callboard.service.identity_gate import as_agent
from callboard.tasks import TASK_KEY_PREFIX, Task, TaskPage, moved_past


async def list_tasks(call: Call) -> TaskPage:
    await call.identify()
    page_size = call.query_int("page_size", PAGE_SIZE_DEFAULT, 1, PAGE_SIZE_MAX)
    assert page_size is not None  # a default was given
    query = TaskListQuery(
        context_id=call.query("context_id") or None,
        state=call.query("state") or None,
        page_size=page_size,
        page_token=call.query("page_token") or None,
    )
    return await call.run_as(call.hub.service.tasking.list_tasks, query)


async def get_task(call: Call) -> Task:
    """The task; with ``after_generation`` and ``wait``, once it moves past that generation (a
    long-poll: ``Tasking.get_task`` says when, the hub waits between looks without a thread)."""
    credential, caller = await call.identify()
    tasking, task_id = call.hub.service.tasking, call.path("task_id")
    history_length = call.query_int("history_length", None, 0, HISTORY_MAX)
    after = call.query_int("after_generation", None, 0, SEQ_MAX)
    wait = call.query_float("wait", 0.0, 0.0, WAIT_SECONDS_MAX)
    tasking.check_follow(after, wait)

    def look(acting: Caller) -> Task:  # each look now: the hub waits between them
        return tasking.get_task(acting, task_id, history_length=history_length, after_generation=after)

    if wait <= 0 or after is None:
        return await call.run_as(look)
    subscribed = call.hub.service.subscriptions.subscribe_async(as_agent(caller).workspace, TASK_KEY_PREFIX + task_id)
    return await long_poll(call, credential, subscribed, wait, look, lambda task: moved_past(task, after))


async def open_task(call: Call) -> Answer:
    await call.identify()
    body = await call.body(TaskRequest)
    sent = await call.run_as(call.hub.service.tasking.open_task, body)
    return Answer(sent, 200 if sent.send.duplicate else 201)


async def update_task(call: Call) -> Task:
    await call.identify()
    body = await call.body(TaskUpdateRequest)
    parts = ([Part(text=body.message)] if body.message is not None else []) + body.parts
    artifacts = [artifact.model_dump(exclude_none=True) for artifact in body.artifacts]
    return await call.run_as(
        call.hub.service.tasking.update_task, call.path("task_id"), state=body.state, parts=parts, artifacts=artifacts
    )


async def cancel_task(call: Call) -> Task:
    await call.identify()
    await call.no_body()
    return await call.run_as(call.hub.service.tasking.cancel_task, call.path("task_id"))
