"""Task rows of the stores' schemas (SQLite's and PostgreSQL's share their columns) turned into
the task models and back: what both stores' ``tasks`` modules write and read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from callboard.model import parts_json
from callboard.store.records import PushDelivery, TaskQuery
from callboard.store.rows import from_ts, to_ts
from callboard.tasks import PushConfig, Task, TaskArtifact, TaskEvent

TASK_COLUMNS = (
    "t.id, t.workspace, t.context_id, t.requester, t.worker, t.state, t.status_parts, t.status_message_id, "
    "t.status_at, t.generation, t.metadata, t.created_at, t.updated_at"
)
ARTIFACT_COLUMNS = "a.task_id, a.artifact_id, a.name, a.description, a.parts, a.metadata"
EVENT_COLUMNS = "task_id, generation, kind, state, message_id, parts, artifact, append, last_chunk, at"
PUSH_CONFIG_COLUMNS = "id, task_id, url, token, auth_scheme, auth_credentials, created_at"
PUSH_DELIVERY_COLUMNS = (
    "p.id, p.workspace, p.task_id, p.config_id, p.generation, p.payload, p.attempts, "
    "c.url, c.token, c.auth_scheme, c.auth_credentials"
)


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def task_values(task: Task) -> tuple:
    """The row of TASK_COLUMNS' columns, in order, for an insert."""
    return (
        task.id,
        task.workspace,
        task.context_id,
        task.requester,
        task.worker,
        task.state.value,
        parts_json(task.status_parts).decode(),
        task.status_message_id,
        to_ts(task.status_at),
        task.generation,
        _json_or_none(task.metadata),
        to_ts(task.created_at),
        to_ts(task.updated_at),
    )


def task_changes(task: Task) -> tuple:
    """(state, status_parts, status_message_id, status_at, generation, metadata, updated_at)."""
    values = task_values(task)
    return (*values[5:11], values[12])


def artifact_values(task_id: str, artifact: TaskArtifact) -> tuple:
    """(task_id, artifact_id, name, description, parts, metadata)."""
    return (
        task_id,
        artifact.artifact_id,
        artifact.name,
        artifact.description,
        parts_json(artifact.parts).decode(),
        _json_or_none(artifact.metadata),
    )


def event_values(event: TaskEvent) -> tuple:
    """The row of EVENT_COLUMNS' columns, in order."""
    return (
        event.task_id,
        event.generation,
        event.kind,
        event.state.value,
        event.message_id,
        parts_json(event.parts).decode(),
        event.artifact.model_dump_json(exclude_none=True) if event.artifact is not None else None,
        event.append,
        event.last_chunk,
        to_ts(event.at),
    )


def task_from_row(row: Sequence, artifacts: Sequence[Sequence] = ()) -> Task:
    """A task from a row of TASK_COLUMNS and its artifacts' rows of ARTIFACT_COLUMNS, in order."""
    return Task.model_validate(
        {
            "id": row[0],
            "workspace": row[1],
            "context_id": row[2],
            "requester": row[3],
            "worker": row[4],
            "state": row[5],
            "status_parts": json.loads(row[6]),
            "status_message_id": row[7],
            "status_at": from_ts(row[8]),
            "generation": row[9],
            "metadata": json.loads(row[10]) if row[10] is not None else None,
            "created_at": from_ts(row[11]),
            "updated_at": from_ts(row[12]),
            "artifacts": [artifact_from_row(a) for a in artifacts],
        }
    )


def artifact_from_row(row: Sequence) -> TaskArtifact:
    return TaskArtifact(
        artifact_id=row[1],
        name=row[2],
        description=row[3],
        parts=json.loads(row[4]),
        metadata=json.loads(row[5]) if row[5] is not None else None,
    )


def event_from_row(row: Sequence) -> TaskEvent:
    return TaskEvent(
        task_id=row[0],
        generation=row[1],
        kind=row[2],
        state=row[3],
        message_id=row[4],
        parts=json.loads(row[5]),
        artifact=TaskArtifact.model_validate_json(row[6]) if row[6] is not None else None,
        append=bool(row[7]),
        last_chunk=bool(row[8]),
        at=from_ts(row[9]),
    )


def push_config_from_row(row: Sequence) -> PushConfig:
    return PushConfig(
        id=row[0],
        task_id=row[1],
        url=row[2],
        token=row[3],
        auth_scheme=row[4],
        auth_credentials=row[5],
        created_at=from_ts(row[6]),
    )


def push_delivery_from_row(row: Sequence) -> PushDelivery:
    return PushDelivery(*row)


def push_delivery_id(task_id: str, generation: int, config_id: str) -> str:
    """An outbox row's id, the same for the same post: a retried write cannot queue it twice."""
    return f"{task_id}/{generation}/{config_id}"


def task_filter(query: TaskQuery) -> tuple[str, list[object]]:
    """The WHERE clause of a task list (without its page position) and its arguments: the one
    place the list's filters are written."""
    mark = "?"
    where = f"t.workspace = {mark} AND (t.requester = {mark} OR t.worker = {mark})"
    args: list[object] = [query.workspace, query.agent, query.agent]
    for column, value in (("context_id", query.context_id), ("state", query.state)):
        if value is not None:
            where += f" AND t.{column} = {mark}"
            args.append(value)
    if query.with_agent is not None:
        where += f" AND (t.requester = {mark} OR t.worker = {mark})"
        args += [query.with_agent, query.with_agent]
    if query.updated_after is not None:
        where += f" AND t.updated_at > {mark}"
        args.append(query.updated_after)
    return where, args
