"""Tasks in the SQLite schema: a task's change written inside its message's transaction
(``write_task``, called by ``messages.insert_messages``), reading tasks and their events,
push-notification configs and the outbox of their posts."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from callboard.model import Message
from callboard.store.base import PushDelivery, TaskConflict, TaskQuery, TaskWrite
from callboard.store.rows import MESSAGE_COLUMNS, message_from_row, to_ts
from callboard.store.sqlite import remotes
from callboard.store.sqlite.connection import SQLiteDatabase
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

_INSERT_TASK = f"INSERT INTO tasks ({TASK_COLUMNS.replace('t.', '')}) VALUES ({', '.join('?' * 13)})"
_UPDATE_TASK = (
    "UPDATE tasks SET state = ?, status_parts = ?, status_message_id = ?, status_at = ?, generation = ?, "
    "metadata = ?, updated_at = ? WHERE id = ? AND generation = ?"
)
# A new artifact goes after the others; a changed one keeps its place.
_UPSERT_ARTIFACT = (
    "INSERT INTO task_artifacts (task_id, artifact_id, name, description, parts, metadata, position) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT count(*) FROM task_artifacts WHERE task_id = ?1)) "
    "ON CONFLICT (task_id, artifact_id) DO UPDATE SET name = excluded.name, description = excluded.description, "
    "parts = excluded.parts, metadata = excluded.metadata"
)
_INSERT_EVENT = f"INSERT INTO task_events ({EVENT_COLUMNS}) VALUES ({', '.join('?' * 10)})"
# One post per config of the task for the event: the configs as they are when it commits.
_ENQUEUE_PUSH = (
    "INSERT OR IGNORE INTO push_deliveries (id, workspace, task_id, config_id, generation, payload, next_attempt_at) "
    "SELECT ?1 || id, workspace, task_id, id, ?2, ?3, ?4 FROM push_configs WHERE task_id = ?5"
)


def write_task(conn: sqlite3.Connection, write: TaskWrite) -> None:
    """Write the task's change in the open transaction; TaskConflict when it lost the race."""
    task = write.task
    if write.expected_generation is None:
        try:
            conn.execute(_INSERT_TASK, task_values(task))
        except sqlite3.IntegrityError:
            raise TaskConflict(task.id) from None
    elif conn.execute(_UPDATE_TASK, (*task_changes(task), task.id, write.expected_generation)).rowcount != 1:
        raise TaskConflict(task.id)
    for artifact in write.artifacts:
        conn.execute(_UPSERT_ARTIFACT, artifact_values(task.id, artifact))
    for event in write.events:
        conn.execute(_INSERT_EVENT, event_values(event))
        prefix = push_delivery_id(task.id, event.generation, "")
        conn.execute(_ENQUEUE_PUSH, (prefix, event.generation, event.model_dump_json(), to_ts(event.at), task.id))
    if write.remote_send is not None:
        remotes.write_remote_send(conn, task.workspace, task.id, write.remote_send)


def get_task(db: SQLiteDatabase, workspace: str, task_id: str) -> Task | None:
    with db.read() as conn:
        return _task(conn, workspace, task_id)


def _task(conn: sqlite3.Connection, workspace: str, task_id: str) -> Task | None:
    row = conn.execute(f"SELECT {TASK_COLUMNS} FROM tasks t WHERE t.id = ? AND t.workspace = ?", (task_id, workspace))
    found = row.fetchone()
    if found is None:
        return None
    artifacts = conn.execute(
        f"SELECT {ARTIFACT_COLUMNS} FROM task_artifacts a WHERE a.task_id = ? ORDER BY a.position", (task_id,)
    ).fetchall()
    return task_from_row(found, artifacts)


def list_tasks(db: SQLiteDatabase, query: TaskQuery) -> tuple[list[Task], int]:
    where, args = task_filter(query, "?")
    page_where, page_args = where, list(args)
    if query.after is not None:
        page_where += " AND (t.updated_at < ? OR (t.updated_at = ? AND t.id < ?))"
        page_args += [query.after[0], query.after[0], query.after[1]]
    with db.read() as conn:
        (total,) = conn.execute(f"SELECT count(*) FROM tasks t WHERE {where}", args).fetchone()
        rows = conn.execute(
            f"SELECT {TASK_COLUMNS} FROM tasks t WHERE {page_where} ORDER BY t.updated_at DESC, t.id DESC LIMIT ?",
            (*page_args, query.limit),
        ).fetchall()
        artifacts: dict[str, list] = {}
        if rows:
            ids = [r[0] for r in rows]
            for a in conn.execute(
                f"SELECT {ARTIFACT_COLUMNS} FROM task_artifacts a WHERE a.task_id IN ({','.join('?' * len(ids))}) "
                "ORDER BY a.task_id, a.position",
                ids,
            ):
                artifacts.setdefault(a[0], []).append(a)
    return [task_from_row(r, artifacts.get(r[0], ())) for r in rows], total


def task_events(db: SQLiteDatabase, workspace: str, task_id: str, after_generation: int) -> list[TaskEvent]:
    with db.read() as conn:
        rows = conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM task_events WHERE task_id = ? AND generation > ? "
            "AND EXISTS (SELECT 1 FROM tasks WHERE id = ? AND workspace = ?) ORDER BY generation",
            (task_id, after_generation, task_id, workspace),
        ).fetchall()
    return [event_from_row(r) for r in rows]


def task_messages(db: SQLiteDatabase, workspace: str, task_id: str, limit: int) -> list[Message]:
    with db.read() as conn:
        rows = conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.task_id = ? AND m.workspace = ? "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
            (task_id, workspace, limit),
        ).fetchall()
    return [message_from_row(r) for r in reversed(rows)]


# --- push-notification configs and the outbox ------------------------------------------------


def set_push_config(db: SQLiteDatabase, workspace: str, config: PushConfig) -> PushConfig:
    values = (workspace, config.task_id, config.id, config.url, config.token, config.auth_scheme)
    db.transact(
        lambda conn: conn.execute(
            "INSERT INTO push_configs (workspace, task_id, id, url, token, auth_scheme, auth_credentials, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, "
            "token = excluded.token, auth_scheme = excluded.auth_scheme, "
            "auth_credentials = excluded.auth_credentials, created_at = excluded.created_at",
            (*values, config.auth_credentials, to_ts(config.created_at)),
        )
    )
    return config


def get_push_config(db: SQLiteDatabase, workspace: str, task_id: str, config_id: str) -> PushConfig | None:
    with db.read() as conn:
        row = conn.execute(
            f"SELECT {PUSH_CONFIG_COLUMNS} FROM push_configs WHERE workspace = ? AND task_id = ? AND id = ?",
            (workspace, task_id, config_id),
        ).fetchone()
    return push_config_from_row(row) if row else None


def list_push_configs(db: SQLiteDatabase, workspace: str, task_id: str) -> list[PushConfig]:
    with db.read() as conn:
        rows = conn.execute(
            f"SELECT {PUSH_CONFIG_COLUMNS} FROM push_configs WHERE workspace = ? AND task_id = ? ORDER BY created_at, id",
            (workspace, task_id),
        ).fetchall()
    return [push_config_from_row(r) for r in rows]


def delete_push_config(db: SQLiteDatabase, workspace: str, task_id: str, config_id: str) -> bool:
    def delete(conn: sqlite3.Connection) -> bool:
        gone = conn.execute(
            "DELETE FROM push_configs WHERE workspace = ? AND task_id = ? AND id = ?", (workspace, task_id, config_id)
        ).rowcount
        if gone:
            conn.execute(
                "DELETE FROM push_deliveries WHERE task_id = ? AND config_id = ? AND delivered_at IS NULL",
                (task_id, config_id),
            )
        return gone == 1

    return db.transact(delete)


def claim_push_deliveries(db: SQLiteDatabase, now: datetime, lease_seconds: float, limit: int) -> list[PushDelivery]:
    at = to_ts(now)

    def claim(conn: sqlite3.Connection) -> list:
        # One writer at a time: the select and the lease are one transaction, so no two claim a row.
        rows = conn.execute(
            f"SELECT {PUSH_DELIVERY_COLUMNS} FROM push_deliveries p "
            "JOIN push_configs c ON c.task_id = p.task_id AND c.id = p.config_id "
            "WHERE p.delivered_at IS NULL AND p.next_attempt_at <= ? AND (p.lease_until IS NULL OR p.lease_until <= ?) "
            "ORDER BY p.next_attempt_at, p.id LIMIT ?",
            (at, at, limit),
        ).fetchall()
        if rows:
            conn.execute(
                f"UPDATE push_deliveries SET lease_until = ?, attempts = attempts + 1 "
                f"WHERE id IN ({','.join('?' * len(rows))})",
                (at + lease_seconds, *(r[0] for r in rows)),
            )
        return rows

    return [push_delivery_from_row((*r[:6], r[6] + 1, *r[7:])) for r in db.transact(claim)]


def push_delivered(db: SQLiteDatabase, delivery_id: str, now: datetime) -> None:
    db.transact(
        lambda conn: conn.execute(
            "UPDATE push_deliveries SET delivered_at = ?, lease_until = NULL, last_error = NULL WHERE id = ?",
            (to_ts(now), delivery_id),
        )
    )


def push_failed(db: SQLiteDatabase, delivery_id: str, error: str, retry_at: datetime | None) -> None:
    # Given up: never due again.
    next_at = to_ts(retry_at) if retry_at is not None else float("inf")
    db.transact(
        lambda conn: conn.execute(
            "UPDATE push_deliveries SET next_attempt_at = ?, lease_until = NULL, last_error = ? WHERE id = ?",
            (next_at, error[:500], delivery_id),
        )
    )
