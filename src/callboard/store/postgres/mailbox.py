"""Taking and marking mail in the PostgreSQL schema (the mailbox part's writes; its reads are
``parts.mailbox``'s): claiming (read-once), acking, marking read, surfacing into a session's
context.

The writes are single statements: CTEs lock the rows in a fixed order, check that everything
asked for is there, write only then, and send the change notification — so that in autocommit
each is its own transaction, with no BEGIN or COMMIT round trips. Parameters are named
(``%(ws)s``); every statement that notifies takes ``channel`` and ``payload``
(``PostgresDatabase.mailbox_args``).

Under READ COMMITTED a row locked by ``FOR UPDATE`` is the newest committed version (PostgreSQL
re-reads it after waiting for the lock), and the UPDATE of the same statement updates that
version: the locks are what serialise writers of one mailbox, not the snapshot. The UPDATEs
find the locked rows by key, ``= ANY(ARRAY(SELECT …))``, not by a join: that is an index
condition whatever the planner's estimates (a young table has none, and a join then scanned the
whole mailbox for each row).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from callboard.model import DeliveryState, MailItem
from callboard.store.parts.handing import EVENTS
from callboard.store.parts.mailbox import SQLMailbox, Surfacing
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.postgres.notices import NOTIFY
from callboard.store.postgres.sql import PostgresSQL
from callboard.store.rows import MESSAGE_COLUMNS, mail_item_from_row, to_ts
from callboard.store.waiting import waiting_to_surface

ACK = (
    "state = 'acked', acked_at = coalesce(d.acked_at, %(at)s), read_at = coalesce(d.read_at, %(at)s), "
    "delivered_at = coalesce(d.delivered_at, %(at)s)"
)
MARK_READ = (
    "state = CASE d.state WHEN 'acked' THEN 'acked' ELSE 'read' END, read_at = coalesce(d.read_at, %(at)s), "
    "delivered_at = coalesce(d.delivered_at, %(at)s)"
)


def window(after: int | None, hidden: Sequence[str]) -> tuple[str, dict[str, object]]:
    """Unread deliveries, or (resuming from a cursor) every delivery past ``after``; none
    pushed to a session in ``hidden``."""
    args: dict[str, object]
    where, args = ("d.read_at IS NULL", {}) if after is None else ("d.seq > %(after)s", {"after": after})
    if hidden:
        where += " AND (d.target_session IS NULL OR d.target_session <> ALL(%(hidden)s::text[]))"
        args["hidden"] = list(hidden)
    return where, args


def claim_statement(where: str) -> str:
    """Lock the window's first ``limit`` deliveries in order, mark the unread ones read, and
    return them all with their new state.

    A delivery locked by a concurrent claimer is waited for, then skipped if that one took it
    (the lock's re-read no longer matches ``where``), and the LIMIT takes the next ones: two
    claimers never take one delivery. Not SKIP LOCKED: a delivery locked for a moment by a
    surface or an ack would then be passed over, and read later, out of sequence order."""
    return f"""
WITH picked AS (
    SELECT d.seq, d.state, d.message_id FROM deliveries d
    WHERE d.workspace = %(ws)s AND d.recipient = %(agent)s AND {where}
    ORDER BY d.seq LIMIT %(limit)s FOR UPDATE
), marked AS (
    UPDATE deliveries d SET state = 'read', read_at = %(at)s, delivered_at = coalesce(d.delivered_at, %(at)s)
    WHERE d.workspace = %(ws)s AND d.recipient = %(agent)s
        AND d.seq = ANY(ARRAY(SELECT seq FROM picked WHERE state IN ('queued', 'delivered', 'handed', 'surfaced')))
    RETURNING d.seq
)
SELECT p.seq, CASE WHEN k.seq IS NULL THEN p.state ELSE 'read' END, {MESSAGE_COLUMNS},
    (SELECT {NOTIFY} WHERE EXISTS (SELECT FROM marked))
FROM picked p JOIN messages m ON m.id = p.message_id LEFT JOIN marked k ON k.seq = p.seq
ORDER BY p.seq
"""


def mark_statement(changes: str) -> str:
    """Lock these messages' deliveries in the agent's mailbox (in sequence order) and, only if
    every one is there, apply ``changes``; the answer says whether all were, and which."""
    return f"""
WITH found AS MATERIALIZED (
    SELECT seq, message_id FROM deliveries
    WHERE workspace = %(ws)s AND recipient = %(agent)s AND message_id = ANY(%(ids)s::text[])
    ORDER BY seq FOR UPDATE
), complete AS MATERIALIZED (
    SELECT count(*) = %(count)s AS ok FROM found
), marked AS (
    UPDATE deliveries d SET {changes}
    WHERE d.workspace = %(ws)s AND d.recipient = %(agent)s AND d.seq = ANY(ARRAY(SELECT seq FROM found))
        AND (SELECT ok FROM complete)
)
SELECT c.ok, (SELECT array_agg(message_id) FROM found), (SELECT {NOTIFY} WHERE c.ok)
FROM complete c
"""


def surface_statement(where: str, urgent_only: bool, hand: bool) -> str:
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


class PostgresMailbox(SQLMailbox):
    acking, marking_read = ACK, MARK_READ

    def __init__(self, db: PostgresSQL) -> None:
        super().__init__(db)
        self._pg: PostgresDatabase = db.db

    def claim(
        self, workspace: str, agent: str, after: int | None, limit: int, now: datetime, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        where, args = window(after, hidden)
        args = self._pg.mailbox_args(workspace, agent, limit=limit, at=to_ts(now), **args)
        rows = self._pg.run(lambda conn: conn.execute(claim_statement(where), args).fetchall())
        return [mail_item_from_row(r) for r in rows]

    def _mark(self, workspace: str, agent: str, message_ids: Sequence[str], changes: str, now: datetime) -> list[str]:
        """Apply ``changes`` (ACK or MARK_READ) to these messages' deliveries in the agent's
        mailbox; the ids not there (then nothing is written)."""
        wanted = list(dict.fromkeys(message_ids))
        if not wanted:
            return []
        args = self._pg.mailbox_args(workspace, agent, ids=wanted, count=len(wanted), at=to_ts(now))
        row = self._pg.run(lambda conn: conn.execute(mark_statement(changes), args).fetchone())
        assert row is not None  # the statement's one row, always
        ok, found, _ = row
        if ok:
            return []
        present = set(found or ())
        return [m for m in wanted if m not in present]

    def _take(self, ask: Surfacing) -> list[MailItem]:
        unread, args = window(None, ask.hidden)
        where = f"{waiting_to_surface('%(now)s')} AND {unread}"
        at = to_ts(ask.now)
        args = self._pg.mailbox_args(
            ask.workspace, ask.agent, via=ask.via, limit=ask.limit, at=at, now=at, session=ask.session, **args
        )
        statement = surface_statement(where, ask.urgent_only, ask.state is DeliveryState.handed)
        rows = self._pg.run(lambda conn: conn.execute(statement, args).fetchall())
        return [mail_item_from_row(r, ask.state) for r in rows]
