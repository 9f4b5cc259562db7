"""The audit trail in the PostgreSQL schema: a change recorded with its record in one
transaction, and reading the trail. Called by the other modules of the PostgreSQL store."""

from __future__ import annotations

import psycopg

from callboard.model import AuditEntry
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.rows import AUDIT_COLUMNS, audit_from_row, audit_values

APPEND_AUDIT = f"INSERT INTO audit ({AUDIT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
_TRAIL = f"SELECT {AUDIT_COLUMNS} FROM audit WHERE workspace = %s ORDER BY at DESC, id DESC LIMIT %s"


def recorded(db: PostgresDatabase, statement: str, args: dict[str, object], record: AuditEntry | None) -> bool:
    """Run ``statement`` (it answers a row when it changed something, and notifies) and, when it
    changed something, append ``record``: one transaction. Whether it changed something."""

    def change(conn: psycopg.Connection) -> bool:
        if record is None:  # one statement: its own transaction, one round trip
            return bool(conn.execute(statement, args).fetchall())  # type: ignore[call-overload]
        with conn.transaction():
            changed = bool(conn.execute(statement, args).fetchall())  # type: ignore[call-overload]
            if changed:
                conn.execute(APPEND_AUDIT, audit_values(record))
            return changed

    return db.run(change)


def audit_trail(db: PostgresDatabase, workspace: str, limit: int) -> list[AuditEntry]:
    return [audit_from_row(r) for r in db.all(_TRAIL, (workspace, limit))]
