"""The transactions of ``PostgresStore`` that append to the audit trail: deleting an agent, and a
change of a channel recorded with it. Functions on a pooled connection (in autocommit)."""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from switchboard.model import AuditEntry
from switchboard.store.postgres import queries as q
from switchboard.store.rows import audit_values

_MAILBOX_ROWS = (
    ("agents", "name"),
    ("deliveries", "recipient"),
    ("delivery_events", "recipient"),
    ("channel_members", "agent"),
    ("sessions", "agent"),
)


def delete_agent(
    conn: psycopg.Connection,
    args: dict[str, object],
    record: AuditEntry | None,
    keep_unread: bool,
    notify: Callable[[psycopg.Connection], None],
) -> int | None:
    """PostgresStore.delete_agent's transaction (``args``: ws and name)."""
    with conn.transaction():
        # The agent row first: once it is locked (until commit), each later statement sees every
        # delivery a racing send committed before it (a send updates that row).
        if not conn.execute(
            "SELECT FROM agents WHERE workspace = %(ws)s AND name = %(name)s FOR UPDATE", args
        ).rowcount:
            return None
        (unread,) = conn.execute(q.UNREAD, args).fetchone()  # type: ignore[misc]
        if unread and keep_unread:
            return unread
        for table, column in _MAILBOX_ROWS:
            conn.execute(f"DELETE FROM {table} WHERE workspace = %(ws)s AND {column} = %(name)s", args)  # type: ignore[call-overload]
        if record is not None:
            conn.execute(q.APPEND_AUDIT, audit_values(record, unread=unread))
        notify(conn)
        return unread


def recorded(conn: psycopg.Connection, statement: str, args: dict[str, object], record: AuditEntry | None) -> bool:
    """Run ``statement`` (it answers a row when it changed something, and notifies) and, when it
    changed something, append ``record``: one transaction. Whether it changed something."""
    if record is None:  # one statement: its own transaction, one round trip
        return bool(conn.execute(statement, args).fetchall())  # type: ignore[call-overload]
    with conn.transaction():
        changed = bool(conn.execute(statement, args).fetchall())  # type: ignore[call-overload]
        if changed:
            conn.execute(q.APPEND_AUDIT, audit_values(record))
        return changed
