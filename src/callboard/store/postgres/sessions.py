"""Sessions and machines in the PostgreSQL schema: registering a process (by the registration
rule), its heartbeats and its end. Functions on the database, called by ``PostgresStore``."""

from __future__ import annotations

from datetime import datetime

import psycopg

from callboard.model import Session, new_id
from callboard.store.base import NewSession, StoredMachine
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.postgres.notices import NOTIFY
from callboard.store.registration import OPEN_SESSION_COLUMNS, OpenSession, registration
from callboard.store.rows import SESSION_COLUMNS, from_ts, session_from_row, to_ts

_INSERT = f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, NULL, %s, NULL)"

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


def register_session(db: PostgresDatabase, session: NewSession, now: datetime) -> Session | None:
    at = to_ts(now)
    place = {"ws": session.workspace, "machine": session.machine, "pid": session.pid, "at": at}

    def register(conn: psycopg.Connection) -> tuple | None:
        with conn.transaction():
            # Registrations of one process run one at a time (as SQLite's writes all do): two
            # at once would each insert a session.
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"callboard session {session.workspace} {session.machine} {session.pid}",),
            )
            open_here = conn.execute(
                f"SELECT {OPEN_SESSION_COLUMNS} FROM sessions "
                "WHERE workspace = %(ws)s AND machine = %(machine)s AND pid = %(pid)s AND ended_at IS NULL",
                place,
            ).fetchall()
            plan = registration(session, [OpenSession(*row) for row in open_here])
            if plan is None:
                return None
            if plan.end:
                conn.execute("UPDATE sessions SET ended_at = %s WHERE id = ANY(%s)", (at, list(plan.end)))
            session_id = plan.refresh or session.id or new_id()
            if plan.refresh is not None:
                conn.execute(
                    "UPDATE sessions SET last_seen = %s, runtime = %s, terminal = coalesce(%s, terminal) WHERE id = %s",
                    (at, session.runtime, session.terminal, session_id),
                )
            else:
                conn.execute(
                    _INSERT,
                    (
                        session_id,
                        session.workspace,
                        session.agent,
                        session.machine,
                        session.pid,
                        session.proc_start,
                        session.runtime,
                        at,
                        at,
                        session.terminal,
                    ),
                )
            conn.execute(TOUCH_MACHINE, place)
            db.notify(conn)
            return conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = %s", (session_id,)).fetchone()

    row = db.run(register)
    return session_from_row(row) if row else None


def touch_session(
    db: PostgresDatabase, workspace: str, session_id: str, now: datetime, delivery_error: str | None
) -> Session | None:
    args = db.with_notify({"ws": workspace, "id": session_id, "at": to_ts(now), "error": delivery_error})
    rows = db.run(lambda conn: conn.execute(TOUCH_SESSION, args).fetchall())
    return session_from_row(rows[0]) if rows else None


def end_session(db: PostgresDatabase, workspace: str, session_id: str, now: datetime) -> Session | None:
    rows = db.notifying(
        "UPDATE sessions SET ended_at = coalesce(ended_at, %(at)s) WHERE workspace = %(ws)s AND id = %(id)s "
        f"RETURNING {SESSION_COLUMNS}",
        {"ws": workspace, "id": session_id, "at": to_ts(now)},
    )
    return session_from_row(rows[0]) if rows else None


def get_session(db: PostgresDatabase, workspace: str, session_id: str) -> Session | None:
    row = db.one(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = %s AND id = %s", (workspace, session_id))
    return session_from_row(row) if row else None


def list_sessions(db: PostgresDatabase, workspace: str, agent: str | None, include_ended: bool) -> list[Session]:
    query = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = %s"
    args: list[object] = [workspace]
    if agent is not None:
        query += " AND agent = %s"
        args.append(agent)
    if not include_ended:
        query += " AND ended_at IS NULL"
    rows = db.all(query + " ORDER BY started_at DESC, id DESC", args)
    return [session_from_row(r) for r in rows]


def list_machines(db: PostgresDatabase, workspace: str) -> list[StoredMachine]:
    rows = db.all("SELECT name, last_seen FROM machines WHERE workspace = %s ORDER BY name", (workspace,))
    return [StoredMachine(name=r[0], last_seen=from_ts(r[1])) for r in rows]
