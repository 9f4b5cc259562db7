"""Outside A2A agents in the PostgreSQL schema, and the outbox of mail to them (a row is written
in its message's transaction by ``tasks.write_task``; here it is claimed with SKIP LOCKED and a
lease, so two replicas never send the same one, and settled)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import psycopg

from callboard.remotes import RemoteAgent
from callboard.store.base import NewRemoteSend, RemoteSend
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.remote_rows import (
    OUTBOX_COLUMNS,
    REMOTE_COLUMNS,
    agent_description,
    outbox_from_row,
    remote_from_row,
    remote_values,
)
from callboard.store.rows import to_ts

_OPEN = "('pending', 'following')"


def add_remote_agent(db: PostgresDatabase, remote: RemoteAgent, token: str | None) -> None:
    added = to_ts(remote.added_at)

    def add(conn: psycopg.Connection) -> None:
        conn.execute(
            "INSERT INTO workspaces (name, created_at) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (remote.workspace, added),
        )
        conn.execute(
            "INSERT INTO agents (workspace, name, description, skills, created_at) VALUES (%s, %s, %s, '[]', %s) "
            "ON CONFLICT DO NOTHING",
            (remote.workspace, remote.name, agent_description(remote), added),
        )
        conn.execute(
            "INSERT INTO remote_agents (workspace, name, url, card, token, added_at, card_fetched_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (workspace, name) DO UPDATE SET url = excluded.url, "
            "card = excluded.card, token = excluded.token, card_fetched_at = excluded.card_fetched_at",
            remote_values(remote, token),
        )

    db.run(add)


def get_remote_agent(db: PostgresDatabase, workspace: str, name: str) -> tuple[RemoteAgent, str | None] | None:
    row = db.run(
        lambda conn: conn.execute(
            f"SELECT {REMOTE_COLUMNS} FROM remote_agents r WHERE r.workspace = %s AND r.name = %s", (workspace, name)
        ).fetchone(),
        reads_only=True,
    )
    return remote_from_row(row) if row else None


def remote_agent_by_url(db: PostgresDatabase, workspace: str, url: str) -> RemoteAgent | None:
    row = db.run(
        lambda conn: conn.execute(
            f"SELECT {REMOTE_COLUMNS} FROM remote_agents r WHERE r.workspace = %s AND r.url = %s", (workspace, url)
        ).fetchone(),
        reads_only=True,
    )
    return remote_from_row(row)[0] if row else None


def list_remote_agents(db: PostgresDatabase, workspace: str, names: Sequence[str] | None = None) -> list[RemoteAgent]:
    sql = f"SELECT {REMOTE_COLUMNS} FROM remote_agents r WHERE r.workspace = %s"
    args: list[object] = [workspace]
    if names is not None:
        if not names:
            return []
        sql += " AND r.name = ANY(%s)"
        args.append(list(names))
    rows = db.run(lambda conn: conn.execute(sql + " ORDER BY r.name", args).fetchall(), reads_only=True)
    return [remote_from_row(r)[0] for r in rows]


def delete_remote_agent(db: PostgresDatabase, workspace: str, name: str) -> bool:
    def delete(conn: psycopg.Connection) -> bool:
        gone = conn.execute("DELETE FROM remote_agents WHERE workspace = %s AND name = %s", (workspace, name)).rowcount
        conn.execute(
            f"UPDATE remote_outbox SET state = 'failed', lease_until = NULL, last_error = %s "
            f"WHERE workspace = %s AND remote = %s AND state IN {_OPEN}",
            (f"the outside agent {name} was removed before this was sent.", workspace, name),
        )
        return gone == 1

    return db.run(delete)


def write_remote_send(conn: psycopg.Connection, workspace: str, task_id: str, send: NewRemoteSend) -> None:
    """The outbox row of a message, in the message's own transaction (``tasks.write_task``)."""
    at = to_ts(send.created_at)
    conn.execute(
        "INSERT INTO remote_outbox (workspace, message_id, task_id, remote, created_at, next_attempt_at) "
        "VALUES (%s, %s, %s, %s, %s, %s)",
        (workspace, send.message_id, task_id, send.remote, at, at),
    )


# SKIP LOCKED: a replica claiming at the same moment takes other rows, never the same ones.
_CLAIM = f"""
WITH due AS (
    SELECT workspace, message_id FROM remote_outbox
    WHERE state IN {_OPEN} AND next_attempt_at <= %(at)s AND (lease_until IS NULL OR lease_until <= %(at)s)
    ORDER BY next_attempt_at, message_id LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
UPDATE remote_outbox o SET lease_until = %(until)s, attempts = o.attempts + 1
FROM due WHERE o.workspace = due.workspace AND o.message_id = due.message_id
RETURNING {OUTBOX_COLUMNS}
"""


def claim_remote_sends(db: PostgresDatabase, now: datetime, lease_seconds: float, limit: int) -> list[RemoteSend]:
    at = to_ts(now)
    args = {"at": at, "until": at + lease_seconds, "limit": limit}
    rows = db.run(lambda conn: conn.execute(_CLAIM, args).fetchall())  # type: ignore[arg-type]
    return sorted((outbox_from_row(r) for r in rows), key=lambda r: (r.next_attempt_at, r.message_id))


def renew_remote_send(db: PostgresDatabase, workspace: str, message_id: str, lease_until: datetime) -> None:
    _update(db, workspace, message_id, "lease_until = %s", to_ts(lease_until), open_only=True)


def remote_send_started(
    db: PostgresDatabase, workspace: str, message_id: str, remote_task_id: str, remote_context_id: str
) -> None:
    _update(
        db,
        workspace,
        message_id,
        "state = 'following', remote_task_id = %s, remote_context_id = %s, last_error = NULL",
        remote_task_id,
        remote_context_id,
    )


def remote_send_retry(
    db: PostgresDatabase, workspace: str, message_id: str, error: str | None, retry_at: datetime
) -> None:
    _update(
        db,
        workspace,
        message_id,
        "next_attempt_at = %s, lease_until = NULL, last_error = %s",
        to_ts(retry_at),
        error,
        open_only=True,
    )


def remote_send_finished(db: PostgresDatabase, workspace: str, message_id: str, state: str, error: str | None) -> None:
    _update(db, workspace, message_id, "state = %s, lease_until = NULL, last_error = %s", state, error)


def remote_sends(
    db: PostgresDatabase, workspace: str, *, task_id: str | None = None, message_id: str | None = None
) -> list[RemoteSend]:
    column, value = ("o.task_id", task_id) if task_id is not None else ("o.message_id", message_id)
    rows = db.run(
        lambda conn: conn.execute(
            f"SELECT {OUTBOX_COLUMNS} FROM remote_outbox o WHERE o.workspace = %s AND {column} = %s "
            "ORDER BY o.created_at, o.message_id",
            (workspace, value),
        ).fetchall(),
        reads_only=True,
    )
    return [outbox_from_row(r) for r in rows]


def _update(
    db: PostgresDatabase,
    workspace: str,
    message_id: str,
    assignments: str,
    *values: object,
    open_only: bool = False,
) -> None:
    """``open_only``: leave a settled row as it is (a pump cut short after settling it lets go)."""
    where = f" AND state IN {_OPEN}" if open_only else ""
    db.run(
        lambda conn: conn.execute(
            f"UPDATE remote_outbox SET {assignments} WHERE workspace = %s AND message_id = %s{where}",
            (*values, workspace, message_id),
        )
    )
