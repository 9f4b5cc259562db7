"""Tasks in the PostgreSQL schema: a task's change written inside its message's transaction
(``write_task``, called by ``messages.store_message``), reading tasks and their events,
push-notification configs and the outbox of their posts (claimed with SKIP LOCKED and a lease,
so two replicas never post the same one)."""

from __future__ import annotations

from datetime import datetime

import psycopg
from psycopg import errors as pg_errors

from callboard.model import Message
from callboard.store.base import PushDelivery, TaskConflict, TaskQuery, TaskWrite
from callboard.store.postgres import remotes
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.rows import MESSAGE_COLUMNS, message_from_row, to_ts
from callboard.store.task_rows import (
    ARTIFACT_COLUMNS,
    EVENT_COLUMNS,
    PUSH_CONFIG_COLUMNS,
    PUSH_DELIVERY_COLUMNS,
    TASK_COLUMNS,
    artifact_values,
    event_from_row,
    event_values,
    push_config_from_row,
    push_delivery_from_row,
    push_delivery_id,
    task_changes,
    task_filter,
    task_from_row,
    task_values,
)
from callboard.tasks import PushConfig, Task, TaskEvent

_INSERT_TASK = f"INSERT INTO tasks ({TASK_COLUMNS.replace('t.', '')}) VALUES ({', '.join(['%s'] * 13)})"
_UPDATE_TASK = (
    "UPDATE tasks SET state = %s, status_parts = %s, status_message_id = %s, status_at = %s, generation = %s, "
    "metadata = %s, updated_at = %s WHERE id = %s AND generation = %s"
)
# A new artifact goes after the others; a changed one keeps its place.
_UPSERT_ARTIFACT = (
    "INSERT INTO task_artifacts (task_id, artifact_id, name, description, parts, metadata, position) "
    "VALUES (%(t)s, %(a)s, %(n)s, %(d)s, %(p)s, %(m)s, (SELECT count(*) FROM task_artifacts WHERE task_id = %(t)s)) "
    "ON CONFLICT (task_id, artifact_id) DO UPDATE SET name = excluded.name, description = excluded.description, "
    "parts = excluded.parts, metadata = excluded.metadata"
)
_INSERT_EVENT = f"INSERT INTO task_events ({EVENT_COLUMNS}) VALUES ({', '.join(['%s'] * 10)})"
# One post per config of the task for the event: the configs as they are when it commits.
_ENQUEUE_PUSH = (
    "INSERT INTO push_deliveries (id, workspace, task_id, config_id, generation, payload, next_attempt_at) "
    "SELECT %(prefix)s || id, workspace, task_id, id, %(g)s, %(payload)s, %(at)s FROM push_configs "
    "WHERE task_id = %(t)s ON CONFLICT (id) DO NOTHING"
)


def write_task(conn: psycopg.Connection, write: TaskWrite) -> None:
    """Write the task's change in the transaction open on ``conn``; TaskConflict when it lost
    the race (the caller's transaction then rolls back the message too)."""
    task = write.task
    if write.expected_generation is None:
        try:
            with conn.transaction():  # a savepoint: the caller sees TaskConflict, not a broken transaction
                conn.execute(_INSERT_TASK, task_values(task))
        except pg_errors.UniqueViolation:
            raise TaskConflict(task.id) from None
    elif conn.execute(_UPDATE_TASK, (*task_changes(task), task.id, write.expected_generation)).rowcount != 1:
        raise TaskConflict(task.id)
    for artifact in write.artifacts:
        t, a, n, d, p, m = artifact_values(task.id, artifact)
        conn.execute(_UPSERT_ARTIFACT, {"t": t, "a": a, "n": n, "d": d, "p": p, "m": m})
    for event in write.events:
        conn.execute(_INSERT_EVENT, event_values(event))
        conn.execute(
            _ENQUEUE_PUSH,
            {
                "prefix": push_delivery_id(task.id, event.generation, ""),
                "g": event.generation,
                "payload": event.model_dump_json(),
                "at": to_ts(event.at),
                "t": task.id,
            },
        )
    if write.remote_send is not None:
        remotes.write_remote_send(conn, task.workspace, task.id, write.remote_send)


def get_task(db: PostgresDatabase, workspace: str, task_id: str) -> Task | None:
    def read(conn: psycopg.Connection) -> Task | None:
        row = conn.execute(
            f"SELECT {TASK_COLUMNS} FROM tasks t WHERE t.id = %s AND t.workspace = %s", (task_id, workspace)
        ).fetchone()
        if row is None:
            return None
        artifacts = conn.execute(
            f"SELECT {ARTIFACT_COLUMNS} FROM task_artifacts a WHERE a.task_id = %s ORDER BY a.position", (task_id,)
        ).fetchall()
        return task_from_row(row, artifacts)

    return db.run(read, reads_only=True)


def list_tasks(db: PostgresDatabase, query: TaskQuery) -> tuple[list[Task], int]:
    where, args = task_filter(query, "%s")
    page_where, page_args = where, list(args)
    if query.after is not None:
        page_where += " AND (t.updated_at, t.id) < (%s, %s)"
        page_args += [query.after[0], query.after[1]]

    def read(conn: psycopg.Connection) -> tuple[list[Task], int]:
        (total,) = conn.execute(f"SELECT count(*) FROM tasks t WHERE {where}", args).fetchone()  # type: ignore[misc]
        rows = conn.execute(
            f"SELECT {TASK_COLUMNS} FROM tasks t WHERE {page_where} ORDER BY t.updated_at DESC, t.id DESC LIMIT %s",
            (*page_args, query.limit),
        ).fetchall()
        artifacts: dict[str, list] = {}
        if rows:
            for a in conn.execute(
                f"SELECT {ARTIFACT_COLUMNS} FROM task_artifacts a WHERE a.task_id = ANY(%s) "
                "ORDER BY a.task_id, a.position",
                ([r[0] for r in rows],),
            ):
                artifacts.setdefault(a[0], []).append(a)
        return [task_from_row(r, artifacts.get(r[0], ())) for r in rows], total

    return db.run(read, reads_only=True)


def task_events(db: PostgresDatabase, workspace: str, task_id: str, after_generation: int) -> list[TaskEvent]:
    rows = db.all(
        f"SELECT {EVENT_COLUMNS} FROM task_events WHERE task_id = %s AND generation > %s "
        "AND EXISTS (SELECT FROM tasks WHERE id = %s AND workspace = %s) ORDER BY generation",
        (task_id, after_generation, task_id, workspace),
    )
    return [event_from_row(r) for r in rows]


def task_messages(db: PostgresDatabase, workspace: str, task_id: str, limit: int) -> list[Message]:
    rows = db.all(
        f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.task_id = %s AND m.workspace = %s "
        "ORDER BY m.created_at DESC, m.id DESC LIMIT %s",
        (task_id, workspace, limit),
    )
    return [message_from_row(r) for r in reversed(rows)]


# --- push-notification configs and the outbox ------------------------------------------------


def set_push_config(db: PostgresDatabase, workspace: str, config: PushConfig) -> PushConfig:
    db.run(
        lambda conn: conn.execute(
            "INSERT INTO push_configs (workspace, task_id, id, url, token, auth_scheme, auth_credentials, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, "
            "token = excluded.token, auth_scheme = excluded.auth_scheme, "
            "auth_credentials = excluded.auth_credentials, created_at = excluded.created_at",
            (
                workspace,
                config.task_id,
                config.id,
                config.url,
                config.token,
                config.auth_scheme,
                config.auth_credentials,
                to_ts(config.created_at),
            ),
        )
    )
    return config


def get_push_config(db: PostgresDatabase, workspace: str, task_id: str, config_id: str) -> PushConfig | None:
    row = db.one(
        f"SELECT {PUSH_CONFIG_COLUMNS} FROM push_configs WHERE workspace = %s AND task_id = %s AND id = %s",
        (workspace, task_id, config_id),
    )
    return push_config_from_row(row) if row else None


def list_push_configs(db: PostgresDatabase, workspace: str, task_id: str) -> list[PushConfig]:
    rows = db.all(
        f"SELECT {PUSH_CONFIG_COLUMNS} FROM push_configs WHERE workspace = %s AND task_id = %s ORDER BY created_at, id",
        (workspace, task_id),
    )
    return [push_config_from_row(r) for r in rows]


def delete_push_config(db: PostgresDatabase, workspace: str, task_id: str, config_id: str) -> bool:
    def delete(conn: psycopg.Connection) -> bool:
        with conn.transaction():
            gone = conn.execute(
                "DELETE FROM push_configs WHERE workspace = %s AND task_id = %s AND id = %s",
                (workspace, task_id, config_id),
            ).rowcount
            if gone:
                conn.execute(
                    "DELETE FROM push_deliveries WHERE task_id = %s AND config_id = %s AND delivered_at IS NULL",
                    (task_id, config_id),
                )
        return gone == 1

    return db.run(delete)


# SKIP LOCKED: a replica claiming at the same moment takes other rows, never the same ones.
_CLAIM = f"""
WITH due AS (
    SELECT id FROM push_deliveries
    WHERE delivered_at IS NULL AND next_attempt_at <= %(at)s AND (lease_until IS NULL OR lease_until <= %(at)s)
    ORDER BY next_attempt_at, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED
), leased AS (
    UPDATE push_deliveries p SET lease_until = %(until)s, attempts = p.attempts + 1
    WHERE p.id = ANY(ARRAY(SELECT id FROM due))
    RETURNING p.*
)
SELECT {PUSH_DELIVERY_COLUMNS} FROM leased p JOIN push_configs c ON c.task_id = p.task_id AND c.id = p.config_id
ORDER BY p.next_attempt_at, p.id
"""


def claim_push_deliveries(db: PostgresDatabase, now: datetime, lease_seconds: float, limit: int) -> list[PushDelivery]:
    at = to_ts(now)
    args = {"at": at, "until": at + lease_seconds, "limit": limit}
    rows = db.run(lambda conn: conn.execute(_CLAIM, args).fetchall())  # type: ignore[arg-type]
    return [push_delivery_from_row(r) for r in rows]


def push_delivered(db: PostgresDatabase, delivery_id: str, now: datetime) -> None:
    db.run(
        lambda conn: conn.execute(
            "UPDATE push_deliveries SET delivered_at = %s, lease_until = NULL, last_error = NULL WHERE id = %s",
            (to_ts(now), delivery_id),
        )
    )


def push_failed(db: PostgresDatabase, delivery_id: str, error: str, retry_at: datetime | None) -> None:
    next_at = to_ts(retry_at) if retry_at is not None else float("inf")  # given up: never due again
    db.run(
        lambda conn: conn.execute(
            "UPDATE push_deliveries SET next_attempt_at = %s, lease_until = NULL, last_error = %s WHERE id = %s",
            (next_at, error[:500], delivery_id),
        )
    )
