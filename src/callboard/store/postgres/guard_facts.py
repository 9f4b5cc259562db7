"""The facts the loop and flood guards decide on (``guards.py``), from the PostgreSQL
schema: a pair's recent traffic, and the mail a guard holds. Functions on the database, called
by ``PostgresStore``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from callboard.guards import Exchange
from callboard.model import HeldMail
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.rows import HELD_COLUMNS, exchange_from_row, held_mail_from_row, to_ts
from callboard.store.waiting import held

# The newest messages one way; the columns are what exchange_from_row reads, and the message's
# id to order messages of the same instant.
_ONE_WAY = (
    "(SELECT m.sender, m.created_at, d.held_until, d.held_reason, m.id "
    "FROM messages m JOIN deliveries d ON d.message_id = m.id AND d.recipient = {to} "
    "WHERE m.workspace = %(ws)s AND m.sender = {sender} AND m.created_at >= %(since)s "
    "ORDER BY m.created_at DESC LIMIT %(limit)s)"
)


def pair_traffic(db: PostgresDatabase, workspace: str, a: str, b: str, since: datetime, limit: int) -> list[Exchange]:
    rows = db.all(
        f"{_ONE_WAY.format(sender='%(a)s', to='%(b)s')} UNION ALL {_ONE_WAY.format(sender='%(b)s', to='%(a)s')} "
        "ORDER BY 2 DESC, 5 DESC",
        {"ws": workspace, "a": a, "b": b, "since": to_ts(since), "limit": limit},
    )
    return [exchange_from_row(r) for r in rows]


def held_mail(db: PostgresDatabase, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
    if agents is not None and not agents:
        return []
    mailboxes = "" if agents is None else " AND d.recipient = ANY(%(agents)s::text[])"
    rows = db.all(
        f"SELECT {HELD_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.message_id "
        f"WHERE d.workspace = %(ws)s{mailboxes} AND {held('%(now)s')} ORDER BY d.held_until, d.seq",
        {"ws": workspace, "agents": list(agents or ()), "now": to_ts(now)},
    )
    return [held_mail_from_row(r) for r in rows]
