"""Mail handed to a session, in the SQLite schema: confirming it surfaced, returning it when the
session ended first, and each delivery's history (``delivery_events``). Functions on the
database, called by ``SQLiteStore`` (and ``record_events`` inside other writes' transactions).

Which evidence moves which state is the service's rule; these only write what they are told.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from callboard.model import DeliveryState
from callboard.store.rows import EVENT_COLUMNS, to_ts
from callboard.store.sqlite.connection import SQLiteDatabase

INSERT_EVENT = (
    "INSERT INTO delivery_events (workspace, message_id, recipient, at, event, session, via, detail) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def record_events(
    conn: sqlite3.Connection,
    workspace: str,
    recipient: str,
    message_ids: Sequence[str],
    at: float,
    event: str,
    session: str | None = None,
    via: str | None = None,
    detail: str | None = None,
) -> None:
    conn.executemany(INSERT_EVENT, [(workspace, m, recipient, at, event, session, via, detail) for m in message_ids])


def confirm_surfaced(
    db: SQLiteDatabase, workspace: str, agent: str, message_ids: Sequence[str], evidence: str, now: datetime
) -> list[str]:
    """Those of these messages handed to a session of ``agent``, now surfaced; their ids."""
    wanted = list(dict.fromkeys(message_ids))
    if not wanted:
        return []
    marks = ",".join("?" * len(wanted))
    with db.read() as conn:  # most looks (a transcript line naming surfaced mail) find nothing
        if not conn.execute(
            "SELECT 1 FROM deliveries WHERE workspace = ? AND recipient = ? AND state = 'handed' "
            f"AND message_id IN ({marks}) LIMIT 1",
            (workspace, agent, *wanted),
        ).fetchone():
            return []
    at = to_ts(now)

    def confirm(conn: sqlite3.Connection) -> list[str]:
        rows = conn.execute(
            f"UPDATE deliveries SET state = 'surfaced', surfaced_at = ? "
            f"WHERE workspace = ? AND recipient = ? AND state = 'handed' AND message_id IN ({marks}) "
            "RETURNING message_id, handed_session, surfaced_via",
            (at, workspace, agent, *wanted),
        ).fetchall()
        for message_id, session, via in rows:
            record_events(conn, workspace, agent, [message_id], at, "surfaced", session, via, evidence)
        return [r[0] for r in rows]

    return db.transact(confirm)


def return_handed(
    db: SQLiteDatabase,
    workspace: str,
    agent: str,
    session_id: str,
    state: DeliveryState,
    reason: str,
    now: datetime,
    message_ids: Sequence[str] | None,
) -> list[str]:
    """Mail of ``agent`` handed to ``session_id`` (only these messages, when given) and not
    surfaced, back to ``state`` (unread, handed to nobody); the ids returned."""
    only = "" if message_ids is None else f" AND message_id IN ({','.join('?' * len(message_ids))})"

    def give_back(conn: sqlite3.Connection) -> list[str]:
        rows = conn.execute(
            "UPDATE deliveries SET state = ?, handed_at = NULL, handed_session = NULL, surfaced_via = NULL "
            "WHERE workspace = ? AND recipient = ? AND state = 'handed' AND handed_session = ?"
            f"{only} RETURNING message_id",
            (state.value, workspace, agent, session_id, *(message_ids or ())),
        ).fetchall()
        ids = [r[0] for r in rows]
        record_events(conn, workspace, agent, ids, to_ts(now), "returned", session_id, None, reason)
        return ids

    return db.transact(give_back)


def handed_sessions(db: SQLiteDatabase, workspace: str, agent: str) -> list[str]:
    with db.read() as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT handed_session FROM deliveries "
                "WHERE workspace = ? AND recipient = ? AND state = 'handed' AND handed_session IS NOT NULL",
                (workspace, agent),
            )
        ]


def record_delivery_event(
    db: SQLiteDatabase,
    workspace: str,
    agent: str,
    message_id: str,
    event: str,
    now: datetime,
    session: str | None,
    via: str | None,
    detail: str | None,
) -> bool:
    def record(conn: sqlite3.Connection) -> bool:
        if not conn.execute(
            "SELECT 1 FROM deliveries WHERE workspace = ? AND recipient = ? AND message_id = ?",
            (workspace, agent, message_id),
        ).fetchone():
            return False
        record_events(conn, workspace, agent, [message_id], to_ts(now), event, session, via, detail)
        return True

    return db.transact(record)


def history(conn: sqlite3.Connection, workspace: str, message_id: str) -> list[tuple]:
    return conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM delivery_events WHERE workspace = ? AND message_id = ? ORDER BY at, rowid",
        (workspace, message_id),
    ).fetchall()
