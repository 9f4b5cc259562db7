"""Claiming the push outbox in the SQLite schema (the rest of the tasks part is
``parts.tasks``'): one writer at a time, so the select and the lease in one transaction are
enough that no two claimers take a row."""

from __future__ import annotations

from datetime import datetime

from callboard.store.parts.tasks import SQLTasks
from callboard.store.records import PushDelivery
from callboard.store.rows import to_ts
from callboard.store.sql import QUIET, Connection, marks
from callboard.store.task_rows import PUSH_DELIVERY_COLUMNS, push_delivery_from_row


class SQLiteTasks(SQLTasks):
    def claim_push_deliveries(self, now: datetime, lease_seconds: float, limit: int) -> list[PushDelivery]:
        at = to_ts(now)

        def claim(conn: Connection) -> list:
            rows = conn.execute(
                f"SELECT {PUSH_DELIVERY_COLUMNS} FROM push_deliveries p "
                "JOIN push_configs c ON c.task_id = p.task_id AND c.id = p.config_id "
                "WHERE p.delivered_at IS NULL AND p.next_attempt_at <= ? AND (p.lease_until IS NULL OR p.lease_until <= ?) "
                "ORDER BY p.next_attempt_at, p.id LIMIT ?",
                (at, at, limit),
            ).fetchall()
            if rows:
                ids = [r[0] for r in rows]
                conn.execute(
                    f"UPDATE push_deliveries SET lease_until = ?, attempts = attempts + 1 WHERE id IN ({marks(ids)})",
                    (at + lease_seconds, *ids),
                )
            return rows

        return [push_delivery_from_row((*r[:6], r[6] + 1, *r[7:])) for r in self._db.transact(claim, QUIET)]
