"""Sessions and machines in the SQLite schema: registering a process (by the registration rule),
its heartbeats and its end. Functions on the database, called by ``SQLiteStore``."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from callboard.model import Session, new_id
from callboard.store.base import NewSession, StoredMachine
from callboard.store.registration import OPEN_SESSION_COLUMNS, OpenSession, registration
from callboard.store.rows import SESSION_COLUMNS, from_ts, session_from_row, to_ts
from callboard.store.sqlite.connection import SQLiteDatabase

_INSERT = f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL)"


def _touch_machine(conn: sqlite3.Connection, workspace: str, machine: str, at: float) -> None:
    conn.execute(
        "INSERT INTO machines (workspace, name, last_seen) VALUES (?, ?, ?) "
        "ON CONFLICT (workspace, name) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen)",
        (workspace, machine, at),
    )


def register_session(db: SQLiteDatabase, session: NewSession, now: datetime) -> Session | None:
    at = to_ts(now)

    def register(conn: sqlite3.Connection) -> tuple | None:
        open_here = conn.execute(
            f"SELECT {OPEN_SESSION_COLUMNS} FROM sessions "
            "WHERE workspace = ? AND machine = ? AND pid = ? AND ended_at IS NULL",
            (session.workspace, session.machine, session.pid),
        ).fetchall()
        plan = registration(session, [OpenSession(*row) for row in open_here])
        if plan is None:
            return None
        for stale in plan.end:
            conn.execute("UPDATE sessions SET ended_at = ? WHERE id = ?", (at, stale))
        session_id = plan.refresh or session.id or new_id()
        if plan.refresh is not None:
            conn.execute(
                "UPDATE sessions SET last_seen = ?, runtime = ?, terminal = coalesce(?, terminal) WHERE id = ?",
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
        _touch_machine(conn, session.workspace, session.machine, at)
        return conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()

    row = db.transact(register)
    return session_from_row(row) if row else None


def touch_session(
    db: SQLiteDatabase, workspace: str, session_id: str, now: datetime, delivery_error: str | None
) -> Session | None:
    at = to_ts(now)

    def touch(conn: sqlite3.Connection) -> tuple | None:
        row = conn.execute(
            "UPDATE sessions SET last_seen = max(last_seen, ?), delivery_error = ? "
            f"WHERE workspace = ? AND id = ? RETURNING {SESSION_COLUMNS}",
            (at, delivery_error, workspace, session_id),
        ).fetchone()
        if row:
            _touch_machine(conn, workspace, row[3], at)  # row[3]: the machine (SESSION_COLUMNS)
        return row

    row = db.transact(touch)
    return session_from_row(row) if row else None


def end_session(db: SQLiteDatabase, workspace: str, session_id: str, now: datetime) -> Session | None:
    row = db.transact(
        lambda conn: conn.execute(
            "UPDATE sessions SET ended_at = coalesce(ended_at, ?) WHERE workspace = ? AND id = ? "
            f"RETURNING {SESSION_COLUMNS}",
            (to_ts(now), workspace, session_id),
        ).fetchone()
    )
    return session_from_row(row) if row else None


def get_session(db: SQLiteDatabase, workspace: str, session_id: str) -> Session | None:
    with db.read() as conn:
        row = conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = ? AND id = ?", (workspace, session_id)
        ).fetchone()
    return session_from_row(row) if row else None


def list_sessions(db: SQLiteDatabase, workspace: str, agent: str | None, include_ended: bool) -> list[Session]:
    query = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = ?"
    args: list[object] = [workspace]
    if agent is not None:
        query += " AND agent = ?"
        args.append(agent)
    if not include_ended:
        query += " AND ended_at IS NULL"
    with db.read() as conn:
        rows = conn.execute(query + " ORDER BY started_at DESC, id DESC", args).fetchall()
    return [session_from_row(r) for r in rows]


def list_machines(db: SQLiteDatabase, workspace: str) -> list[StoredMachine]:
    with db.read() as conn:
        rows = conn.execute(
            "SELECT name, last_seen FROM machines WHERE workspace = ? ORDER BY name", (workspace,)
        ).fetchall()
    return [StoredMachine(name=r[0], last_seen=from_ts(r[1])) for r in rows]
