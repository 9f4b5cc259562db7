"""The facts the loop and flood guards decide on (``guards.py``), from the SQLite schema:
a pair's recent traffic, and the mail a guard holds. Functions on the database, called by
``SQLiteStore``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from callboard.guards import Exchange
from callboard.model import HeldMail
from callboard.store.rows import HELD_COLUMNS, exchange_from_row, held_mail_from_row, to_ts
from callboard.store.sqlite.connection import SQLiteDatabase
from callboard.store.sqlite.messages import deliveries_written
from callboard.store.waiting import held

# The newest messages one way (from ? to ?); the columns are what exchange_from_row reads, and
# the message's id to order messages of the same instant.
_ONE_WAY = (
    "SELECT * FROM (SELECT m.sender, m.created_at, d.held_until, d.held_reason, m.id "
    "FROM messages m JOIN deliveries d ON d.message_id = m.id AND d.recipient = ? "
    "WHERE m.workspace = ? AND m.sender = ? AND m.created_at >= ? ORDER BY m.created_at DESC LIMIT ?)"
)


def pair_traffic(db: SQLiteDatabase, workspace: str, a: str, b: str, since: datetime, limit: int) -> list[Exchange]:
    deliveries_written(db)
    at = to_ts(since)
    with db.read() as conn:
        rows = conn.execute(
            f"{_ONE_WAY} UNION ALL {_ONE_WAY} ORDER BY 2 DESC, 5 DESC",
            (b, workspace, a, at, limit, a, workspace, b, at, limit),
        ).fetchall()
    return [exchange_from_row(r) for r in rows]


def held_mail(db: SQLiteDatabase, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
    if agents is not None and not agents:
        return []
    deliveries_written(db)
    mailboxes = "" if agents is None else f" AND d.recipient IN ({','.join('?' * len(agents))})"
    with db.read() as conn:
        rows = conn.execute(
            f"SELECT {HELD_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.message_id "
            f"WHERE d.workspace = ?{mailboxes} AND {held('?')} ORDER BY d.held_until, d.seq",
            (workspace, *(agents or ()), to_ts(now)),
        ).fetchall()
    return [held_mail_from_row(r) for r in rows]
