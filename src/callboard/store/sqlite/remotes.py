"""Claiming the outbox of mail to outside agents in the SQLite schema (the rest of the remotes
part is ``parts.remotes``'): one writer at a time, so the select and the lease in one
transaction are enough that no two pumps take a row."""

from __future__ import annotations

from datetime import datetime

from callboard.store.parts.remotes import OPEN, SQLRemotes
from callboard.store.records import RemoteSend
from callboard.store.remote_rows import OUTBOX_COLUMNS, outbox_from_row
from callboard.store.rows import to_ts
from callboard.store.sql import QUIET, Connection

_DUE = f"state IN {OPEN} AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)"


class SQLiteRemotes(SQLRemotes):
    def claim_remote_sends(self, now: datetime, lease_seconds: float, limit: int) -> list[RemoteSend]:
        at = to_ts(now)
        # Every pump asks often, and mostly finds nothing: no write lock for that.
        if not self._db.row(f"SELECT 1 FROM remote_outbox WHERE {_DUE} LIMIT 1", (at, at)):
            return []

        def claim(conn: Connection) -> list:
            rows = conn.execute(
                f"SELECT {OUTBOX_COLUMNS} FROM remote_outbox o WHERE {_DUE} "
                "ORDER BY o.next_attempt_at, o.message_id LIMIT ?",
                (at, at, limit),
            ).fetchall()
            for row in rows:
                conn.execute(
                    "UPDATE remote_outbox SET lease_until = ?, attempts = attempts + 1 "
                    "WHERE workspace = ? AND message_id = ?",
                    (at + lease_seconds, row[0], row[1]),
                )
            return rows

        return [outbox_from_row((*r[:5], r[5] + 1, *r[6:])) for r in self._db.transact(claim, QUIET)]
