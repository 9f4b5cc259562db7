"""The handing part: mail handed to a session — confirming it surfaced, returning it when the
session ended first — and each delivery's history (``delivery_events``). Its interface, and its
SQL for both dialects (``record_events`` also runs inside other writes' transactions).

Which evidence moves which state is the service's rule; these only write what they are told.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from callboard.model import DeliveryState
from callboard.store.rows import to_ts
from callboard.store.sql import QUIET, Connection, Database, Notice, marks


class HandingPart(Protocol):
    def confirm_surfaced(
        self, workspace: str, agent: str, message_ids: Sequence[str], evidence: str, now: datetime
    ) -> list[str]:
        """Mark surfaced those of these messages that are handed (to any session of ``agent``),
        recording ``evidence``; their ids."""
        ...

    def handed_sessions(self, workspace: str, agent: str) -> list[str]:
        """The sessions holding mail of ``agent`` handed to them and not surfaced yet."""
        ...

    def return_handed(
        self,
        workspace: str,
        agent: str,
        session_id: str,
        state: DeliveryState,
        reason: str,
        now: datetime,
        message_ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Put the mail handed to ``session_id`` (only these messages, when given) and not
        surfaced back in the mailbox, unread, in ``state`` (delivered or queued), recording
        ``reason``; the ids returned."""
        ...

    def record_delivery_event(
        self,
        workspace: str,
        agent: str,
        message_id: str,
        event: str,
        now: datetime,
        session: str | None = None,
        via: str | None = None,
        detail: str | None = None,
    ) -> bool:
        """Append an event to the history of the message's delivery to ``agent``; False when
        there is no such delivery (nothing is written)."""
        ...


EVENTS = "delivery_events (workspace, message_id, recipient, at, event, session, via, detail)"
_EVENTS_PER_STATEMENT = 500


def record_events(
    conn: Connection,
    workspace: str,
    recipient: str,
    message_ids: Sequence[str],
    at: float,
    event: str,
    session: str | None = None,
    via: str | None = None,
    detail: str | None = None,
) -> None:
    """Append one event to the history of each of these messages' deliveries to ``recipient``."""
    for start in range(0, len(message_ids), _EVENTS_PER_STATEMENT):
        chunk = message_ids[start : start + _EVENTS_PER_STATEMENT]
        values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk))
        args = [v for m in chunk for v in (workspace, m, recipient, at, event, session, via, detail)]
        conn.execute(f"INSERT INTO {EVENTS} VALUES {values}", args)


class SQLHanding:
    def __init__(self, db: Database) -> None:
        self._db = db

    def confirm_surfaced(
        self, workspace: str, agent: str, message_ids: Sequence[str], evidence: str, now: datetime
    ) -> list[str]:
        wanted = list(dict.fromkeys(message_ids))
        if not wanted:
            return []
        handed = f"workspace = ? AND recipient = ? AND state = 'handed' AND message_id IN ({marks(wanted)})"
        # Most looks (a transcript line naming surfaced mail) find nothing: no write for those.
        if not self._db.row(f"SELECT 1 FROM deliveries WHERE {handed} LIMIT 1", (workspace, agent, *wanted)):
            return []
        at = to_ts(now)

        def confirm(conn: Connection) -> list[str]:
            rows = conn.execute(
                f"UPDATE deliveries SET state = 'surfaced', surfaced_at = ? WHERE {handed} "
                "RETURNING message_id, handed_session, surfaced_via",
                (at, workspace, agent, *wanted),
            ).fetchall()
            for message_id, session, via in rows:
                record_events(conn, workspace, agent, [message_id], at, "surfaced", session, via, evidence)
            return [r[0] for r in rows]

        return self._db.transact(confirm, Notice(workspace, [agent]))

    def handed_sessions(self, workspace: str, agent: str) -> list[str]:
        rows = self._db.rows(
            "SELECT DISTINCT handed_session FROM deliveries "
            "WHERE workspace = ? AND recipient = ? AND state = 'handed' AND handed_session IS NOT NULL",
            (workspace, agent),
        )
        return [r[0] for r in rows]

    def return_handed(
        self,
        workspace: str,
        agent: str,
        session_id: str,
        state: DeliveryState,
        reason: str,
        now: datetime,
        message_ids: Sequence[str] | None = None,
    ) -> list[str]:
        if message_ids is not None and not message_ids:
            return []
        only = "" if message_ids is None else f" AND message_id IN ({marks(message_ids)})"

        def give_back(conn: Connection) -> list[str]:
            rows = conn.execute(
                "UPDATE deliveries SET state = ?, handed_at = NULL, handed_session = NULL, surfaced_via = NULL "
                f"WHERE workspace = ? AND recipient = ? AND state = 'handed' AND handed_session = ?{only} "
                "RETURNING message_id",
                (state.value, workspace, agent, session_id, *(message_ids or ())),
            ).fetchall()
            ids = [r[0] for r in rows]
            record_events(conn, workspace, agent, ids, to_ts(now), "returned", session_id, None, reason)
            return ids

        return self._db.transact(give_back, Notice(workspace, [agent]))

    def record_delivery_event(
        self,
        workspace: str,
        agent: str,
        message_id: str,
        event: str,
        now: datetime,
        session: str | None = None,
        via: str | None = None,
        detail: str | None = None,
    ) -> bool:
        rows = self._db.change(
            f"INSERT INTO {EVENTS} SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS "
            "(SELECT 1 FROM deliveries WHERE workspace = ? AND recipient = ? AND message_id = ?) RETURNING 1",
            (workspace, message_id, agent, to_ts(now), event, session, via, detail, workspace, agent, message_id),
            QUIET,
        )
        return bool(rows)
