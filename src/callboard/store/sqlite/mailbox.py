"""Reading and marking one agent's mailbox in the SQLite schema: claiming (read-once), peeking,
listing, acking, marking read, surfacing into a session's context, counting. Functions on the
database, called by ``SQLiteStore``; each first waits for the deliveries of large sends not
written out yet (``deliveries_written``), so that it sees every one."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from callboard.model import DeliveryState, MailItem
from callboard.store.rows import MAIL_QUERY, mail_item_from_row, message_from_row, to_ts
from callboard.store.sqlite import handing
from callboard.store.sqlite.connection import SQLiteDatabase
from callboard.store.sqlite.messages import deliveries_written
from callboard.store.waiting import waiting_to_surface

_IN_MAILBOX = "d.workspace = ? AND d.recipient = ?"
ACK = (
    "state = 'acked', acked_at = coalesce(acked_at, ?1), read_at = coalesce(read_at, ?1), "
    "delivered_at = coalesce(delivered_at, ?1)"
)
MARK_READ = (
    "state = CASE state WHEN 'acked' THEN 'acked' ELSE 'read' END, read_at = coalesce(read_at, ?1), "
    "delivered_at = coalesce(delivered_at, ?1)"
)


def window(after: int | None, hidden: Sequence[str] = ()) -> tuple[str, list[object]]:
    """Unread deliveries, or (resuming from a cursor) every delivery past ``after``; none
    pushed to a session in ``hidden``."""
    where, args = ("d.read_at IS NULL", []) if after is None else ("d.seq > ?", [after])
    if hidden:
        where += f" AND (d.target_session IS NULL OR d.target_session NOT IN ({','.join('?' * len(hidden))}))"
        args += hidden
    return where, args


def claim(
    db: SQLiteDatabase,
    workspace: str,
    agent: str,
    after: int | None,
    limit: int,
    now: datetime,
    hidden: Sequence[str],
) -> list[MailItem]:
    deliveries_written(db)
    where, args = window(after, hidden)
    at = to_ts(now)
    # Look before taking the write lock: most wake-ups of a waiting reader find nothing new,
    # and a reader should not queue behind senders just to learn that.
    with db.read() as conn:
        if not conn.execute(
            f"SELECT 1 FROM deliveries d WHERE {_IN_MAILBOX} AND {where} LIMIT 1", (workspace, agent, *args)
        ).fetchone():
            return []

    def take(conn: sqlite3.Connection) -> tuple[list, list[int]]:
        rows = conn.execute(
            f"{MAIL_QUERY} WHERE {_IN_MAILBOX} AND {where} ORDER BY d.seq LIMIT ?", (workspace, agent, *args, limit)
        ).fetchall()
        unread = [r[0] for r in rows if DeliveryState(r[1]).rank < DeliveryState.read.rank]
        if unread:
            conn.execute(
                "UPDATE deliveries SET state = 'read', read_at = ?, delivered_at = coalesce(delivered_at, ?) "
                f"WHERE workspace = ? AND recipient = ? AND seq IN ({','.join('?' * len(unread))})",
                (at, at, workspace, agent, *unread),
            )
        return rows, unread

    rows, unread = db.transact(take)
    claimed = set(unread)
    return [mail_item_from_row(r, DeliveryState.read if r[0] in claimed else None) for r in rows]


def peek(
    db: SQLiteDatabase, workspace: str, agent: str, after: int | None, limit: int, hidden: Sequence[str]
) -> list[MailItem]:
    deliveries_written(db)
    where, args = window(after, hidden)
    with db.read() as conn:
        rows = conn.execute(
            f"{MAIL_QUERY} WHERE {_IN_MAILBOX} AND {where} ORDER BY d.seq LIMIT ?", (workspace, agent, *args, limit)
        ).fetchall()
    return [mail_item_from_row(r) for r in rows]


def mailbox(db: SQLiteDatabase, workspace: str, agent: str, include_acked: bool, limit: int) -> list[MailItem]:
    deliveries_written(db)
    where = "" if include_acked else " AND d.acked_at IS NULL"
    with db.read() as conn:
        rows = conn.execute(
            f"{MAIL_QUERY} WHERE {_IN_MAILBOX}{where} ORDER BY d.seq DESC LIMIT ?", (workspace, agent, limit)
        ).fetchall()
    return [mail_item_from_row(r) for r in reversed(rows)]


def mark(
    db: SQLiteDatabase, workspace: str, agent: str, message_ids: Sequence[str], changes: str, now: datetime
) -> list[str]:
    """Apply ``changes`` (ACK or MARK_READ; ``?1`` is now) to these messages' deliveries in the
    agent's mailbox; the ids not there (then nothing is written)."""
    deliveries_written(db)
    wanted = list(dict.fromkeys(message_ids))
    marks = ",".join("?" * len(wanted))

    def apply(conn: sqlite3.Connection) -> list[str]:
        found = {
            r[0]
            for r in conn.execute(
                f"SELECT message_id FROM deliveries WHERE workspace = ? AND recipient = ? AND message_id IN ({marks})",
                (workspace, agent, *wanted),
            )
        }
        missing = [m for m in wanted if m not in found]
        if not missing:
            conn.execute(
                f"UPDATE deliveries SET {changes} WHERE workspace = ?2 AND recipient = ?3 "
                f"AND message_id IN ({','.join(f'?{i}' for i in range(4, 4 + len(wanted)))})",
                (to_ts(now), workspace, agent, *wanted),
            )
        return missing

    return db.transact(apply)


def surface(
    db: SQLiteDatabase,
    workspace: str,
    agent: str,
    via: str,
    urgent_only: bool,
    limit: int,
    now: datetime,
    peek: bool,
    hidden: Sequence[str],
    session: str | None,
    hand: bool,
) -> list[MailItem]:
    deliveries_written(db)
    unread, args = window(None, hidden)
    where = f"{waiting_to_surface('?')} AND {unread}" + (" AND m.urgent = 1" if urgent_only else "")
    args = [to_ts(now), *args]
    query = f"{MAIL_QUERY} WHERE {_IN_MAILBOX} AND {where} ORDER BY d.seq LIMIT ?"
    with db.read() as conn:  # most looks find nothing: no write lock for those
        looked = conn.execute(query, (workspace, agent, *args, limit if peek else 1)).fetchall()
    if peek or not looked:
        return [mail_item_from_row(r) for r in looked]
    at = to_ts(now)
    state = DeliveryState.handed if hand else DeliveryState.surfaced
    changes = "handed_at = ?1, handed_session = ?3" if hand else "surfaced_at = ?1"

    def take(conn: sqlite3.Connection) -> list:
        rows = conn.execute(query, (workspace, agent, *args, limit)).fetchall()
        if rows:
            conn.execute(
                f"UPDATE deliveries SET state = ?4, {changes}, surfaced_via = ?2, "
                "delivered_at = coalesce(delivered_at, ?1) "
                f"WHERE workspace = ?5 AND recipient = ?6 AND seq IN ({','.join('?' * len(rows))})",
                (at, via, session, state.value, workspace, agent, *(r[0] for r in rows)),
            )
            ids = [message_from_row(r[2:]).id for r in rows]
            handing.record_events(conn, workspace, agent, ids, at, state.value, session, via)
        return rows

    return [mail_item_from_row(r, state) for r in db.transact(take)]


def unread_count(db: SQLiteDatabase, workspace: str, agent: str, hidden: Sequence[str]) -> int:
    deliveries_written(db)
    where, args = window(None, hidden)
    with db.read() as conn:
        return conn.execute(
            f"SELECT count(*) FROM deliveries d WHERE {_IN_MAILBOX} AND {where}", (workspace, agent, *args)
        ).fetchone()[0]


def last_seq(db: SQLiteDatabase, workspace: str, agent: str) -> int:
    with db.read() as conn:
        row = conn.execute(
            "SELECT last_seq FROM agents WHERE workspace = ? AND name = ?", (workspace, agent)
        ).fetchone()
    return row[0] if row else 0
