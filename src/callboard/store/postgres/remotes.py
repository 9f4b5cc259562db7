"""Claiming the outbox of mail to outside agents in the PostgreSQL schema (the rest of the
remotes part is ``parts.remotes``'): with SKIP LOCKED and a lease, in one statement, so two
replicas never send the same one and neither waits for the other."""

from __future__ import annotations

from datetime import datetime

from callboard.store.parts.remotes import OPEN, SQLRemotes
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.postgres.sql import PostgresSQL
from callboard.store.records import RemoteSend
from callboard.store.remote_rows import OUTBOX_COLUMNS, outbox_from_row
from callboard.store.rows import to_ts

_CLAIM = f"""
WITH due AS (
    SELECT workspace, message_id FROM remote_outbox
    WHERE state IN {OPEN} AND next_attempt_at <= %(at)s AND (lease_until IS NULL OR lease_until <= %(at)s)
    ORDER BY next_attempt_at, message_id LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
UPDATE remote_outbox o SET lease_until = %(until)s, attempts = o.attempts + 1
FROM due WHERE o.workspace = due.workspace AND o.message_id = due.message_id
RETURNING {OUTBOX_COLUMNS}
"""


class PostgresRemotes(SQLRemotes):
    def __init__(self, db: PostgresSQL) -> None:
        super().__init__(db)
        self._pg: PostgresDatabase = db.db

    def claim_remote_sends(self, now: datetime, lease_seconds: float, limit: int) -> list[RemoteSend]:
        at = to_ts(now)
        args = {"at": at, "until": at + lease_seconds, "limit": limit}
        rows = self._pg.run(lambda conn: conn.execute(_CLAIM, args).fetchall())
        return sorted((outbox_from_row(r) for r in rows), key=lambda r: (r.next_attempt_at, r.message_id))
