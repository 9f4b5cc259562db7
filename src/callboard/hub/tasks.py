"""The REST endpoints of /v1/tasks: tasks (mail with an A2A lifecycle) for scripts and people.

The A2A face (``/a2a/``) serves the same tasks to A2A clients; these are the hub's own REST
shape of them, written the way every endpoint is (``hub/endpoint.py``): the rules are the
service's, here only what the request brings and what to answer."""

from __future__ import annotations

from callboard.hub.endpoint import Answer, Call
from callboard.hub.schemas import TaskUpdateRequest
from callboard.limits import HISTORY_MAX, PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX
from callboard.model import Part
from callboard.requests import TaskListQuery, TaskRequest
from callboard.tasks import Task, TaskPage


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
    await call.identify()
    history_length = call.query_int("history_length", None, 0, HISTORY_MAX)
    return await call.run_as(call.hub.service.tasking.get_task, call.path("task_id"), history_length=history_length)


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
