"""The mailbox part: reading and marking one agent's mailbox — claiming (read-once), peeking,
listing, acking, marking read, surfacing into a session's context, counting. Its interface, and
the reads both dialects share; each dialect takes and marks mail its own way (SQLite with one
writer and a look before the write lock, PostgreSQL with row locks in one statement), in
``MailboxWrites`` subclasses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from callboard.model import DeliveryState, MailItem
from callboard.store.rows import MAIL_QUERY, mail_item_from_row, to_ts
from callboard.store.sql import Database, marks
from callboard.store.waiting import waiting_to_surface


class MailboxPart(Protocol):
    def claim(
        self, workspace: str, agent: str, after: int | None, limit: int, now: datetime, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        """Return and mark read, in one transaction, the agent's unread deliveries in sequence
        order — or, with ``after``, every delivery past that sequence number. Deliveries pushed
        to a session in ``hidden`` (another live session's mail) are skipped, here and below."""
        ...

    def peek(
        self, workspace: str, agent: str, after: int | None, limit: int, hidden: Sequence[str] = ()
    ) -> list[MailItem]: ...
    def newest(self, workspace: str, agent: str, include_acked: bool, limit: int) -> list[MailItem]:
        """The newest ``limit`` deliveries (unacked only unless asked), oldest first."""
        ...

    def ack(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        """Mark these messages acked (and read). Returns the ids not in this mailbox; when any
        is missing nothing is written."""
        ...

    def mark_read(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        """Mark these messages read (a later state stays). Returns the ids not in this mailbox;
        when any is missing nothing is written."""
        ...

    def surface(
        self,
        workspace: str,
        agent: str,
        via: str,
        urgent_only: bool,
        limit: int,
        now: datetime,
        peek: bool = False,
        hidden: Sequence[str] = (),
        session: str | None = None,
        hand: bool = False,
    ) -> list[MailItem]:
        """Return and mark surfaced (by ``via``), in one transaction, the agent's deliveries that
        are neither handed, surfaced nor read yet, in sequence order; with ``urgent_only``,
        urgent ones. With ``hand``, mark them handed to ``session`` instead. Each is recorded in
        its history. With ``peek``, return them and mark nothing."""
        ...

    def unread_count(self, workspace: str, agent: str, hidden: Sequence[str] = ()) -> int: ...
    def last_seq(self, workspace: str, agent: str) -> int: ...


IN_MAILBOX = "d.workspace = ? AND d.recipient = ?"


def window(after: int | None, hidden: Sequence[str] = ()) -> tuple[str, list[object]]:
    """Unread deliveries, or (resuming from a cursor) every delivery past ``after``; none
    pushed to a session in ``hidden``."""
    args: list[object]
    where, args = ("d.read_at IS NULL", []) if after is None else ("d.seq > ?", [after])
    if hidden:
        where += f" AND (d.target_session IS NULL OR d.target_session NOT IN ({marks(hidden)}))"
        args += hidden
    return where, args


def waiting(urgent_only: bool, now: datetime, hidden: Sequence[str]) -> tuple[str, list[object]]:
    """Deliveries waiting to be surfaced (see ``store.waiting``), after the mailbox's two
    parameters: the condition and its arguments."""
    unread, args = window(None, hidden)
    where = f"{waiting_to_surface('?')} AND {unread}" + (" AND m.urgent" if urgent_only else "")
    return where, [to_ts(now), *args]


@dataclass(frozen=True, slots=True)
class Surfacing:
    """What a surface that marks asks of a dialect: the mail of ``agent`` waiting to be surfaced
    (urgent only, none pushed to ``hidden`` sessions), up to ``limit``, marked ``state`` by ``via``
    (handed: to ``session``)."""

    workspace: str
    agent: str
    via: str
    urgent_only: bool
    limit: int
    now: datetime
    hidden: Sequence[str]
    session: str | None
    state: DeliveryState


class SQLMailbox:
    """The mailbox's reads; a dialect's subclass adds the writes: ``claim``, ``_mark`` (ack,
    mark read) and ``_take`` (surface's marking)."""

    # The assignments that ack, or mark read, a delivery: in the dialect's placeholders.
    acking: str
    marking_read: str

    def __init__(self, db: Database) -> None:
        self._db = db

    def ack(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        return self._mark(workspace, agent, message_ids, self.acking, now)

    def mark_read(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        return self._mark(workspace, agent, message_ids, self.marking_read, now)

    def _mark(self, workspace: str, agent: str, message_ids: Sequence[str], changes: str, now: datetime) -> list[str]:
        """Apply ``changes`` to these messages' deliveries in the agent's mailbox, only if every
        one is there; the ids not there: the dialect's."""
        raise NotImplementedError

    def peek(
        self, workspace: str, agent: str, after: int | None, limit: int, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        self._db.deliveries_written()
        where, args = window(after, hidden)
        rows = self._db.rows(
            f"{MAIL_QUERY} WHERE {IN_MAILBOX} AND {where} ORDER BY d.seq LIMIT ?", (workspace, agent, *args, limit)
        )
        return [mail_item_from_row(r) for r in rows]

    def newest(self, workspace: str, agent: str, include_acked: bool, limit: int) -> list[MailItem]:
        self._db.deliveries_written()
        where = "" if include_acked else " AND d.acked_at IS NULL"
        rows = self._db.rows(
            f"{MAIL_QUERY} WHERE {IN_MAILBOX}{where} ORDER BY d.seq DESC LIMIT ?", (workspace, agent, limit)
        )
        return [mail_item_from_row(r) for r in reversed(rows)]

    def surface(
        self,
        workspace: str,
        agent: str,
        via: str,
        urgent_only: bool,
        limit: int,
        now: datetime,
        peek: bool = False,
        hidden: Sequence[str] = (),
        session: str | None = None,
        hand: bool = False,
    ) -> list[MailItem]:
        if not peek:
            state = DeliveryState.handed if hand else DeliveryState.surfaced
            return self._take(Surfacing(workspace, agent, via, urgent_only, limit, now, hidden, session, state))
        self._db.deliveries_written()
        where, args = waiting(urgent_only, now, hidden)
        rows = self._db.rows(
            f"{MAIL_QUERY} WHERE {IN_MAILBOX} AND {where} ORDER BY d.seq LIMIT ?", (workspace, agent, *args, limit)
        )
        return [mail_item_from_row(r) for r in rows]

    def _take(self, ask: Surfacing) -> list[MailItem]:
        """Surface's marking: the dialect's."""
        raise NotImplementedError

    def unread_count(self, workspace: str, agent: str, hidden: Sequence[str] = ()) -> int:
        self._db.deliveries_written()
        where, args = window(None, hidden)
        row = self._db.row(
            f"SELECT count(*) FROM deliveries d WHERE {IN_MAILBOX} AND {where}", (workspace, agent, *args)
        )
        return row[0] if row else 0

    def last_seq(self, workspace: str, agent: str) -> int:
        row = self._db.row("SELECT last_seq FROM agents WHERE workspace = ? AND name = ?", (workspace, agent))
        return row[0] if row else 0
