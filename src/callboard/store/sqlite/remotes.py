"""Outside A2A agents in the SQLite schema, and the outbox of mail to them (a row is written in
its message's transaction by ``tasks.write_task``; here it is claimed, leased and settled)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from callboard.remotes import RemoteAgent
from callboard.store.base import NewRemoteSend, RemoteSend
from callboard.store.remote_rows import (
    OUTBOX_COLUMNS,
    REMOTE_COLUMNS,
    agent_description,
    outbox_from_row,
    remote_from_row,
    remote_values,
)
from callboard.store.rows import to_ts
from callboard.store.sqlite.connection import SQLiteDatabase

_OPEN = "('pending', 'following')"


def add_remote_agent(db: SQLiteDatabase, remote: RemoteAgent, token: str | None) -> None:
    added = to_ts(remote.added_at)

    def add(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT OR IGNORE INTO workspaces (name, created_at) VALUES (?, ?)", (remote.workspace, added))
        conn.execute(
            "INSERT OR IGNORE INTO agents (workspace, name, description, skills, created_at) VALUES (?, ?, ?, '[]', ?)",
            (remote.workspace, remote.name, agent_description(remote), added),
        )
        conn.execute(
            "INSERT INTO remote_agents (workspace, name, url, card, token, added_at, card_fetched_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace, name) DO UPDATE SET url = excluded.url, "
            "card = excluded.card, token = excluded.token, card_fetched_at = excluded.card_fetched_at",
            remote_values(remote, token),
        )

    db.transact(add)


def get_remote_agent(db: SQLiteDatabase, workspace: str, name: str) -> tuple[RemoteAgent, str | None] | None:
    with db.read() as conn:
        row = conn.execute(
            f"SELECT {REMOTE_COLUMNS} FROM remote_agents r WHERE r.workspace = ? AND r.name = ?", (workspace, name)
        ).fetchone()
    return remote_from_row(row) if row else None


def remote_agent_by_url(db: SQLiteDatabase, workspace: str, url: str) -> RemoteAgent | None:
    with db.read() as conn:
        row = conn.execute(
            f"SELECT {REMOTE_COLUMNS} FROM remote_agents r WHERE r.workspace = ? AND r.url = ?", (workspace, url)
        ).fetchone()
    return remote_from_row(row)[0] if row else None


def list_remote_agents(db: SQLiteDatabase, workspace: str, names: Sequence[str] | None = None) -> list[RemoteAgent]:
    sql = f"SELECT {REMOTE_COLUMNS} FROM remote_agents r WHERE r.workspace = ?"
    args: list[object] = [workspace]
    if names is not None:
        if not names:
            return []
        sql += f" AND r.name IN ({','.join('?' * len(names))})"
        args += names
    with db.read() as conn:
        rows = conn.execute(sql + " ORDER BY r.name", args).fetchall()
    return [remote_from_row(r)[0] for r in rows]


def delete_remote_agent(db: SQLiteDatabase, workspace: str, name: str) -> bool:
    def delete(conn: sqlite3.Connection) -> bool:
        gone = conn.execute("DELETE FROM remote_agents WHERE workspace = ? AND name = ?", (workspace, name)).rowcount
        conn.execute(
            f"UPDATE remote_outbox SET state = 'failed', lease_until = NULL, last_error = ? "
            f"WHERE workspace = ? AND remote = ? AND state IN {_OPEN}",
            (f"the outside agent {name} was removed before this was sent.", workspace, name),
        )
        return gone == 1

    return db.transact(delete)


def write_remote_send(conn: sqlite3.Connection, workspace: str, task_id: str, send: NewRemoteSend) -> None:
    """The outbox row of a message, in the message's own transaction (``tasks.write_task``)."""
    at = to_ts(send.created_at)
    conn.execute(
        "INSERT INTO remote_outbox (workspace, message_id, task_id, remote, created_at, next_attempt_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (workspace, send.message_id, task_id, send.remote, at, at),
    )


def claim_remote_sends(db: SQLiteDatabase, now: datetime, lease_seconds: float, limit: int) -> list[RemoteSend]:
    at = to_ts(now)
    with db.read() as conn:  # every pump asks often, and mostly finds nothing: no write lock for that
        if not conn.execute(
            f"SELECT 1 FROM remote_outbox WHERE state IN {_OPEN} AND next_attempt_at <= ? "
            "AND (lease_until IS NULL OR lease_until <= ?) LIMIT 1",
            (at, at),
        ).fetchone():
            return []

    def claim(conn: sqlite3.Connection) -> list:
        # One writer at a time: the select and the lease are one transaction, so no two claim a row.
        rows = conn.execute(
            f"SELECT {OUTBOX_COLUMNS} FROM remote_outbox o WHERE o.state IN {_OPEN} AND o.next_attempt_at <= ? "
            "AND (o.lease_until IS NULL OR o.lease_until <= ?) ORDER BY o.next_attempt_at, o.message_id LIMIT ?",
            (at, at, limit),
        ).fetchall()
        for row in rows:
            conn.execute(
                "UPDATE remote_outbox SET lease_until = ?, attempts = attempts + 1 WHERE workspace = ? AND message_id = ?",
                (at + lease_seconds, row[0], row[1]),
            )
        return rows

    return [outbox_from_row((*r[:5], r[5] + 1, *r[6:])) for r in db.transact(claim)]


def renew_remote_send(db: SQLiteDatabase, workspace: str, message_id: str, lease_until: datetime) -> None:
    _update(db, workspace, message_id, "lease_until = ?", to_ts(lease_until), open_only=True)


def remote_send_started(
    db: SQLiteDatabase, workspace: str, message_id: str, remote_task_id: str, remote_context_id: str
) -> None:
    _update(
        db,
        workspace,
        message_id,
        "state = 'following', remote_task_id = ?, remote_context_id = ?, last_error = NULL",
        remote_task_id,
        remote_context_id,
    )


def remote_send_retry(
    db: SQLiteDatabase, workspace: str, message_id: str, error: str | None, retry_at: datetime
) -> None:
    _update(
        db,
        workspace,
        message_id,
        "next_attempt_at = ?, lease_until = NULL, last_error = ?",
        to_ts(retry_at),
        error,
        open_only=True,
    )


def remote_send_finished(db: SQLiteDatabase, workspace: str, message_id: str, state: str, error: str | None) -> None:
    _update(db, workspace, message_id, "state = ?, lease_until = NULL, last_error = ?", state, error)


def remote_sends(
    db: SQLiteDatabase, workspace: str, *, task_id: str | None = None, message_id: str | None = None
) -> list[RemoteSend]:
    column, value = ("o.task_id", task_id) if task_id is not None else ("o.message_id", message_id)
    with db.read() as conn:
        rows = conn.execute(
            f"SELECT {OUTBOX_COLUMNS} FROM remote_outbox o WHERE o.workspace = ? AND {column} = ? "
            "ORDER BY o.created_at, o.message_id",
            (workspace, value),
        ).fetchall()
    return [outbox_from_row(r) for r in rows]


def _update(
    db: SQLiteDatabase,
    workspace: str,
    message_id: str,
    assignments: str,
    *values: object,
    open_only: bool = False,
) -> None:
    """``open_only``: leave a settled row as it is (a pump cut short after settling it lets go)."""
    where = f" AND state IN {_OPEN}" if open_only else ""
    db.transact(
        lambda conn: conn.execute(
            f"UPDATE remote_outbox SET {assignments} WHERE workspace = ? AND message_id = ?{where}",
            (*values, workspace, message_id),
        )
    )
