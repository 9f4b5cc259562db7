"""SQLiteStore's transactions for mail handed to a session: confirming it surfaced, returning
it when the session ended first, and each delivery's history (``delivery_events``).

Which evidence moves which state is the service's rule; these only write what they are told.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from switchboard.store.rows import EVENT_COLUMNS

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
    conn: sqlite3.Connection, workspace: str, agent: str, message_ids: Sequence[str], evidence: str, at: float
) -> list[str]:
    """Those of these messages handed to a session of ``agent``, now surfaced; their ids."""
    marks = ",".join("?" * len(message_ids))
    rows = conn.execute(
        f"UPDATE deliveries SET state = 'surfaced', surfaced_at = ? "
        f"WHERE workspace = ? AND recipient = ? AND state = 'handed' AND message_id IN ({marks}) "
        "RETURNING message_id, handed_session, surfaced_via",
        (at, workspace, agent, *message_ids),
    ).fetchall()
    for message_id, session, via in rows:
        record_events(conn, workspace, agent, [message_id], at, "surfaced", session, via, evidence)
    return [r[0] for r in rows]


def return_handed(
    conn: sqlite3.Connection,
    workspace: str,
    agent: str,
    session_id: str,
    state: str,
    reason: str,
    at: float,
    message_ids: Sequence[str] | None = None,
) -> list[str]:
    """Mail of ``agent`` handed to ``session_id`` (only these messages, when given) and not
    surfaced, back to ``state`` (unread, handed to nobody); the ids returned."""
    only = "" if message_ids is None else f" AND message_id IN ({','.join('?' * len(message_ids))})"
    rows = conn.execute(
        "UPDATE deliveries SET state = ?, handed_at = NULL, handed_session = NULL, surfaced_via = NULL "
        f"WHERE workspace = ? AND recipient = ? AND state = 'handed' AND handed_session = ?{only} RETURNING message_id",
        (state, workspace, agent, session_id, *(message_ids or ())),
    ).fetchall()
    ids = [r[0] for r in rows]
    record_events(conn, workspace, agent, ids, at, "returned", session_id, None, reason)
    return ids


def handed_sessions(conn: sqlite3.Connection, workspace: str, agent: str) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT handed_session FROM deliveries "
            "WHERE workspace = ? AND recipient = ? AND state = 'handed' AND handed_session IS NOT NULL",
            (workspace, agent),
        )
    ]


def history(conn: sqlite3.Connection, workspace: str, message_id: str) -> list[tuple]:
    return conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM delivery_events WHERE workspace = ? AND message_id = ? ORDER BY at, rowid",
        (workspace, message_id),
    ).fetchall()
