"""The embedded store: one SQLite file, shared safely by many processes.

WAL lets readers and one writer work at once; ``synchronous=FULL`` makes every commit reach
the disk before it returns (durable before acknowledged); a busy timeout makes concurrent
writers from other processes wait their turn instead of failing.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from switchboard.errors import StoreUnavailable, UnknownRecipient
from switchboard.model import (
    Agent,
    Channel,
    ChannelMember,
    DeliveryState,
    MailItem,
    Message,
    RecipientStatus,
    SendResult,
    Session,
    Workspace,
    new_id,
)
from switchboard.store.base import (
    DuplicateIdempotencyKey,
    IdempotentSend,
    NewDelivery,
    NewSession,
    StoredMachine,
)
from switchboard.store.schema import migrate

BUSY_TIMEOUT_SECONDS = 30.0
# Waiting for the write lock: SQLite's own busy handler sleeps up to 100 ms between tries, which
# lets a busy writer starve the others for most of a second. We poll in steps of at most 2 ms.
_LOCK_RETRY_FIRST_SECONDS = 0.0001
_LOCK_RETRY_MAX_SECONDS = 0.002


def _retry_while_locked(conn: sqlite3.Connection, statement: str) -> None:
    """Run ``statement``, retrying while another connection holds the lock it needs.

    Also for statements SQLite does not retry itself: switching a new database to WAL answers
    "locked" at once while another process is creating the same file.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause = _LOCK_RETRY_FIRST_SECONDS
    while True:
        try:
            conn.execute(statement)
            return
        except sqlite3.OperationalError as error:
            if conn.in_transaction or "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(pause * (0.5 + random.random()))
        pause = min(pause * 2, _LOCK_RETRY_MAX_SECONDS)


def _ts(moment: datetime) -> float:
    return moment.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, timezone.utc)


_MESSAGE_COLUMNS = (
    "m.id, m.workspace, m.sender, m.sender_session, m.recipients, m.channel, m.subject, "
    "m.parts, m.thread_id, m.reply_to, m.created_at"
)
_MAIL_QUERY = f"SELECT d.seq, d.state, {_MESSAGE_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.message_id"
_SESSION_COLUMNS = "id, workspace, agent, machine, pid, proc_start, runtime, started_at, last_seen, ended_at"


def _message(row: Sequence) -> Message:
    return Message.model_validate(
        {
            "id": row[0],
            "workspace": row[1],
            "sender": row[2],
            "sender_session": row[3],
            "recipients": json.loads(row[4]),
            "channel": row[5],
            "subject": row[6],
            "parts": json.loads(row[7]),
            "thread_id": row[8],
            "reply_to": row[9],
            "created_at": _dt(row[10]),
        }
    )


def _mail_item(row: Sequence) -> MailItem:
    return MailItem(seq=row[0], state=DeliveryState(row[1]), message=_message(row[2:]))


def _session(row: Sequence) -> Session:
    return Session(
        id=row[0],
        workspace=row[1],
        agent=row[2],
        machine=row[3],
        pid=row[4],
        proc_start=row[5],
        runtime=row[6],
        started_at=_dt(row[7]),
        last_seen=_dt(row[8]),
        ended_at=_dt(row[9]),
    )


def _agent(row: Sequence) -> Agent:
    return Agent(
        workspace=row[0], name=row[1], description=row[2], skills=json.loads(row[3]), created_at=_dt(row[4])
    )


class SQLiteStore:
    """The Store interface on one SQLite database file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as error:
            raise StoreUnavailable(f"cannot create the folder for the database {self.path}: {error}.") from None
        self._lock = threading.RLock()
        self._conn = self._connect()
        # A second connection only watches: its data_version moves when any connection commits.
        self._watch_lock = threading.Lock()
        self._watch_conn = self._connect()
        with self._guard():
            migrate(self._conn)

    def _connect(self) -> sqlite3.Connection:
        try:
            if not self.path.exists():
                # Mailboxes are private to the user. Create the file 0600 before SQLite does: its
                # -wal and -shm files copy the database file's permissions when they are made.
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            _retry_while_locked(conn, "PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
        except (sqlite3.Error, OSError) as error:
            raise StoreUnavailable(f"cannot open the database {self.path}: {error}.") from None
        return conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        with self._watch_lock:
            self._watch_conn.close()

    def change_counter(self) -> int:
        with self._watch_lock:
            return self._watch_conn.execute("PRAGMA data_version").fetchone()[0]

    # --- plumbing -------------------------------------------------------------------------

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Serialise this process's use of the connection; turn SQLite failures into a clear error."""
        with self._lock:
            try:
                yield
            except sqlite3.OperationalError as error:
                raise StoreUnavailable(
                    f"the database {self.path} is unavailable ({error}); try again."
                ) from None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed (and fsynced) on exit, rolled back on any error."""
        with self._guard():
            conn = self._conn
            self._begin_immediate(conn)
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # also when COMMIT itself failed (disk full, I/O error)
                    conn.execute("ROLLBACK")
                raise

    def _begin_immediate(self, conn: sqlite3.Connection) -> None:
        """Take the database's write lock, retrying briefly and often until the busy timeout."""
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            _retry_while_locked(conn, "BEGIN IMMEDIATE")
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")

    # --- workspaces and agents ------------------------------------------------------------

    def ensure_workspace(self, name: str, now: datetime) -> bool:
        with self._guard():
            if self._conn.execute("SELECT 1 FROM workspaces WHERE name = ?", (name,)).fetchone():
                return False
        with self._write() as conn:
            cur = conn.execute("INSERT OR IGNORE INTO workspaces (name, created_at) VALUES (?, ?)", (name, _ts(now)))
            return cur.rowcount == 1

    def list_workspaces(self) -> list[Workspace]:
        with self._guard():
            rows = self._conn.execute("SELECT name, created_at FROM workspaces ORDER BY name").fetchall()
        return [Workspace(name=r[0], created_at=_dt(r[1])) for r in rows]

    def ensure_agent(self, workspace: str, name: str, now: datetime) -> bool:
        with self._guard():
            if self._conn.execute(
                "SELECT 1 FROM agents WHERE workspace = ? AND name = ?", (workspace, name)
            ).fetchone():
                return False
        return self.create_agent(workspace, name, None, [], now)

    def create_agent(
        self, workspace: str, name: str, description: str | None, skills: list[str], now: datetime
    ) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO agents (workspace, name, description, skills, created_at) VALUES (?, ?, ?, ?, ?)",
                (workspace, name, description, json.dumps(skills), _ts(now)),
            )
            return cur.rowcount == 1

    def update_agent(
        self, workspace: str, name: str, description: str | None, skills: list[str] | None
    ) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE agents SET description = coalesce(?, description), skills = coalesce(?, skills) "
                "WHERE workspace = ? AND name = ?",
                (description, None if skills is None else json.dumps(skills), workspace, name),
            )
            return cur.rowcount == 1

    def get_agent(self, workspace: str, name: str) -> Agent | None:
        with self._guard():
            row = self._conn.execute(
                "SELECT workspace, name, description, skills, created_at FROM agents WHERE workspace = ? AND name = ?",
                (workspace, name),
            ).fetchone()
        return _agent(row) if row else None

    def list_agents(self, workspace: str) -> list[Agent]:
        with self._guard():
            rows = self._conn.execute(
                "SELECT workspace, name, description, skills, created_at FROM agents WHERE workspace = ? ORDER BY name",
                (workspace,),
            ).fetchall()
        return [_agent(r) for r in rows]

    def delete_agent(self, workspace: str, name: str) -> bool:
        with self._write() as conn:
            cur = conn.execute("DELETE FROM agents WHERE workspace = ? AND name = ?", (workspace, name))
            if cur.rowcount == 0:
                return False
            for table, column in (("deliveries", "recipient"), ("channel_members", "agent"), ("sessions", "agent")):
                conn.execute(f"DELETE FROM {table} WHERE workspace = ? AND {column} = ?", (workspace, name))
            return True

    # --- channels -------------------------------------------------------------------------

    _CHANNEL_QUERY = (
        "SELECT c.workspace, c.name, c.description, c.created_by, c.created_at, "
        "(SELECT count(*) FROM channel_members m WHERE m.workspace = c.workspace AND m.channel = c.name), "
        "EXISTS (SELECT 1 FROM channel_members m WHERE m.workspace = c.workspace AND m.channel = c.name AND m.agent = ?) "
        "FROM channels c WHERE c.workspace = ?"
    )

    @staticmethod
    def _channel(row: Sequence) -> Channel:
        return Channel(
            workspace=row[0],
            name=row[1],
            description=row[2],
            created_by=row[3],
            created_at=_dt(row[4]),
            members=row[5],
            joined=bool(row[6]),
        )

    def create_channel(
        self, workspace: str, name: str, creator: str, description: str | None, now: datetime
    ) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO channels (workspace, name, description, created_by, created_at) VALUES (?, ?, ?, ?, ?)",
                (workspace, name, description, creator, _ts(now)),
            )
            if cur.rowcount == 0:
                return False
            conn.execute(
                "INSERT OR IGNORE INTO channel_members (workspace, channel, agent, joined_at) VALUES (?, ?, ?, ?)",
                (workspace, name, creator, _ts(now)),
            )
            return True

    def get_channel(self, workspace: str, name: str, viewer: str | None = None) -> Channel | None:
        with self._guard():
            row = self._conn.execute(self._CHANNEL_QUERY + " AND c.name = ?", (viewer, workspace, name)).fetchone()
        return self._channel(row) if row else None

    def list_channels(self, workspace: str, viewer: str | None = None) -> list[Channel]:
        with self._guard():
            rows = self._conn.execute(self._CHANNEL_QUERY + " ORDER BY c.name", (viewer, workspace)).fetchall()
        return [self._channel(r) for r in rows]

    def join_channel(self, workspace: str, channel: str, agent: str, now: datetime) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO channel_members (workspace, channel, agent, joined_at) VALUES (?, ?, ?, ?)",
                (workspace, channel, agent, _ts(now)),
            )
            return cur.rowcount == 1

    def leave_channel(self, workspace: str, channel: str, agent: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "DELETE FROM channel_members WHERE workspace = ? AND channel = ? AND agent = ?",
                (workspace, channel, agent),
            )
            return cur.rowcount == 1

    def channel_members(self, workspace: str, channel: str) -> list[ChannelMember]:
        with self._guard():
            rows = self._conn.execute(
                "SELECT agent, joined_at FROM channel_members WHERE workspace = ? AND channel = ? ORDER BY agent",
                (workspace, channel),
            ).fetchall()
        return [ChannelMember(agent=r[0], joined_at=_dt(r[1])) for r in rows]

    # --- sessions and machines --------------------------------------------------------------

    def _touch_machine(self, conn: sqlite3.Connection, workspace: str, machine: str, now: float) -> None:
        conn.execute(
            "INSERT INTO machines (workspace, name, last_seen) VALUES (?, ?, ?) "
            "ON CONFLICT (workspace, name) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen)",
            (workspace, machine, now),
        )

    def register_session(self, session: NewSession, now: datetime) -> Session:
        at = _ts(now)
        with self._write() as conn:
            open_here = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions "
                "WHERE workspace = ? AND machine = ? AND pid = ? AND ended_at IS NULL",
                (session.workspace, session.machine, session.pid),
            ).fetchall()
            same = [r for r in open_here if r[2] == session.agent and r[5] == session.proc_start]
            for row in open_here:
                if row not in same[:1]:  # another process once had this pid, or another agent claims it
                    conn.execute("UPDATE sessions SET ended_at = ? WHERE id = ?", (at, row[0]))
            if same:
                session_id = same[0][0]
                conn.execute("UPDATE sessions SET last_seen = ?, runtime = ? WHERE id = ?", (at, session.runtime, session_id))
            else:
                session_id = session.id or new_id()
                conn.execute(
                    f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
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
                    ),
                )
            self._touch_machine(conn, session.workspace, session.machine, at)
            row = conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return _session(row)

    def touch_session(self, workspace: str, session_id: str, now: datetime) -> Session | None:
        with self._write() as conn:
            row = conn.execute(
                f"UPDATE sessions SET last_seen = max(last_seen, ?) WHERE workspace = ? AND id = ? RETURNING {_SESSION_COLUMNS}",
                (_ts(now), workspace, session_id),
            ).fetchone()
            if row:
                self._touch_machine(conn, workspace, row[3], _ts(now))
        return _session(row) if row else None

    def end_session(self, workspace: str, session_id: str, now: datetime) -> Session | None:
        with self._write() as conn:
            row = conn.execute(
                f"UPDATE sessions SET ended_at = coalesce(ended_at, ?) WHERE workspace = ? AND id = ? RETURNING {_SESSION_COLUMNS}",
                (_ts(now), workspace, session_id),
            ).fetchone()
        return _session(row) if row else None

    def get_session(self, workspace: str, session_id: str) -> Session | None:
        with self._guard():
            row = self._conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE workspace = ? AND id = ?", (workspace, session_id)
            ).fetchone()
        return _session(row) if row else None

    def list_sessions(self, workspace: str, agent: str | None = None, include_ended: bool = False) -> list[Session]:
        query = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE workspace = ?"
        args: list[object] = [workspace]
        if agent is not None:
            query += " AND agent = ?"
            args.append(agent)
        if not include_ended:
            query += " AND ended_at IS NULL"
        with self._guard():
            rows = self._conn.execute(query + " ORDER BY started_at DESC, id DESC", args).fetchall()
        return [_session(r) for r in rows]

    def list_machines(self, workspace: str) -> list[StoredMachine]:
        with self._guard():
            rows = self._conn.execute(
                "SELECT name, last_seen FROM machines WHERE workspace = ? ORDER BY name", (workspace,)
            ).fetchall()
        return [StoredMachine(name=r[0], last_seen=_dt(r[1])) for r in rows]

    # --- messages and mailboxes -------------------------------------------------------------

    def find_idempotent(self, workspace: str, sender: str, key: str) -> IdempotentSend | None:
        with self._guard():
            row = self._conn.execute(
                "SELECT request_hash, result FROM messages WHERE workspace = ? AND sender = ? AND idempotency_key = ?",
                (workspace, sender, key),
            ).fetchone()
        if row is None:
            return None
        return IdempotentSend(request_hash=row[0] or "", result=SendResult.model_validate_json(row[1]))

    def insert_message(
        self,
        message: Message,
        deliveries: Sequence[NewDelivery],
        result: SendResult,
        idempotency_key: str | None,
        request_hash: str | None,
    ) -> dict[str, int]:
        at = _ts(message.created_at)
        parts = json.dumps([p.model_dump(exclude_none=True) for p in message.parts], separators=(",", ":"))
        seqs: dict[str, int] = {}
        with self._write() as conn:
            try:
                conn.execute(
                    "INSERT INTO messages (id, workspace, sender, sender_session, recipients, channel, subject, parts, "
                    "thread_id, reply_to, created_at, idempotency_key, request_hash, result) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        message.id,
                        message.workspace,
                        message.sender,
                        message.sender_session,
                        json.dumps(message.recipients),
                        message.channel,
                        message.subject,
                        parts,
                        message.thread_id,
                        message.reply_to,
                        at,
                        idempotency_key,
                        request_hash,
                        result.model_dump_json(),
                    ),
                )
            except sqlite3.IntegrityError:
                if idempotency_key is None:
                    raise
                raise DuplicateIdempotencyKey(idempotency_key) from None
            for delivery in deliveries:
                if delivery.create_agent:
                    conn.execute(
                        "INSERT OR IGNORE INTO agents (workspace, name, created_at) VALUES (?, ?, ?)",
                        (message.workspace, delivery.recipient, at),
                    )
                row = conn.execute(
                    "UPDATE agents SET last_seq = last_seq + 1 WHERE workspace = ? AND name = ? RETURNING last_seq",
                    (message.workspace, delivery.recipient),
                ).fetchone()
                if row is None:  # deleted by another process since the service looked it up
                    raise UnknownRecipient(
                        f"agent {delivery.recipient} was deleted while this message was being sent; nothing was stored.",
                        addresses=[delivery.recipient],
                    )
                seq = row[0]
                delivered = at if delivery.state is DeliveryState.delivered else None
                conn.execute(
                    "INSERT INTO deliveries (workspace, recipient, seq, message_id, channel, state, sessions, "
                    "target_session, queued_at, delivered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        message.workspace,
                        delivery.recipient,
                        seq,
                        message.id,
                        delivery.channel,
                        delivery.state.value,
                        json.dumps(list(delivery.sessions)),
                        delivery.target_session,
                        at,
                        delivered,
                    ),
                )
                seqs[delivery.recipient] = seq
        return seqs

    def get_message(self, workspace: str, message_id: str) -> Message | None:
        with self._guard():
            row = self._conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.workspace = ? AND m.id = ?", (workspace, message_id)
            ).fetchone()
        return _message(row) if row else None

    def send_result(self, workspace: str, message_id: str) -> SendResult | None:
        with self._guard():
            row = self._conn.execute(
                "SELECT result FROM messages WHERE workspace = ? AND id = ?", (workspace, message_id)
            ).fetchone()
        return SendResult.model_validate_json(row[0]) if row else None

    def delivery_statuses(self, workspace: str, message_id: str) -> list[RecipientStatus]:
        with self._guard():
            rows = self._conn.execute(
                "SELECT recipient, state, channel, queued_at, delivered_at, surfaced_at, read_at, acked_at, sessions "
                "FROM deliveries WHERE workspace = ? AND message_id = ? ORDER BY recipient",
                (workspace, message_id),
            ).fetchall()
        return [
            RecipientStatus(
                address=r[0],
                agent=r[0],
                state=DeliveryState(r[1]),
                channel=r[2],
                queued_at=_dt(r[3]),
                delivered_at=_dt(r[4]),
                surfaced_at=_dt(r[5]),
                read_at=_dt(r[6]),
                acked_at=_dt(r[7]),
                sessions=json.loads(r[8]),
            )
            for r in rows
        ]

    @staticmethod
    def _window(after: int | None) -> tuple[str, list[object]]:
        """Unread deliveries, or (resuming from a cursor) every delivery past ``after``."""
        if after is None:
            return "d.read_at IS NULL", []
        return "d.seq > ?", [after]

    def claim(
        self, workspace: str, agent: str, after: int | None, limit: int, now: datetime
    ) -> list[MailItem]:
        where, args = self._window(after)
        at = _ts(now)
        # Look before taking the write lock: most wake-ups of a waiting reader find nothing new,
        # and a reader should not queue behind senders just to learn that.
        with self._guard():
            if not self._conn.execute(
                f"SELECT 1 FROM deliveries d WHERE d.workspace = ? AND d.recipient = ? AND {where} LIMIT 1",
                (workspace, agent, *args),
            ).fetchone():
                return []
        with self._write() as conn:
            rows = conn.execute(
                f"{_MAIL_QUERY} WHERE d.workspace = ? AND d.recipient = ? AND {where} ORDER BY d.seq LIMIT ?",
                (workspace, agent, *args, limit),
            ).fetchall()
            unread = [r[0] for r in rows if DeliveryState(r[1]).rank < DeliveryState.read.rank]
            if unread:
                conn.execute(
                    "UPDATE deliveries SET state = 'read', read_at = ?, delivered_at = coalesce(delivered_at, ?) "
                    f"WHERE workspace = ? AND recipient = ? AND seq IN ({','.join('?' * len(unread))})",
                    (at, at, workspace, agent, *unread),
                )
        claimed = set(unread)
        return [
            MailItem(seq=r[0], state=DeliveryState.read if r[0] in claimed else DeliveryState(r[1]), message=_message(r[2:]))
            for r in rows
        ]

    def peek(self, workspace: str, agent: str, after: int | None, limit: int) -> list[MailItem]:
        where, args = self._window(after)
        with self._guard():
            rows = self._conn.execute(
                f"{_MAIL_QUERY} WHERE d.workspace = ? AND d.recipient = ? AND {where} ORDER BY d.seq LIMIT ?",
                (workspace, agent, *args, limit),
            ).fetchall()
        return [_mail_item(r) for r in rows]

    def mailbox(self, workspace: str, agent: str, include_acked: bool, limit: int) -> list[MailItem]:
        where = "" if include_acked else " AND d.acked_at IS NULL"
        with self._guard():
            rows = self._conn.execute(
                f"{_MAIL_QUERY} WHERE d.workspace = ? AND d.recipient = ?{where} ORDER BY d.seq DESC LIMIT ?",
                (workspace, agent, limit),
            ).fetchall()
        return [_mail_item(r) for r in reversed(rows)]

    def ack(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        at = _ts(now)
        wanted = list(dict.fromkeys(message_ids))
        marks = ",".join("?" * len(wanted))
        with self._write() as conn:
            found = {
                r[0]
                for r in conn.execute(
                    f"SELECT message_id FROM deliveries WHERE workspace = ? AND recipient = ? AND message_id IN ({marks})",
                    (workspace, agent, *wanted),
                )
            }
            missing = [m for m in wanted if m not in found]
            if missing:
                return missing
            conn.execute(
                "UPDATE deliveries SET state = 'acked', acked_at = coalesce(acked_at, ?), read_at = coalesce(read_at, ?), "
                f"delivered_at = coalesce(delivered_at, ?) WHERE workspace = ? AND recipient = ? AND message_id IN ({marks})",
                (at, at, at, workspace, agent, *wanted),
            )
        return []

    def unread_count(self, workspace: str, agent: str) -> int:
        with self._guard():
            return self._conn.execute(
                "SELECT count(*) FROM deliveries WHERE workspace = ? AND recipient = ? AND read_at IS NULL",
                (workspace, agent),
            ).fetchone()[0]

    def last_seq(self, workspace: str, agent: str) -> int:
        with self._guard():
            row = self._conn.execute(
                "SELECT last_seq FROM agents WHERE workspace = ? AND name = ?", (workspace, agent)
            ).fetchone()
        return row[0] if row else 0
