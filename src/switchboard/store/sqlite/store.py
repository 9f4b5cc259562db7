"""The embedded store: one SQLite file, shared safely by many processes.

Every method is one short transaction on the file (see ``sqlite_connection``): WAL lets
readers and one writer work at once, and every commit reaches the disk before it returns.
Each write method hands its transaction's body to ``transact`` as a function, so that with
group commit (the hub's) many of them run in one transaction.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime

from switchboard.delivery.guard import Exchange
from switchboard.delivery.waiting import held, waiting_to_surface
from switchboard.model import (
    Agent,
    AuditEntry,
    Channel,
    ChannelMember,
    DeliveryState,
    HeldMail,
    MailItem,
    Message,
    RecipientStatus,
    SendResult,
    Session,
    TokenInfo,
    Workspace,
    built,
    new_id,
)
from switchboard.pending import Pending
from switchboard.store.base import (
    IdempotentSend,
    NewDelivery,
    NewSession,
    NewToken,
    StoredMachine,
)
from switchboard.store.registration import OPEN_SESSION_COLUMNS, OpenSession, registration
from switchboard.store.rows import (
    CHANNEL_QUERY,
    HELD_COLUMNS,
    MAIL_QUERY,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    STATUS_COLUMNS,
    agent_from_row,
    audit_from_row,
    channel_from_row,
    check_token,
    exchange_from_row,
    from_ts,
    held_mail_from_row,
    mail_item_from_row,
    message_from_row,
    session_from_row,
    status_from_row,
    to_ts,
    token_from_row,
    with_history,
)
from switchboard.store.sqlite import audit as sqlite_audit
from switchboard.store.sqlite import handing as sqlite_handing
from switchboard.store.sqlite import tokens as sqlite_tokens
from switchboard.store.sqlite.connection import SQLiteDatabase
from switchboard.store.sqlite.messages import NewMessage, expand_fanouts, has_fanouts, insert_messages, write_out_step

# A send to at least this many recipients, group-committed on an event loop (the hub's), is
# answered and pushed to live streams before its delivery rows are written out (sqlite_messages).
FAN_OUT_LATER_FROM = 32


class SQLiteStore:
    """The Store interface on one SQLite database file."""

    def __init__(self, path: str | os.PathLike[str], *, group_commit: bool = False) -> None:
        """``group_commit``: batch the writes of concurrent threads into shared transactions
        (one fsync each) — for a server; a single-threaded process gains nothing from it."""
        self._db = SQLiteDatabase(path, group_commit=group_commit)
        self.path = self._db.path
        self.location = str(self.path)
        self.fan_out_later_from = FAN_OUT_LATER_FROM
        try:
            self._deliveries_written()  # a hub that stopped short of writing some out (a crash)
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    @asynccontextmanager
    async def committing_on_loop(self) -> AsyncIterator[None]:
        """While the block runs, concurrent writes are group-committed on the running event loop
        (a server's: see SQLiteDatabase.attach); on leaving, every queued write has committed."""
        self._db.attach(asyncio.get_running_loop())
        try:
            yield
        finally:
            await self._db.detach()

    def change_counter(self) -> int:
        return self._db.change_counter()

    def _deliveries_written(self) -> None:
        """Return once every delivery of a send answered so far is in ``deliveries``: those a
        large send left for later (see sqlite_messages) are written out by then."""
        self._db.wait_for_follow_ups()  # this process's own are written out by a follow-up
        with self._db.read() as conn:
            pending = has_fanouts(conn)
        if pending:  # another process's (a hub's) not written out yet, or left by a crash
            self._db.transact(expand_fanouts)

    def _changes_one_row(self, statement: str, args: Sequence[object], record: AuditEntry | None = None) -> bool:
        """Run one statement as a write transaction of its own (appending ``record`` when it
        changed a row); True when it did."""

        def change(conn: sqlite3.Connection) -> bool:
            changed = conn.execute(statement, args).rowcount == 1
            if changed:
                sqlite_audit.append(conn, record)
            return changed

        return self._db.transact(change)

    # --- workspaces and agents ------------------------------------------------------------

    def ensure_workspace(self, name: str, now: datetime) -> bool:
        with self._db.read() as conn:
            if conn.execute("SELECT 1 FROM workspaces WHERE name = ?", (name,)).fetchone():
                return False
        return self._changes_one_row(
            "INSERT OR IGNORE INTO workspaces (name, created_at) VALUES (?, ?)", (name, to_ts(now))
        )

    def list_workspaces(self) -> list[Workspace]:
        with self._db.read() as conn:
            rows = conn.execute("SELECT name, created_at FROM workspaces ORDER BY name").fetchall()
        return [Workspace(name=r[0], created_at=from_ts(r[1])) for r in rows]

    def ensure_agent(self, workspace: str, name: str, now: datetime) -> bool:
        with self._db.read() as conn:
            if conn.execute("SELECT 1 FROM agents WHERE workspace = ? AND name = ?", (workspace, name)).fetchone():
                return False
        return self.create_agent(workspace, name, None, [], now)

    def create_agent(
        self, workspace: str, name: str, description: str | None, skills: list[str], now: datetime
    ) -> bool:
        return self._changes_one_row(
            "INSERT OR IGNORE INTO agents (workspace, name, description, skills, created_at) VALUES (?, ?, ?, ?, ?)",
            (workspace, name, description, json.dumps(skills), to_ts(now)),
        )

    def update_agent(self, workspace: str, name: str, description: str | None, skills: list[str] | None) -> bool:
        return self._changes_one_row(
            "UPDATE agents SET description = coalesce(?, description), skills = coalesce(?, skills) "
            "WHERE workspace = ? AND name = ?",
            (description, None if skills is None else json.dumps(skills), workspace, name),
        )

    def get_agent(self, workspace: str, name: str) -> Agent | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT workspace, name, description, skills, created_at FROM agents WHERE workspace = ? AND name = ?",
                (workspace, name),
            ).fetchone()
        return agent_from_row(row) if row else None

    def list_agents(self, workspace: str) -> list[Agent]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT workspace, name, description, skills, created_at FROM agents WHERE workspace = ? ORDER BY name",
                (workspace,),
            ).fetchall()
        return [agent_from_row(r) for r in rows]

    def delete_agent(
        self, workspace: str, name: str, record: AuditEntry | None = None, *, keep_unread: bool = False
    ) -> int | None:
        self._deliveries_written()
        return self._db.transact(lambda conn: sqlite_audit.delete_agent(conn, workspace, name, record, keep_unread))

    # --- channels -------------------------------------------------------------------------

    def create_channel(
        self,
        workspace: str,
        name: str,
        creator: str,
        description: str | None,
        now: datetime,
        invite_only: bool = False,
        record: AuditEntry | None = None,
    ) -> bool:
        def create(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "INSERT OR IGNORE INTO channels (workspace, name, description, created_by, created_at, invite_only) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (workspace, name, description, creator, to_ts(now), invite_only),
            )
            if cur.rowcount == 0:
                return False
            conn.execute(
                "INSERT OR IGNORE INTO channel_members (workspace, channel, agent, joined_at) VALUES (?, ?, ?, ?)",
                (workspace, name, creator, to_ts(now)),
            )
            sqlite_audit.append(conn, record)
            return True

        return self._db.transact(create)

    def get_channel(self, workspace: str, name: str, viewer: str | None = None) -> Channel | None:
        with self._db.read() as conn:
            row = conn.execute(CHANNEL_QUERY + " AND c.name = ?", (viewer, workspace, name)).fetchone()
        return channel_from_row(row) if row else None

    def list_channels(self, workspace: str, viewer: str | None = None) -> list[Channel]:
        with self._db.read() as conn:
            rows = conn.execute(CHANNEL_QUERY + " ORDER BY c.name", (viewer, workspace)).fetchall()
        return [channel_from_row(r) for r in rows]

    def join_channel(
        self, workspace: str, channel: str, agent: str, now: datetime, record: AuditEntry | None = None
    ) -> bool:
        return self._changes_one_row(
            "INSERT OR IGNORE INTO channel_members (workspace, channel, agent, joined_at) VALUES (?, ?, ?, ?)",
            (workspace, channel, agent, to_ts(now)),
            record,
        )

    def leave_channel(self, workspace: str, channel: str, agent: str, record: AuditEntry | None = None) -> bool:
        return self._changes_one_row(
            "DELETE FROM channel_members WHERE workspace = ? AND channel = ? AND agent = ?",
            (workspace, channel, agent),
            record,
        )

    def channel_members(self, workspace: str, channel: str) -> list[ChannelMember]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT agent, joined_at FROM channel_members WHERE workspace = ? AND channel = ? ORDER BY agent",
                (workspace, channel),
            ).fetchall()
        return [built(ChannelMember, agent=r[0], joined_at=from_ts(r[1])) for r in rows]

    def channel_member_names(self, workspace: str, channel: str) -> list[str]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT agent FROM channel_members WHERE workspace = ? AND channel = ? ORDER BY agent",
                (workspace, channel),
            ).fetchall()
        return [r[0] for r in rows]

    # --- sessions and machines --------------------------------------------------------------

    def _touch_machine(self, conn: sqlite3.Connection, workspace: str, machine: str, now: float) -> None:
        conn.execute(
            "INSERT INTO machines (workspace, name, last_seen) VALUES (?, ?, ?) "
            "ON CONFLICT (workspace, name) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen)",
            (workspace, machine, now),
        )

    def register_session(self, session: NewSession, now: datetime) -> Session | None:
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
            if plan.refresh is not None:
                session_id = plan.refresh
                conn.execute(
                    "UPDATE sessions SET last_seen = ?, runtime = ?, terminal = coalesce(?, terminal) WHERE id = ?",
                    (at, session.runtime, session.terminal, session_id),
                )
            else:
                session_id = session.id or new_id()
                conn.execute(
                    f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL)",
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
            self._touch_machine(conn, session.workspace, session.machine, at)
            return conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()

        row = self._db.transact(register)
        return session_from_row(row) if row else None

    def touch_session(
        self, workspace: str, session_id: str, now: datetime, delivery_error: str | None = None
    ) -> Session | None:
        def touch(conn: sqlite3.Connection) -> tuple | None:
            row = conn.execute(
                "UPDATE sessions SET last_seen = max(last_seen, ?), delivery_error = ? "
                f"WHERE workspace = ? AND id = ? RETURNING {SESSION_COLUMNS}",
                (to_ts(now), delivery_error, workspace, session_id),
            ).fetchone()
            if row:
                self._touch_machine(conn, workspace, row[3], to_ts(now))
            return row

        row = self._db.transact(touch)
        return session_from_row(row) if row else None

    def end_session(self, workspace: str, session_id: str, now: datetime) -> Session | None:
        row = self._db.transact(
            lambda conn: conn.execute(
                f"UPDATE sessions SET ended_at = coalesce(ended_at, ?) WHERE workspace = ? AND id = ? RETURNING {SESSION_COLUMNS}",
                (to_ts(now), workspace, session_id),
            ).fetchone()
        )
        return session_from_row(row) if row else None

    def get_session(self, workspace: str, session_id: str) -> Session | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = ? AND id = ?", (workspace, session_id)
            ).fetchone()
        return session_from_row(row) if row else None

    def list_sessions(self, workspace: str, agent: str | None = None, include_ended: bool = False) -> list[Session]:
        query = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = ?"
        args: list[object] = [workspace]
        if agent is not None:
            query += " AND agent = ?"
            args.append(agent)
        if not include_ended:
            query += " AND ended_at IS NULL"
        with self._db.read() as conn:
            rows = conn.execute(query + " ORDER BY started_at DESC, id DESC", args).fetchall()
        return [session_from_row(r) for r in rows]

    def list_machines(self, workspace: str) -> list[StoredMachine]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT name, last_seen FROM machines WHERE workspace = ? ORDER BY name", (workspace,)
            ).fetchall()
        return [StoredMachine(name=r[0], last_seen=from_ts(r[1])) for r in rows]

    # --- messages and mailboxes -------------------------------------------------------------

    def find_idempotent(self, workspace: str, sender: str, key: str) -> IdempotentSend | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT request_hash, result FROM messages WHERE workspace = ? AND sender = ? AND idempotency_key = ?",
                (workspace, sender, key),
            ).fetchone()
        if row is None:
            return None
        return IdempotentSend(request_hash=row[0] or "", result=SendResult.model_validate_json(row[1]))

    def submit_message(
        self,
        message: Message,
        deliveries: Sequence[NewDelivery],
        result: SendResult,
        idempotency_key: str | None,
        request_hash: str | None,
    ) -> Pending[dict[str, int]]:
        later = len(deliveries) >= self.fan_out_later_from and self._db.follows_up
        new = NewMessage.prepare(message, deliveries, result, idempotency_key, request_hash, fan_out_later=later)
        return self._db.submit(
            lambda conn: insert_messages(conn, [new])[0],
            together=insert_messages,
            item=new,
            follow_up=write_out_step if later else None,
        )

    def get_message(self, workspace: str, message_id: str) -> Message | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.workspace = ? AND m.id = ?", (workspace, message_id)
            ).fetchone()
        return message_from_row(row) if row else None

    def thread_party(self, workspace: str, thread_id: str, agent: str) -> bool | None:
        self._deliveries_written()
        with self._db.read() as conn:
            return sqlite_audit.thread_party(conn, workspace, thread_id, agent)

    def send_result(self, workspace: str, message_id: str) -> SendResult | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT result FROM messages WHERE workspace = ? AND id = ?", (workspace, message_id)
            ).fetchone()
        return SendResult.model_validate_json(row[0]) if row else None

    def delivery_statuses(self, workspace: str, message_id: str) -> list[RecipientStatus]:
        self._deliveries_written()
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {STATUS_COLUMNS} FROM deliveries WHERE workspace = ? AND message_id = ? ORDER BY recipient",
                (workspace, message_id),
            ).fetchall()
            events = sqlite_handing.history(conn, workspace, message_id) if rows else []
        return with_history([status_from_row(r) for r in rows], events)

    @staticmethod
    def _window(after: int | None, hidden: Sequence[str] = ()) -> tuple[str, list[object]]:
        """Unread deliveries, or (resuming from a cursor) every delivery past ``after``; none
        pushed to a session in ``hidden``."""
        where, args = ("d.read_at IS NULL", []) if after is None else ("d.seq > ?", [after])
        if hidden:
            where += f" AND (d.target_session IS NULL OR d.target_session NOT IN ({','.join('?' * len(hidden))}))"
            args += hidden
        return where, args

    def claim(
        self, workspace: str, agent: str, after: int | None, limit: int, now: datetime, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        self._deliveries_written()
        where, args = self._window(after, hidden)
        at = to_ts(now)
        # Look before taking the write lock: most wake-ups of a waiting reader find nothing new,
        # and a reader should not queue behind senders just to learn that.
        with self._db.read() as conn:
            if not conn.execute(
                f"SELECT 1 FROM deliveries d WHERE d.workspace = ? AND d.recipient = ? AND {where} LIMIT 1",
                (workspace, agent, *args),
            ).fetchone():
                return []

        def take(conn: sqlite3.Connection) -> tuple[list, list[int]]:
            rows = conn.execute(
                f"{MAIL_QUERY} WHERE d.workspace = ? AND d.recipient = ? AND {where} ORDER BY d.seq LIMIT ?",
                (workspace, agent, *args, limit),
            ).fetchall()
            unread = [r[0] for r in rows if DeliveryState(r[1]).rank < DeliveryState.read.rank]
            if unread:
                conn.execute(
                    "UPDATE deliveries SET state = 'read', read_at = ?, delivered_at = coalesce(delivered_at, ?) "
                    f"WHERE workspace = ? AND recipient = ? AND seq IN ({','.join('?' * len(unread))})",
                    (at, at, workspace, agent, *unread),
                )
            return rows, unread

        rows, unread = self._db.transact(take)
        claimed = set(unread)
        return [
            MailItem(
                seq=r[0],
                state=DeliveryState.read if r[0] in claimed else DeliveryState(r[1]),
                message=message_from_row(r[2:]),
            )
            for r in rows
        ]

    def peek(
        self, workspace: str, agent: str, after: int | None, limit: int, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        self._deliveries_written()
        where, args = self._window(after, hidden)
        with self._db.read() as conn:
            rows = conn.execute(
                f"{MAIL_QUERY} WHERE d.workspace = ? AND d.recipient = ? AND {where} ORDER BY d.seq LIMIT ?",
                (workspace, agent, *args, limit),
            ).fetchall()
        return [mail_item_from_row(r) for r in rows]

    def mailbox(self, workspace: str, agent: str, include_acked: bool, limit: int) -> list[MailItem]:
        self._deliveries_written()
        where = "" if include_acked else " AND d.acked_at IS NULL"
        with self._db.read() as conn:
            rows = conn.execute(
                f"{MAIL_QUERY} WHERE d.workspace = ? AND d.recipient = ?{where} ORDER BY d.seq DESC LIMIT ?",
                (workspace, agent, limit),
            ).fetchall()
        return [mail_item_from_row(r) for r in reversed(rows)]

    def ack(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        return self._mark(
            workspace,
            agent,
            message_ids,
            "state = 'acked', acked_at = coalesce(acked_at, ?1), read_at = coalesce(read_at, ?1), "
            "delivered_at = coalesce(delivered_at, ?1)",
            now,
        )

    def mark_read(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        return self._mark(
            workspace,
            agent,
            message_ids,
            "state = CASE state WHEN 'acked' THEN 'acked' ELSE 'read' END, read_at = coalesce(read_at, ?1), "
            "delivered_at = coalesce(delivered_at, ?1)",
            now,
        )

    def _mark(self, workspace: str, agent: str, message_ids: Sequence[str], changes: str, now: datetime) -> list[str]:
        """Apply ``changes`` (``?1`` is now) to these messages' deliveries in the agent's mailbox;
        the ids not there (then nothing is written)."""
        self._deliveries_written()
        wanted = list(dict.fromkeys(message_ids))
        marks = ",".join("?" * len(wanted))

        def mark(conn: sqlite3.Connection) -> list[str]:
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

        return self._db.transact(mark)

    def surface(
        self,
        workspace: str,
        agent: str,
        via: str,
        urgent_only: bool,
        limit: int,
        now: datetime,
        peek: bool = False,
        hidden: Sequence[str] = (),
        session: str | None = None,
        hand: bool = False,
    ) -> list[MailItem]:
        self._deliveries_written()
        unread, args = self._window(None, hidden)
        where = f"{waiting_to_surface('?')} AND {unread}" + (" AND m.urgent = 1" if urgent_only else "")
        args = [to_ts(now), *args]
        query = f"{MAIL_QUERY} WHERE d.workspace = ? AND d.recipient = ? AND {where} ORDER BY d.seq LIMIT ?"
        with self._db.read() as conn:  # most looks find nothing: no write lock for those
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
                sqlite_handing.record_events(conn, workspace, agent, ids, at, state.value, session, via)
            return rows

        return [MailItem(seq=r[0], state=state, message=message_from_row(r[2:])) for r in self._db.transact(take)]

    def confirm_surfaced(
        self, workspace: str, agent: str, message_ids: Sequence[str], evidence: str, now: datetime
    ) -> list[str]:
        wanted = list(dict.fromkeys(message_ids))
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        with self._db.read() as conn:  # most looks (a transcript line naming surfaced mail) find nothing
            if not conn.execute(
                "SELECT 1 FROM deliveries WHERE workspace = ? AND recipient = ? AND state = 'handed' "
                f"AND message_id IN ({marks}) LIMIT 1",
                (workspace, agent, *wanted),
            ).fetchone():
                return []
        return self._db.transact(
            lambda conn: sqlite_handing.confirm_surfaced(conn, workspace, agent, wanted, evidence, to_ts(now))
        )

    def handed_sessions(self, workspace: str, agent: str) -> list[str]:
        with self._db.read() as conn:
            return sqlite_handing.handed_sessions(conn, workspace, agent)

    def return_handed(
        self,
        workspace: str,
        agent: str,
        session_id: str,
        state: DeliveryState,
        reason: str,
        now: datetime,
        message_ids: Sequence[str] | None = None,
    ) -> list[str]:
        return self._db.transact(
            lambda conn: sqlite_handing.return_handed(
                conn, workspace, agent, session_id, state.value, reason, to_ts(now), message_ids
            )
        )

    def record_delivery_event(
        self,
        workspace: str,
        agent: str,
        message_id: str,
        event: str,
        now: datetime,
        session: str | None = None,
        via: str | None = None,
        detail: str | None = None,
    ) -> bool:
        def record(conn: sqlite3.Connection) -> bool:
            if not conn.execute(
                "SELECT 1 FROM deliveries WHERE workspace = ? AND recipient = ? AND message_id = ?",
                (workspace, agent, message_id),
            ).fetchone():
                return False
            sqlite_handing.record_events(conn, workspace, agent, [message_id], to_ts(now), event, session, via, detail)
            return True

        return self._db.transact(record)

    def unread_count(self, workspace: str, agent: str, hidden: Sequence[str] = ()) -> int:
        self._deliveries_written()
        where, args = self._window(None, hidden)
        with self._db.read() as conn:
            return conn.execute(
                f"SELECT count(*) FROM deliveries d WHERE d.workspace = ? AND d.recipient = ? AND {where}",
                (workspace, agent, *args),
            ).fetchone()[0]

    def last_seq(self, workspace: str, agent: str) -> int:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT last_seq FROM agents WHERE workspace = ? AND name = ?", (workspace, agent)
            ).fetchone()
        return row[0] if row else 0

    def pair_traffic(self, workspace: str, a: str, b: str, since: datetime, limit: int) -> list[Exchange]:
        self._deliveries_written()
        one_way = (
            "SELECT * FROM (SELECT m.sender, m.created_at, d.held_until, d.held_reason, m.id "
            "FROM messages m JOIN deliveries d ON d.message_id = m.id AND d.recipient = ? "
            "WHERE m.workspace = ? AND m.sender = ? AND m.created_at >= ? ORDER BY m.created_at DESC LIMIT ?)"
        )
        at = to_ts(since)
        with self._db.read() as conn:
            rows = conn.execute(
                f"{one_way} UNION ALL {one_way} ORDER BY 2 DESC, 5 DESC",
                (b, workspace, a, at, limit, a, workspace, b, at, limit),
            ).fetchall()
        return [exchange_from_row(r) for r in rows]

    def held_mail(self, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
        if agents is not None and not agents:
            return []
        self._deliveries_written()
        mailboxes = "" if agents is None else f" AND d.recipient IN ({','.join('?' * len(agents))})"
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {HELD_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.message_id "
                f"WHERE d.workspace = ?{mailboxes} AND {held('?')} ORDER BY d.held_until, d.seq",
                (workspace, *(agents or ()), to_ts(now)),
            ).fetchall()
        return [held_mail_from_row(r) for r in rows]

    # --- the audit trail ----------------------------------------------------------------------

    def audit_trail(self, workspace: str, limit: int) -> list[AuditEntry]:
        with self._db.read() as conn:
            return [audit_from_row(r) for r in sqlite_audit.trail(conn, workspace, limit)]

    # --- hub credentials --------------------------------------------------------------------

    def create_token(self, token: NewToken, now: datetime) -> TokenInfo:
        check_token(token)
        row = self._db.transact(lambda conn: sqlite_tokens.insert_token(conn, token, to_ts(now)))
        return token_from_row(row)

    def token_by_hash(self, secret_hash: str) -> TokenInfo | None:
        with self._db.read() as conn:
            row = sqlite_tokens.token_by_hash(conn, secret_hash)
        return token_from_row(row) if row else None

    def list_tokens(self, workspace: str | None = None) -> list[TokenInfo]:
        with self._db.read() as conn:
            rows = sqlite_tokens.list_tokens(conn, workspace)
        return [token_from_row(r) for r in rows]

    def revoke_token(self, token_id: str, now: datetime) -> TokenInfo | None:
        row = self._db.transact(lambda conn: sqlite_tokens.revoke_token(conn, token_id, to_ts(now)))
        return token_from_row(row) if row else None
