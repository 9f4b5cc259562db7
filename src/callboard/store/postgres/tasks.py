"""Claiming the push outbox in the PostgreSQL schema (the rest of the tasks part is
``parts.tasks``'): with SKIP LOCKED and a lease, in one statement, so two replicas never post the
same one and neither waits for the other."""

from __future__ import annotations

from datetime import datetime

from callboard.store.parts.tasks import SQLTasks
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.postgres.sql import PostgresSQL
from callboard.store.records import PushDelivery
from callboard.store.rows import to_ts
from callboard.store.task_rows import PUSH_DELIVERY_COLUMNS, push_delivery_from_row

_CLAIM = f"""
WITH due AS (
    SELECT id FROM push_deliveries
    WHERE delivered_at IS NULL AND next_attempt_at <= %(at)s AND (lease_until IS NULL OR lease_until <= %(at)s)
    ORDER BY next_attempt_at, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED
), leased AS (
    UPDATE push_deliveries p SET lease_until = %(until)s, attempts = p.attempts + 1
    WHERE p.id = ANY(ARRAY(SELECT id FROM due))
    RETURNING p.*
)
SELECT {PUSH_DELIVERY_COLUMNS} FROM leased p JOIN push_configs c ON c.task_id = p.task_id AND c.id = p.config_id
ORDER BY p.next_attempt_at, p.id
"""


class PostgresTasks(SQLTasks):
    def __init__(self, db: PostgresSQL) -> None:
        super().__init__(db)
        self._pg: PostgresDatabase = db.db

    def claim_push_deliveries(self, now: datetime, lease_seconds: float, limit: int) -> list[PushDelivery]:
        at = to_ts(now)
        args = {"at": at, "until": at + lease_seconds, "limit": limit}
        rows = self._pg.run(lambda conn: conn.execute(_CLAIM, args).fetchall())
        return [push_delivery_from_row(r) for r in rows]
