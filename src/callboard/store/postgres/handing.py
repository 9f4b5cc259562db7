"""Mail handed to a session, in the PostgreSQL schema (see ``sqlite/handing``): confirming it
surfaced, returning it when the session ended first, and each delivery's history. Each is one
statement, so one transaction in autocommit, that writes the deliveries, appends their history
(``delivery_events``) and notifies the mailbox. Functions on the database, called by
``PostgresStore``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from callboard.model import DeliveryState
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.postgres.notices import NOTIFY
from callboard.store.rows import to_ts

EVENTS = "delivery_events (workspace, message_id, recipient, at, event, session, via, detail)"


CONFIRM_SURFACED = f"""
WITH marked AS (
    UPDATE deliveries d SET state = 'surfaced', surfaced_at = %(at)s
    WHERE d.workspace = %(ws)s AND d.recipient = %(agent)s AND d.state = 'handed'
        AND d.message_id = ANY(%(ids)s::text[])
    RETURNING d.message_id, d.handed_session, d.surfaced_via
), recorded AS (
    INSERT INTO {EVENTS}
    SELECT %(ws)s, message_id, %(agent)s, %(at)s, 'surfaced', handed_session, surfaced_via, %(detail)s FROM marked
)
SELECT message_id, (SELECT {NOTIFY}) FROM marked
"""

RETURN_HANDED = f"""
WITH marked AS (
    UPDATE deliveries d SET state = %(state)s, handed_at = NULL, handed_session = NULL, surfaced_via = NULL
    WHERE d.workspace = %(ws)s AND d.recipient = %(agent)s AND d.state = 'handed' AND d.handed_session = %(session)s
        AND (%(ids)s::text[] IS NULL OR d.message_id = ANY(%(ids)s::text[]))
    RETURNING d.message_id
), recorded AS (
    INSERT INTO {EVENTS}
    SELECT %(ws)s, message_id, %(agent)s, %(at)s, 'returned', %(session)s, NULL, %(detail)s FROM marked
)
SELECT message_id, (SELECT {NOTIFY}) FROM marked
"""

HANDED_SESSIONS = """
SELECT DISTINCT handed_session FROM deliveries
WHERE workspace = %(ws)s AND recipient = %(agent)s AND state = 'handed' AND handed_session IS NOT NULL
"""

RECORD_EVENT = f"""
INSERT INTO {EVENTS}
SELECT %(ws)s, %(message_id)s, %(agent)s, %(at)s, %(event)s, %(session)s, %(via)s, %(detail)s
WHERE EXISTS (
    SELECT FROM deliveries WHERE workspace = %(ws)s AND recipient = %(agent)s AND message_id = %(message_id)s
)
RETURNING message_id
"""


def confirm_surfaced(
    db: PostgresDatabase, workspace: str, agent: str, message_ids: Sequence[str], evidence: str, now: datetime
) -> list[str]:
    wanted = list(dict.fromkeys(message_ids))
    if not wanted:
        return []
    args = db.mailbox_args(workspace, agent, ids=wanted, at=to_ts(now), detail=evidence)
    rows = db.run(lambda conn: conn.execute(CONFIRM_SURFACED, args).fetchall())
    return [r[0] for r in rows]


def handed_sessions(db: PostgresDatabase, workspace: str, agent: str) -> list[str]:
    return [r[0] for r in db.all(HANDED_SESSIONS, {"ws": workspace, "agent": agent})]


def return_handed(
    db: PostgresDatabase,
    workspace: str,
    agent: str,
    session_id: str,
    state: DeliveryState,
    reason: str,
    now: datetime,
    message_ids: Sequence[str] | None,
) -> list[str]:
    ids = None if message_ids is None else list(message_ids)
    args = db.mailbox_args(
        workspace, agent, session=session_id, state=state.value, at=to_ts(now), detail=reason, ids=ids
    )
    rows = db.run(lambda conn: conn.execute(RETURN_HANDED, args).fetchall())
    return [r[0] for r in rows]


def record_delivery_event(
    db: PostgresDatabase,
    workspace: str,
    agent: str,
    message_id: str,
    event: str,
    now: datetime,
    session: str | None,
    via: str | None,
    detail: str | None,
) -> bool:
    args = {
        "ws": workspace,
        "agent": agent,
        "message_id": message_id,
        "event": event,
        "at": to_ts(now),
        "session": session,
        "via": via,
        "detail": detail,
    }
    return bool(db.run(lambda conn: conn.execute(RECORD_EVENT, args).fetchall()))
