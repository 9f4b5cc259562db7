"""The audit trail in the SQLite schema (appending a record, reading the trail, deleting an agent
with its record) and who is a party to a thread: functions on a connection, called by SQLiteStore."""

from __future__ import annotations

import sqlite3

from switchboard.model import AuditEntry
from switchboard.store.rows import AUDIT_COLUMNS, audit_values

_UNREAD = "SELECT count(*) FROM deliveries WHERE workspace = ? AND recipient = ? AND read_at IS NULL"


def append(conn: sqlite3.Connection, record: AuditEntry | None, **more_detail: object) -> None:
    """Append ``record`` (nothing when None), its detail with ``more_detail`` added."""
    if record is not None:
        conn.execute(
            f"INSERT INTO audit ({AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            audit_values(record, **more_detail),
        )


def trail(conn: sqlite3.Connection, workspace: str, limit: int) -> list[tuple]:
    return conn.execute(
        f"SELECT {AUDIT_COLUMNS} FROM audit WHERE workspace = ? ORDER BY at DESC, id DESC LIMIT ?", (workspace, limit)
    ).fetchall()


def delete_agent(
    conn: sqlite3.Connection, workspace: str, name: str, record: AuditEntry | None, keep_unread: bool
) -> int | None:
    """SQLiteStore.delete_agent's transaction."""
    if not conn.execute("SELECT 1 FROM agents WHERE workspace = ? AND name = ?", (workspace, name)).fetchone():
        return None
    unread = conn.execute(_UNREAD, (workspace, name)).fetchone()[0]
    if unread and keep_unread:
        return unread
    conn.execute("DELETE FROM agents WHERE workspace = ? AND name = ?", (workspace, name))
    for table, column in (
        ("deliveries", "recipient"),
        ("delivery_events", "recipient"),
        ("channel_members", "agent"),
        ("sessions", "agent"),
    ):
        conn.execute(f"DELETE FROM {table} WHERE workspace = ? AND {column} = ?", (workspace, name))
    append(conn, record, unread=unread)
    return unread


def thread_party(conn: sqlite3.Connection, workspace: str, thread_id: str, agent: str) -> bool | None:
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM messages WHERE workspace = ?1 AND thread_id = ?2), "
        "EXISTS (SELECT 1 FROM messages m WHERE m.workspace = ?1 AND m.thread_id = ?2 AND (m.sender = ?3 "
        "OR EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = m.id AND d.recipient = ?3)))",
        (workspace, thread_id, agent),
    ).fetchone()
    return bool(row[1]) if row[0] else None
