"""The statements of ``PostgresStore`` that do a transaction's work in one round trip.

The mailbox writes are single statements: CTEs lock the rows in a fixed order, check that
everything asked for is there, write only then, and send the change notification — so that
in autocommit each is its own transaction, with no BEGIN or COMMIT round trips (only
``delete_agent``, ``register_session`` and a change recorded in the audit trail need several
statements, and a transaction: ``postgres_audit``). Parameters are
named (``%(ws)s``); every statement that notifies takes ``channel`` and ``payload``.

Under READ COMMITTED a row locked by ``FOR UPDATE`` is the newest committed version (PostgreSQL
re-reads it after waiting for the lock), and the UPDATE of the same statement updates that
version: the locks are what serialise writers of one mailbox, not the snapshot. The UPDATEs
find the locked rows by key, ``= ANY(ARRAY(SELECT …))``, not by a join: that is an index
condition whatever the planner's estimates (a young table has none, and a join then scanned the
whole mailbox for each row).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from switchboard.store.rows import AUDIT_COLUMNS, MESSAGE_COLUMNS, SESSION_COLUMNS

# A NOTIFY payload must stay under 8,000 bytes: past this, name the workspace, not its mailboxes.
MAX_PAYLOAD_BYTES = 7000


def payload(
    replica: str, workspace: str | None = None, agents: Sequence[str] | None = None, message_id: str | None = None
) -> str:
    """The compact JSON of a change notification: which replica wrote, and where.

    ``{"r": replica}``: something changed; with ``"w"``: a mailbox of that workspace changed;
    with ``"a"`` as well: exactly these mailboxes (of the workspace) changed; with ``"m"``: by
    a delivery of that new message to each (a replica can read it once for all its streams)."""
    body: dict[str, object] = {"r": replica}
    if workspace is not None:
        body["w"] = workspace
        if agents is not None:
            body["a"] = list(agents)
            if message_id is not None:
                body["m"] = message_id
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode()) > MAX_PAYLOAD_BYTES:
        text = json.dumps({"r": replica, "w": workspace}, separators=(",", ":"), ensure_ascii=False)
    return text


NOTIFY = "pg_notify(%(channel)s, %(payload)s)::text"  # ::text: a void column would need a loader


def notifying(dml: str) -> str:
    """``dml`` (with RETURNING) as a statement that also notifies, once per changed row: PostgreSQL
    sends identical notifications of one transaction once. No row changed, nothing sent."""
    return f"WITH w AS ({dml}) SELECT w.*, {NOTIFY} FROM w"


# --- reading and marking a mailbox -----------------------------------------------------------

MAIL_COLUMNS = f"d.seq, d.state, {MESSAGE_COLUMNS}"


def window(after: int | None, hidden: Sequence[str]) -> tuple[str, dict[str, object]]:
    """Unread deliveries, or (resuming from a cursor) every delivery past ``after``; none
    pushed to a session in ``hidden``."""
    where, args = ("d.read_at IS NULL", {}) if after is None else ("d.seq > %(after)s", {"after": after})
    if hidden:
        where += " AND (d.target_session IS NULL OR d.target_session <> ALL(%(hidden)s::text[]))"
        args["hidden"] = list(hidden)
    return where, args


MAILBOX = (
    "FROM deliveries d JOIN messages m ON m.id = d.message_id WHERE d.workspace = %(ws)s AND d.recipient = %(agent)s"
)


def claim(where: str) -> str:
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


ACK = (
    "state = 'acked', acked_at = coalesce(d.acked_at, %(at)s), read_at = coalesce(d.read_at, %(at)s), "
    "delivered_at = coalesce(d.delivered_at, %(at)s)"
)
MARK_READ = (
    "state = CASE d.state WHEN 'acked' THEN 'acked' ELSE 'read' END, read_at = coalesce(d.read_at, %(at)s), "
    "delivered_at = coalesce(d.delivered_at, %(at)s)"
)


def mark(changes: str) -> str:
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


# --- the rest --------------------------------------------------------------------------------

CREATE_CHANNEL = f"""
WITH c AS (
    INSERT INTO channels (workspace, name, description, created_by, created_at, invite_only)
    VALUES (%(ws)s, %(name)s, %(description)s, %(creator)s, %(at)s, %(invite_only)s) ON CONFLICT DO NOTHING
    RETURNING workspace, name
), m AS (
    INSERT INTO channel_members (workspace, channel, agent, joined_at)
    SELECT workspace, name, %(creator)s, %(at)s FROM c ON CONFLICT DO NOTHING
)
SELECT {NOTIFY} FROM c
"""

CHANNEL_QUERY = (
    "SELECT c.workspace, c.name, c.description, c.created_by, c.created_at, "
    "(SELECT count(*) FROM channel_members m WHERE m.workspace = c.workspace AND m.channel = c.name), "
    "EXISTS (SELECT FROM channel_members m WHERE m.workspace = c.workspace AND m.channel = c.name "
    "AND m.agent = %(viewer)s), c.invite_only "
    "FROM channels c WHERE c.workspace = %(ws)s"
)

# --- the audit trail, and who is a party to a thread ----------------------------------------------

APPEND_AUDIT = f"INSERT INTO audit ({AUDIT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
AUDIT_TRAIL = f"SELECT {AUDIT_COLUMNS} FROM audit WHERE workspace = %s ORDER BY at DESC, id DESC LIMIT %s"
UNREAD = "SELECT count(*) FROM deliveries WHERE workspace = %(ws)s AND recipient = %(name)s AND read_at IS NULL"
THREAD_PARTY = """
SELECT EXISTS (SELECT FROM messages WHERE workspace = %(ws)s AND thread_id = %(thread)s),
    EXISTS (SELECT FROM messages m WHERE m.workspace = %(ws)s AND m.thread_id = %(thread)s AND (m.sender = %(agent)s
        OR EXISTS (SELECT FROM deliveries d WHERE d.message_id = m.id AND d.recipient = %(agent)s)))
"""

TOUCH_MACHINE = (
    "INSERT INTO machines (workspace, name, last_seen) VALUES (%(ws)s, %(machine)s, %(at)s) "
    "ON CONFLICT (workspace, name) DO UPDATE SET last_seen = greatest(machines.last_seen, excluded.last_seen)"
)

# The session was seen now, and so was its machine (the CTE runs whether or not it is read).
TOUCH_SESSION = f"""
WITH s AS (
    UPDATE sessions SET last_seen = greatest(last_seen, %(at)s), delivery_error = %(error)s
    WHERE workspace = %(ws)s AND id = %(id)s
    RETURNING {SESSION_COLUMNS}
), machine AS (
    INSERT INTO machines (workspace, name, last_seen) SELECT workspace, machine, %(at)s FROM s
    ON CONFLICT (workspace, name) DO UPDATE SET last_seen = greatest(machines.last_seen, excluded.last_seen)
)
SELECT s.*, {NOTIFY} FROM s
"""
