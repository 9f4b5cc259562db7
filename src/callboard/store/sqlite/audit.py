"""The audit trail in the SQLite schema: appending a record inside a write's transaction, and
reading the trail. Called by the other modules of the SQLite store."""

from __future__ import annotations

import sqlite3

from callboard.model import AuditEntry
from callboard.store.rows import AUDIT_COLUMNS, audit_from_row, audit_values
from callboard.store.sqlite.connection import SQLiteDatabase


def append(conn: sqlite3.Connection, record: AuditEntry | None, **more_detail: object) -> None:
    """Append ``record`` (nothing when None), its detail with ``more_detail`` added."""
    if record is not None:
        conn.execute(
            f"INSERT INTO audit ({AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            audit_values(record, **more_detail),
        )


def audit_trail(db: SQLiteDatabase, workspace: str, limit: int) -> list[AuditEntry]:
    with db.read() as conn:
        rows = conn.execute(
            f"SELECT {AUDIT_COLUMNS} FROM audit WHERE workspace = ? ORDER BY at DESC, id DESC LIMIT ?",
            (workspace, limit),
        ).fetchall()
    return [audit_from_row(r) for r in rows]
