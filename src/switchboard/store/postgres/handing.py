"""PostgresStore's statements for mail handed to a session (see ``sqlite_handing``): each is
one statement, so one transaction in autocommit, that writes the deliveries, appends their
history (``delivery_events``) and notifies the mailbox."""

from __future__ import annotations

from switchboard.store.postgres.queries import MESSAGE_COLUMNS, NOTIFY

EVENTS = "delivery_events (workspace, message_id, recipient, at, event, session, via, detail)"


def surface(where: str, urgent_only: bool, hand: bool) -> str:
    """Lock the first ``limit`` deliveries ``where`` says wait to be surfaced (``waiting``:
    neither read, handed, surfaced nor held); mark them handed to ``session`` (``hand``) or
    surfaced, by ``via``; record it; return them."""
    urgent = " AND EXISTS (SELECT FROM messages m WHERE m.id = d.message_id AND m.urgent)" if urgent_only else ""
    state = "handed" if hand else "surfaced"
    changes = "handed_at = %(at)s, handed_session = %(session)s" if hand else "surfaced_at = %(at)s"
    return f"""
WITH picked AS (
    SELECT d.seq FROM deliveries d
    WHERE d.workspace = %(ws)s AND d.recipient = %(agent)s AND {where}{urgent}
    ORDER BY d.seq LIMIT %(limit)s FOR UPDATE
), marked AS (
    UPDATE deliveries d SET state = '{state}', {changes}, surfaced_via = %(via)s,
        delivered_at = coalesce(d.delivered_at, %(at)s)
    WHERE d.workspace = %(ws)s AND d.recipient = %(agent)s AND d.seq = ANY(ARRAY(SELECT seq FROM picked))
    RETURNING d.seq, d.message_id
), recorded AS (
    INSERT INTO {EVENTS}
    SELECT %(ws)s, message_id, %(agent)s, %(at)s, '{state}', %(session)s, %(via)s, NULL FROM marked
)
SELECT d.seq, '{state}', {MESSAGE_COLUMNS}, (SELECT {NOTIFY})
FROM marked d JOIN messages m ON m.id = d.message_id
ORDER BY d.seq
"""


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
