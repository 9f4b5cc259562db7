"""The tasks part: tasks (their rules are ``tasks.py``'s and the service's; a task changes only
with its message, by ``submit_message``'s TaskWrite: see ``write_task``), their events, the
configs of their push notifications and the outbox of those posts. Its interface, and its SQL for
both dialects; a dialect claims the outbox its own way (``claim_push_deliveries``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from callboard.model import Message
from callboard.store.parts.remotes import write_remote_send
from callboard.store.records import PushDelivery, TaskConflict, TaskQuery, TaskWrite
from callboard.store.rows import MESSAGE_COLUMNS, message_from_row, to_ts
from callboard.store.sql import QUIET, Connection, Database, marks
from callboard.store.task_rows import (
    ARTIFACT_COLUMNS,
    EVENT_COLUMNS,
    PUSH_CONFIG_COLUMNS,
    TASK_COLUMNS,
    artifact_values,
    event_from_row,
    event_values,
    push_config_from_row,
    push_delivery_id,
    task_changes,
    task_filter,
    task_from_row,
    task_values,
)
from callboard.tasks import PushConfig, Task, TaskEvent


class TasksPart(Protocol):
    def get_task(self, workspace: str, task_id: str) -> Task | None:
        """The task with its artifacts (no history), or None."""
        ...

    def list_tasks(self, query: TaskQuery) -> tuple[list[Task], int]:
        """A page of the agent's tasks (see TaskQuery), and how many match without paging."""
        ...

    def task_events(self, workspace: str, task_id: str, after_generation: int) -> list[TaskEvent]:
        """The task's events past ``after_generation``, oldest first."""
        ...

    def task_messages(self, workspace: str, task_id: str, limit: int) -> list[Message]:
        """The task's newest ``limit`` messages, oldest first."""
        ...

    def set_push_config(self, workspace: str, config: PushConfig) -> PushConfig:
        """Store the config, replacing one of the same task and id."""
        ...

    def get_push_config(self, workspace: str, task_id: str, config_id: str) -> PushConfig | None: ...
    def list_push_configs(self, workspace: str, task_id: str) -> list[PushConfig]: ...
    def delete_push_config(self, workspace: str, task_id: str, config_id: str) -> bool:
        """Whether it was there; its posts not yet made are dropped with it."""
        ...

    def claim_push_deliveries(self, now: datetime, lease_seconds: float, limit: int) -> list[PushDelivery]:
        """Take up to ``limit`` due posts (not delivered, next attempt reached, no live lease),
        oldest first, leasing them until ``now + lease_seconds``: no other claimer takes them
        meanwhile, and a claimer that died lets them come due again when the lease ends."""
        ...

    def push_delivered(self, delivery_id: str, now: datetime) -> None: ...
    def push_failed(self, delivery_id: str, error: str, retry_at: datetime | None) -> None:
        """Record a failed attempt; it comes due again at ``retry_at`` (None: given up)."""
        ...


_INSERT_TASK = (
    f"INSERT INTO tasks ({TASK_COLUMNS.replace('t.', '')}) VALUES ({', '.join('?' * 13)}) "
    "ON CONFLICT DO NOTHING RETURNING 1"
)
_UPDATE_TASK = (
    "UPDATE tasks SET state = ?, status_parts = ?, status_message_id = ?, status_at = ?, generation = ?, "
    "metadata = ?, updated_at = ? WHERE id = ? AND generation = ? RETURNING 1"
)
# A new artifact goes after the others; a changed one keeps its place.
_UPSERT_ARTIFACT = (
    "INSERT INTO task_artifacts (task_id, artifact_id, name, description, parts, metadata, position) "
    "VALUES (?, ?, ?, ?, ?, ?, (SELECT count(*) FROM task_artifacts WHERE task_id = ?)) "
    "ON CONFLICT (task_id, artifact_id) DO UPDATE SET name = excluded.name, description = excluded.description, "
    "parts = excluded.parts, metadata = excluded.metadata"
)
_INSERT_EVENT = f"INSERT INTO task_events ({EVENT_COLUMNS}) VALUES ({', '.join('?' * 10)})"
# One post per config of the task for the event: the configs as they are when it commits.
_ENQUEUE_PUSH = (
    "INSERT INTO push_deliveries (id, workspace, task_id, config_id, generation, payload, next_attempt_at) "
    "SELECT ? || id, workspace, task_id, id, ?, ?, ? FROM push_configs WHERE task_id = ? ON CONFLICT DO NOTHING"
)
_ARTIFACTS = f"SELECT {ARTIFACT_COLUMNS} FROM task_artifacts a"


def write_task(conn: Connection, write: TaskWrite) -> None:
    """Write the task's change in the transaction open on ``conn`` (its message's); TaskConflict
    when it lost the race (the caller's transaction then rolls back the message too)."""
    task = write.task
    if write.expected_generation is None:
        changed = conn.execute(_INSERT_TASK, task_values(task)).fetchall()
    else:
        changed = conn.execute(_UPDATE_TASK, (*task_changes(task), task.id, write.expected_generation)).fetchall()
    if not changed:
        raise TaskConflict(task.id)
    for artifact in write.artifacts:
        conn.execute(_UPSERT_ARTIFACT, (*artifact_values(task.id, artifact), task.id))
    for event in write.events:
        conn.execute(_INSERT_EVENT, event_values(event))
        prefix = push_delivery_id(task.id, event.generation, "")
        conn.execute(_ENQUEUE_PUSH, (prefix, event.generation, event.model_dump_json(), to_ts(event.at), task.id))
    if write.remote_send is not None:
        write_remote_send(conn, task.workspace, task.id, write.remote_send)


class SQLTasks:
    """Tasks on a store's database; a dialect's subclass adds ``claim_push_deliveries``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get_task(self, workspace: str, task_id: str) -> Task | None:
        def read(conn: Connection) -> Task | None:
            row = conn.execute(
                f"SELECT {TASK_COLUMNS} FROM tasks t WHERE t.id = ? AND t.workspace = ?", (task_id, workspace)
            ).fetchone()
            if row is None:
                return None
            artifacts = conn.execute(f"{_ARTIFACTS} WHERE a.task_id = ? ORDER BY a.position", (task_id,)).fetchall()
            return task_from_row(row, artifacts)

        return self._db.reading(read)

    def list_tasks(self, query: TaskQuery) -> tuple[list[Task], int]:
        where, args = task_filter(query)
        page_where, page_args = where, list(args)
        if query.after is not None:
            page_where += " AND (t.updated_at, t.id) < (?, ?)"
            page_args += [query.after[0], query.after[1]]

        def read(conn: Connection) -> tuple[list[Task], int]:
            (total,) = conn.execute(f"SELECT count(*) FROM tasks t WHERE {where}", args).fetchone()
            rows = conn.execute(
                f"SELECT {TASK_COLUMNS} FROM tasks t WHERE {page_where} ORDER BY t.updated_at DESC, t.id DESC LIMIT ?",
                (*page_args, query.limit),
            ).fetchall()
            artifacts: dict[str, list[Any]] = {}
            if rows:
                ids = [r[0] for r in rows]
                for a in conn.execute(
                    f"{_ARTIFACTS} WHERE a.task_id IN ({marks(ids)}) ORDER BY a.task_id, a.position", ids
                ).fetchall():
                    artifacts.setdefault(a[0], []).append(a)
            return [task_from_row(r, artifacts.get(r[0], ())) for r in rows], total

        return self._db.reading(read)

    def task_events(self, workspace: str, task_id: str, after_generation: int) -> list[TaskEvent]:
        rows = self._db.rows(
            f"SELECT {EVENT_COLUMNS} FROM task_events WHERE task_id = ? AND generation > ? "
            "AND EXISTS (SELECT 1 FROM tasks WHERE id = ? AND workspace = ?) ORDER BY generation",
            (task_id, after_generation, task_id, workspace),
        )
        return [event_from_row(r) for r in rows]

    def task_messages(self, workspace: str, task_id: str, limit: int) -> list[Message]:
        rows = self._db.rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.task_id = ? AND m.workspace = ? "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
            (task_id, workspace, limit),
        )
        return [message_from_row(r) for r in reversed(rows)]

    # --- push-notification configs and the outbox ------------------------------------------------

    def set_push_config(self, workspace: str, config: PushConfig) -> PushConfig:
        values = (workspace, config.task_id, config.id, config.url, config.token, config.auth_scheme)
        self._db.change(
            "INSERT INTO push_configs (workspace, task_id, id, url, token, auth_scheme, auth_credentials, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, "
            "token = excluded.token, auth_scheme = excluded.auth_scheme, "
            "auth_credentials = excluded.auth_credentials, created_at = excluded.created_at RETURNING 1",
            (*values, config.auth_credentials, to_ts(config.created_at)),
            QUIET,
        )
        return config

    def get_push_config(self, workspace: str, task_id: str, config_id: str) -> PushConfig | None:
        row = self._db.row(
            f"SELECT {PUSH_CONFIG_COLUMNS} FROM push_configs WHERE workspace = ? AND task_id = ? AND id = ?",
            (workspace, task_id, config_id),
        )
        return push_config_from_row(row) if row else None

    def list_push_configs(self, workspace: str, task_id: str) -> list[PushConfig]:
        rows = self._db.rows(
            f"SELECT {PUSH_CONFIG_COLUMNS} FROM push_configs WHERE workspace = ? AND task_id = ? ORDER BY created_at, id",
            (workspace, task_id),
        )
        return [push_config_from_row(r) for r in rows]

    def delete_push_config(self, workspace: str, task_id: str, config_id: str) -> bool:
        def delete(conn: Connection) -> bool:
            gone = conn.execute(
                "DELETE FROM push_configs WHERE workspace = ? AND task_id = ? AND id = ? RETURNING 1",
                (workspace, task_id, config_id),
            ).fetchall()
            if gone:
                conn.execute(
                    "DELETE FROM push_deliveries WHERE task_id = ? AND config_id = ? AND delivered_at IS NULL",
                    (task_id, config_id),
                )
            return bool(gone)

        return self._db.transact(delete, QUIET)

    def claim_push_deliveries(self, now: datetime, lease_seconds: float, limit: int) -> list[PushDelivery]:
        raise NotImplementedError  # the dialect's: see the class

    def push_delivered(self, delivery_id: str, now: datetime) -> None:
        self._db.change(
            "UPDATE push_deliveries SET delivered_at = ?, lease_until = NULL, last_error = NULL WHERE id = ? RETURNING 1",
            (to_ts(now), delivery_id),
            QUIET,
        )

    def push_failed(self, delivery_id: str, error: str, retry_at: datetime | None) -> None:
        next_at = to_ts(retry_at) if retry_at is not None else float("inf")  # given up: never due again
        self._db.change(
            "UPDATE push_deliveries SET next_attempt_at = ?, lease_until = NULL, last_error = ? WHERE id = ? RETURNING 1",
            (next_at, error[:500], delivery_id),
            QUIET,
        )
