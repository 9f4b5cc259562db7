"""The guard-facts part: what the loop and flood guards decide on (``guards.py``) — a pair's
recent traffic, and the mail a guard holds. Its interface, and its SQL for both dialects."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from callboard.guards import Exchange
from callboard.model import HeldMail
from callboard.store.rows import HELD_COLUMNS, exchange_from_row, held_mail_from_row, to_ts
from callboard.store.sql import Database, marks
from callboard.store.waiting import held


class GuardFactsPart(Protocol):
    def pair_traffic(self, workspace: str, a: str, b: str, since: datetime, limit: int) -> list[Exchange]:
        """The newest ``limit`` messages from ``a`` to ``b`` sent since ``since``, and as many
        from ``b`` to ``a``: one list, newest first, each with what a guard decided for it."""
        ...

    def held_mail(self, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
        """The mail of these mailboxes (None: all of the workspace's) a guard holds at ``now``
        (neither surfaced nor read), in the order it is let through."""
        ...


# The newest messages one way (to ?, from ?); the columns are what exchange_from_row reads, and
# the message's id to order messages of the same instant.
_ONE_WAY = (
    "SELECT * FROM (SELECT m.sender, m.created_at, d.held_until, d.held_reason, m.id "
    "FROM messages m JOIN deliveries d ON d.message_id = m.id AND d.recipient = ? "
    "WHERE m.workspace = ? AND m.sender = ? AND m.created_at >= ? ORDER BY m.created_at DESC LIMIT ?) AS one_way"
)
_PAIR_TRAFFIC = f"{_ONE_WAY} UNION ALL {_ONE_WAY} ORDER BY 2 DESC, 5 DESC"


class SQLGuardFacts:
    def __init__(self, db: Database) -> None:
        self._db = db

    def pair_traffic(self, workspace: str, a: str, b: str, since: datetime, limit: int) -> list[Exchange]:
        self._db.deliveries_written()
        at = to_ts(since)
        rows = self._db.rows(_PAIR_TRAFFIC, (b, workspace, a, at, limit, a, workspace, b, at, limit))
        return [exchange_from_row(r) for r in rows]

    def held_mail(self, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
        if agents is not None and not agents:
            return []
        self._db.deliveries_written()
        mailboxes = "" if agents is None else f" AND d.recipient IN ({marks(agents)})"
        rows = self._db.rows(
            f"SELECT {HELD_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.message_id "
            f"WHERE d.workspace = ?{mailboxes} AND {held('?')} ORDER BY d.held_until, d.seq",
            (workspace, *(agents or ()), to_ts(now)),
        )
        return [held_mail_from_row(r) for r in rows]
