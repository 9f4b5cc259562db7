"""The audit part: the trail of who changed what. Its interface, reading the trail, and
``append``, which the other parts call inside a change's transaction so that the change and its
record commit together."""

from __future__ import annotations

from typing import Protocol

from callboard.model import AuditEntry
from callboard.store.rows import AUDIT_COLUMNS, audit_from_row, audit_values
from callboard.store.sql import Connection, Database


class AuditPart(Protocol):
    def audit_trail(self, workspace: str, limit: int) -> list[AuditEntry]:
        """The workspace's newest ``limit`` records, newest first."""
        ...


APPEND_AUDIT = f"INSERT INTO audit ({AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


def append(conn: Connection, record: AuditEntry | None, **more_detail: object) -> None:
    """Append ``record`` (nothing when None), its detail with ``more_detail`` added."""
    if record is not None:
        conn.execute(APPEND_AUDIT, audit_values(record, **more_detail))


class SQLAudit:
    def __init__(self, db: Database) -> None:
        self._db = db

    def audit_trail(self, workspace: str, limit: int) -> list[AuditEntry]:
        rows = self._db.rows(
            f"SELECT {AUDIT_COLUMNS} FROM audit WHERE workspace = ? ORDER BY at DESC, id DESC LIMIT ?",
            (workspace, limit),
        )
        return [audit_from_row(r) for r in rows]
