"""The sessions part: sessions and machines — registering a process (by the registration rule of
``store.registration``), its heartbeats and its end. Its interface, and its SQL for both
dialects."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from callboard.model import Session, new_id
from callboard.store.records import NewSession, StoredMachine
from callboard.store.registration import OPEN_SESSION_COLUMNS, OpenSession, registration
from callboard.store.rows import SESSION_COLUMNS, from_ts, session_from_row, to_ts
from callboard.store.sql import Connection, Database


class SessionsPart(Protocol):
    def register_session(self, session: NewSession, now: datetime) -> Session | None:
        """Insert the session, or refresh the matching open one (same agent, machine, pid and
        process start; its runtime is updated). Ends the agent's other open sessions on that
        machine and pid (the pid was recycled) and the other agents' ones named in
        ``session.may_end``. None, with nothing written, when another agent has an open session
        there that ``may_end`` does not name (it registered the process meanwhile). The rule is
        ``store.registration``'s, which every store applies."""
        ...

    def touch_session(
        self, workspace: str, session_id: str, now: datetime, delivery_error: str | None = None
    ) -> Session | None:
        """Seen now; ``delivery_error`` is what its delivery path reports broken (None: it works)."""
        ...

    def end_session(self, workspace: str, session_id: str, now: datetime) -> Session | None: ...
    def get_session(self, workspace: str, session_id: str) -> Session | None: ...
    def list_sessions(self, workspace: str, agent: str | None = None, include_ended: bool = False) -> list[Session]: ...
    def list_machines(self, workspace: str) -> list[StoredMachine]: ...


_INSERT = f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL)"
_SESSION = f"SELECT {SESSION_COLUMNS} FROM sessions"


class SQLSessions:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._touch_machine = (
            "INSERT INTO machines (workspace, name, last_seen) VALUES (?, ?, ?) ON CONFLICT (workspace, name) "
            f"DO UPDATE SET last_seen = {db.greatest}(machines.last_seen, excluded.last_seen)"
        )

    def register_session(self, session: NewSession, now: datetime) -> Session | None:
        at = to_ts(now)

        def register(conn: Connection) -> tuple | None:
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
                values = (session_id, session.workspace, session.agent, session.machine, session.pid)
                conn.execute(_INSERT, (*values, session.proc_start, session.runtime, at, at, session.terminal))
            conn.execute(self._touch_machine, (session.workspace, session.machine, at))
            return conn.execute(f"{_SESSION} WHERE id = ?", (session_id,)).fetchone()

        # Registrations of one process take turns: two at once would each insert a session.
        row = self._db.transact(register, lock=f"callboard session {session.workspace} {session.machine} {session.pid}")
        return session_from_row(row) if row else None

    def touch_session(
        self, workspace: str, session_id: str, now: datetime, delivery_error: str | None = None
    ) -> Session | None:
        at = to_ts(now)

        def touch(conn: Connection) -> tuple | None:
            row = conn.execute(
                f"UPDATE sessions SET last_seen = {self._db.greatest}(last_seen, ?), delivery_error = ? "
                f"WHERE workspace = ? AND id = ? RETURNING {SESSION_COLUMNS}",
                (at, delivery_error, workspace, session_id),
            ).fetchone()
            if row:
                conn.execute(self._touch_machine, (workspace, row[3], at))  # row[3]: the machine (SESSION_COLUMNS)
            return row

        row = self._db.transact(touch)
        return session_from_row(row) if row else None

    def end_session(self, workspace: str, session_id: str, now: datetime) -> Session | None:
        rows = self._db.change(
            f"UPDATE sessions SET ended_at = coalesce(ended_at, ?) WHERE workspace = ? AND id = ? "
            f"RETURNING {SESSION_COLUMNS}",
            (to_ts(now), workspace, session_id),
        )
        return session_from_row(rows[0]) if rows else None

    def get_session(self, workspace: str, session_id: str) -> Session | None:
        row = self._db.row(f"{_SESSION} WHERE workspace = ? AND id = ?", (workspace, session_id))
        return session_from_row(row) if row else None

    def list_sessions(self, workspace: str, agent: str | None = None, include_ended: bool = False) -> list[Session]:
        query = f"{_SESSION} WHERE workspace = ?"
        args: list[object] = [workspace]
        if agent is not None:
            query += " AND agent = ?"
            args.append(agent)
        if not include_ended:
            query += " AND ended_at IS NULL"
        rows = self._db.rows(query + " ORDER BY started_at DESC, id DESC", args)
        return [session_from_row(r) for r in rows]

    def list_machines(self, workspace: str) -> list[StoredMachine]:
        rows = self._db.rows("SELECT name, last_seen FROM machines WHERE workspace = ? ORDER BY name", (workspace,))
        return [StoredMachine(name=r[0], last_seen=from_ts(r[1])) for r in rows]
