"""The leases part: agents' advisory claims on repository paths (``leases.py`` holds the rules).
A lease is active while it is not released, not expired, and its session (when it was taken in
one) has not ended. Its interface, and its SQL for both dialects."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from callboard.leases import Lease
from callboard.model import AuditEntry
from callboard.store.parts.audit import append
from callboard.store.rows import from_ts, to_ts
from callboard.store.sql import Connection, Database, marks

LEASE_COLUMNS = "l.id, l.workspace, l.agent, l.session_id, l.scope, l.patterns, l.shared, l.reason, l.created_at, l.expires_at, l.released_at"
_ACTIVE = (
    "l.released_at IS NULL AND l.expires_at > ? AND (l.session_id IS NULL OR NOT EXISTS "
    "(SELECT 1 FROM sessions s WHERE s.id = l.session_id AND s.ended_at IS NOT NULL))"
)


class LeasesPart(Protocol):
    def add_lease(self, lease: Lease) -> None: ...

    def active_leases(self, workspace: str, now: datetime, scope: str | None = None) -> list[Lease]:
        """The workspace's active leases (of one repository), oldest first."""
        ...

    def renew_leases(
        self, workspace: str, agent: str, ids: Sequence[str], expires_at: datetime, now: datetime
    ) -> list[Lease]:
        """Give ``agent``'s active leases among ``ids`` a new expiry; those renewed."""
        ...

    def release_leases(
        self, workspace: str, ids: Sequence[str], at: datetime, record: AuditEntry | None = None
    ) -> list[str]:
        """Release these leases (with ``record`` in the audit trail, in the same transaction); the ids released."""
        ...


class SQLLeases:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add_lease(self, lease: Lease) -> None:
        self._db.change(
            "INSERT INTO leases (id, workspace, agent, session_id, scope, patterns, shared, reason, created_at, "
            "expires_at, released_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL) RETURNING 1",
            (
                lease.id,
                lease.workspace,
                lease.agent,
                lease.session_id,
                lease.scope,
                json.dumps(lease.patterns),
                int(lease.shared),
                lease.reason,
                to_ts(lease.created_at),
                to_ts(lease.expires_at),
            ),
        )

    def active_leases(self, workspace: str, now: datetime, scope: str | None = None) -> list[Lease]:
        query = f"SELECT {LEASE_COLUMNS} FROM leases l WHERE l.workspace = ? AND {_ACTIVE}"
        args: list[Any] = [workspace, to_ts(now)]
        if scope is not None:
            query, args = query + " AND l.scope = ?", [*args, scope]
        return [_lease(row) for row in self._db.rows(query + " ORDER BY l.created_at, l.id", args)]

    def renew_leases(
        self, workspace: str, agent: str, ids: Sequence[str], expires_at: datetime, now: datetime
    ) -> list[Lease]:
        if not ids:
            return []

        def write(conn: Connection) -> list[Lease]:
            conn.execute(
                f"UPDATE leases SET expires_at = ? WHERE workspace = ? AND agent = ? AND id IN ({marks(ids)}) "
                f"AND id IN (SELECT l.id FROM leases l WHERE l.workspace = ? AND {_ACTIVE})",
                (to_ts(expires_at), workspace, agent, *ids, workspace, to_ts(now)),
            )
            rows = conn.execute(
                f"SELECT {LEASE_COLUMNS} FROM leases l WHERE l.workspace = ? AND l.id IN ({marks(ids)}) AND {_ACTIVE}",
                (workspace, *ids, to_ts(now)),
            ).fetchall()
            return [_lease(row) for row in rows if row[2] == agent]

        return self._db.transact(write)

    def release_leases(
        self, workspace: str, ids: Sequence[str], at: datetime, record: AuditEntry | None = None
    ) -> list[str]:
        if not ids:
            return []

        def write(conn: Connection) -> list[str]:
            rows = conn.execute(
                f"UPDATE leases SET released_at = ? WHERE workspace = ? AND id IN ({marks(ids)}) "
                "AND released_at IS NULL RETURNING id",
                (to_ts(at), workspace, *ids),
            ).fetchall()
            if rows:
                append(conn, record)
            return [row[0] for row in rows]

        return self._db.transact(write)


def _lease(row: Sequence[Any]) -> Lease:
    return Lease(
        id=row[0],
        workspace=row[1],
        agent=row[2],
        session_id=row[3],
        scope=row[4],
        patterns=json.loads(row[5]),
        shared=bool(row[6]),
        reason=row[7],
        created_at=from_ts(row[8]),
        expires_at=from_ts(row[9]),
        released_at=from_ts(row[10]) if row[10] is not None else None,
    )
