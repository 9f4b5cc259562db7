"""Workspaces, agents and channels in the SQLite schema: who and where mail can go. Functions on
the database, called by ``SQLiteStore``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from callboard.model import Agent, AuditEntry, Channel, ChannelMember, Workspace, built
from callboard.store.rows import CHANNEL_QUERY, agent_from_row, channel_from_row, from_ts, to_ts
from callboard.store.sqlite import audit
from callboard.store.sqlite.connection import SQLiteDatabase
from callboard.store.sqlite.messages import deliveries_written

_AGENT_COLUMNS = "workspace, name, description, skills, created_at"
_UNREAD = "SELECT count(*) FROM deliveries WHERE workspace = ? AND recipient = ? AND read_at IS NULL"
# An agent's rows besides its own, by the column that names it (messages it sent stay).
_AGENT_ROWS = (
    ("deliveries", "recipient"),
    ("delivery_events", "recipient"),
    ("channel_members", "agent"),
    ("sessions", "agent"),
)


def changes_one_row(
    db: SQLiteDatabase, statement: str, args: Sequence[object], record: AuditEntry | None = None
) -> bool:
    """Run one statement as a write transaction of its own (appending ``record`` when it
    changed a row); True when it did."""

    def change(conn: sqlite3.Connection) -> bool:
        changed = conn.execute(statement, args).rowcount == 1
        if changed:
            audit.append(conn, record)
        return changed

    return db.transact(change)


# --- workspaces and agents ----------------------------------------------------------------------


def ensure_workspace(db: SQLiteDatabase, name: str, now: datetime) -> bool:
    with db.read() as conn:  # most calls find it: no write lock for those
        if conn.execute("SELECT 1 FROM workspaces WHERE name = ?", (name,)).fetchone():
            return False
    return changes_one_row(db, "INSERT OR IGNORE INTO workspaces (name, created_at) VALUES (?, ?)", (name, to_ts(now)))


def list_workspaces(db: SQLiteDatabase) -> list[Workspace]:
    with db.read() as conn:
        rows = conn.execute("SELECT name, created_at FROM workspaces ORDER BY name").fetchall()
    return [Workspace(name=r[0], created_at=from_ts(r[1])) for r in rows]


def ensure_agent(db: SQLiteDatabase, workspace: str, name: str, now: datetime) -> bool:
    with db.read() as conn:
        if conn.execute("SELECT 1 FROM agents WHERE workspace = ? AND name = ?", (workspace, name)).fetchone():
            return False
    return create_agent(db, workspace, name, None, [], now)


def create_agent(
    db: SQLiteDatabase, workspace: str, name: str, description: str | None, skills: list[str], now: datetime
) -> bool:
    return changes_one_row(
        db,
        "INSERT OR IGNORE INTO agents (workspace, name, description, skills, created_at) VALUES (?, ?, ?, ?, ?)",
        (workspace, name, description, json.dumps(skills), to_ts(now)),
    )


def update_agent(
    db: SQLiteDatabase, workspace: str, name: str, description: str | None, skills: list[str] | None
) -> bool:
    return changes_one_row(
        db,
        "UPDATE agents SET description = coalesce(?, description), skills = coalesce(?, skills) "
        "WHERE workspace = ? AND name = ?",
        (description, None if skills is None else json.dumps(skills), workspace, name),
    )


def get_agent(db: SQLiteDatabase, workspace: str, name: str) -> Agent | None:
    with db.read() as conn:
        row = conn.execute(
            f"SELECT {_AGENT_COLUMNS} FROM agents WHERE workspace = ? AND name = ?", (workspace, name)
        ).fetchone()
    return agent_from_row(row) if row else None


def list_agents(db: SQLiteDatabase, workspace: str) -> list[Agent]:
    with db.read() as conn:
        rows = conn.execute(
            f"SELECT {_AGENT_COLUMNS} FROM agents WHERE workspace = ? ORDER BY name", (workspace,)
        ).fetchall()
    return [agent_from_row(r) for r in rows]


def delete_agent(
    db: SQLiteDatabase, workspace: str, name: str, record: AuditEntry | None, keep_unread: bool
) -> int | None:
    deliveries_written(db)  # its unread count includes the deliveries of a large send not written out yet

    def delete(conn: sqlite3.Connection) -> int | None:
        if not conn.execute("SELECT 1 FROM agents WHERE workspace = ? AND name = ?", (workspace, name)).fetchone():
            return None
        unread = conn.execute(_UNREAD, (workspace, name)).fetchone()[0]
        if unread and keep_unread:
            return unread
        conn.execute("DELETE FROM agents WHERE workspace = ? AND name = ?", (workspace, name))
        for table, column in _AGENT_ROWS:
            conn.execute(f"DELETE FROM {table} WHERE workspace = ? AND {column} = ?", (workspace, name))
        audit.append(conn, record, unread=unread)
        return unread

    return db.transact(delete)


# --- channels ---------------------------------------------------------------------------------------


def create_channel(
    db: SQLiteDatabase,
    workspace: str,
    name: str,
    creator: str,
    description: str | None,
    now: datetime,
    invite_only: bool,
    record: AuditEntry | None,
) -> bool:
    def create(conn: sqlite3.Connection) -> bool:
        cur = conn.execute(
            "INSERT OR IGNORE INTO channels (workspace, name, description, created_by, created_at, invite_only) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (workspace, name, description, creator, to_ts(now), invite_only),
        )
        if cur.rowcount == 0:
            return False
        conn.execute(
            "INSERT OR IGNORE INTO channel_members (workspace, channel, agent, joined_at) VALUES (?, ?, ?, ?)",
            (workspace, name, creator, to_ts(now)),
        )
        audit.append(conn, record)
        return True

    return db.transact(create)


def get_channel(db: SQLiteDatabase, workspace: str, name: str, viewer: str | None) -> Channel | None:
    with db.read() as conn:
        row = conn.execute(CHANNEL_QUERY + " AND c.name = ?", (viewer, workspace, name)).fetchone()
    return channel_from_row(row) if row else None


def list_channels(db: SQLiteDatabase, workspace: str, viewer: str | None) -> list[Channel]:
    with db.read() as conn:
        rows = conn.execute(CHANNEL_QUERY + " ORDER BY c.name", (viewer, workspace)).fetchall()
    return [channel_from_row(r) for r in rows]


def join_channel(
    db: SQLiteDatabase, workspace: str, channel: str, agent: str, now: datetime, record: AuditEntry | None
) -> bool:
    return changes_one_row(
        db,
        "INSERT OR IGNORE INTO channel_members (workspace, channel, agent, joined_at) VALUES (?, ?, ?, ?)",
        (workspace, channel, agent, to_ts(now)),
        record,
    )


def leave_channel(db: SQLiteDatabase, workspace: str, channel: str, agent: str, record: AuditEntry | None) -> bool:
    return changes_one_row(
        db,
        "DELETE FROM channel_members WHERE workspace = ? AND channel = ? AND agent = ?",
        (workspace, channel, agent),
        record,
    )


def channel_members(db: SQLiteDatabase, workspace: str, channel: str) -> list[ChannelMember]:
    with db.read() as conn:
        rows = conn.execute(
            "SELECT agent, joined_at FROM channel_members WHERE workspace = ? AND channel = ? ORDER BY agent",
            (workspace, channel),
        ).fetchall()
    return [built(ChannelMember, agent=r[0], joined_at=from_ts(r[1])) for r in rows]


def channel_member_names(db: SQLiteDatabase, workspace: str, channel: str) -> list[str]:
    with db.read() as conn:
        rows = conn.execute(
            "SELECT agent FROM channel_members WHERE workspace = ? AND channel = ? ORDER BY agent",
            (workspace, channel),
        ).fetchall()
    return [r[0] for r in rows]
