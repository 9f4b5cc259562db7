"""The shared store: one PostgreSQL database (schema), for several hub replicas at once.

Connections come from a pool and run in autocommit (``postgres_connection``): most methods are
one statement, hence one round trip and one transaction (``postgres_queries``; a send's is in
``postgres_messages``); the few that need several statements open a transaction. Sends run on
the store's own threads: ``submit_message`` answers a Pending at once, as the hub, which calls
it on its event loop, needs. Every write that changes something notifies the other replicas
through ``pg_notify`` in its transaction (``postgres_listener``). The schema is applied on
opening (``postgres_schema``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime

import psycopg
from psycopg import errors as pg_errors

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
    TokenTaken,
)
from switchboard.store.postgres import audit as postgres_audit
from switchboard.store.postgres import handing
from switchboard.store.postgres import queries as q
from switchboard.store.postgres.connection import POOL_SIZE, PostgresDatabase
from switchboard.store.postgres.listener import Callback
from switchboard.store.postgres.messages import store_message, submit_args
from switchboard.store.registration import OPEN_SESSION_COLUMNS, OpenSession, registration
from switchboard.store.rows import (
    EVENT_COLUMNS,
    HELD_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    STATUS_COLUMNS,
    TOKEN_COLUMNS,
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

_AGENT_COLUMNS = "workspace, name, description, skills, created_at"


class PostgresStore:
    """The Store interface on a PostgreSQL database: the connection's current schema."""

    def __init__(self, url: str, *, replica: str | None = None, pool_size: int = POOL_SIZE) -> None:
        """``url``: a libpq URL or connection string; its ``options=-csearch_path=…`` chooses the
        schema. ``replica``: this store's name in its change notifications (default: random).
        Raises StoreUnavailable when the database cannot be reached."""
        self._db = PostgresDatabase(url, replica, pool_size)
        self.location = self._db.location  # the URL less its password
        self.replica = self._db.replica
        self.schema = self._db.schema
        self.channel = self._db.channel  # the NOTIFY channel of this schema

    def close(self) -> None:
        self._db.close()

    @asynccontextmanager
    async def committing_on_loop(self) -> AsyncIterator[None]:
        """Nothing to do: every transaction commits on the pool's threads, never on the loop."""
        yield

    def change_counter(self) -> int:
        """The number of change notifications heard; listening starts at the first call."""
        self._db.listener.start()
        return self._db.listener.count

    def add_listener(self, callback: Callback) -> None:
        """Call ``callback(payload)`` on the listening thread after each commit of any store on
        this schema (this one too: compare ``payload.get("r")`` with ``replica``). The payload:
        ``{"r": replica, "w": workspace, "a": [agent, …]}`` when those mailboxes' deliveries
        changed, ``{"r", "w"}`` for any mailbox of the workspace, ``{"r"}`` for another change,
        ``{}`` for anything at all (the listener reconnected). It must not block."""
        self._db.listener.add_callback(callback)
        self._db.listener.start()

    # --- workspaces and agents ------------------------------------------------------------

    def ensure_workspace(self, name: str, now: datetime) -> bool:
        return self._db.changed_one(
            "INSERT INTO workspaces (name, created_at) VALUES (%(name)s, %(at)s) ON CONFLICT DO NOTHING",
            {"name": name, "at": to_ts(now)},
        )

    def list_workspaces(self) -> list[Workspace]:
        rows = self._db.all("SELECT name, created_at FROM workspaces ORDER BY name")
        return [Workspace(name=r[0], created_at=from_ts(r[1])) for r in rows]

    def ensure_agent(self, workspace: str, name: str, now: datetime) -> bool:
        return self.create_agent(workspace, name, None, [], now)

    def create_agent(
        self, workspace: str, name: str, description: str | None, skills: list[str], now: datetime
    ) -> bool:
        return self._db.changed_one(
            "INSERT INTO agents (workspace, name, description, skills, created_at) "
            "VALUES (%(ws)s, %(name)s, %(description)s, %(skills)s, %(at)s) ON CONFLICT DO NOTHING",
            {"ws": workspace, "name": name, "description": description, "skills": json.dumps(skills), "at": to_ts(now)},
        )

    def update_agent(self, workspace: str, name: str, description: str | None, skills: list[str] | None) -> bool:
        return self._db.changed_one(
            "UPDATE agents SET description = coalesce(%(description)s, description), "
            "skills = coalesce(%(skills)s, skills) WHERE workspace = %(ws)s AND name = %(name)s",
            {
                "ws": workspace,
                "name": name,
                "description": description,
                "skills": None if skills is None else json.dumps(skills),
            },
        )

    def get_agent(self, workspace: str, name: str) -> Agent | None:
        row = self._db.one(f"SELECT {_AGENT_COLUMNS} FROM agents WHERE workspace = %s AND name = %s", (workspace, name))
        return agent_from_row(row) if row else None

    def list_agents(self, workspace: str) -> list[Agent]:
        rows = self._db.all(f"SELECT {_AGENT_COLUMNS} FROM agents WHERE workspace = %s ORDER BY name", (workspace,))
        return [agent_from_row(r) for r in rows]

    def delete_agent(
        self, workspace: str, name: str, record: AuditEntry | None = None, *, keep_unread: bool = False
    ) -> int | None:
        args = {"ws": workspace, "name": name}
        payload = q.payload(self.replica, workspace, [name])
        return self._db.run(
            lambda conn: postgres_audit.delete_agent(
                conn, args, record, keep_unread, lambda c: self._db.notify(c, payload)
            )
        )

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
        args = {
            "ws": workspace,
            "name": name,
            "description": description,
            "creator": creator,
            "at": to_ts(now),
            "invite_only": invite_only,
        }
        return self._recorded(q.CREATE_CHANNEL, self._db.with_notify(args), record)

    def _recorded(self, statement: str, args: dict[str, object], record: AuditEntry | None) -> bool:
        return self._db.run(lambda conn: postgres_audit.recorded(conn, statement, args, record))

    def get_channel(self, workspace: str, name: str, viewer: str | None = None) -> Channel | None:
        row = self._db.one(
            q.CHANNEL_QUERY + " AND c.name = %(name)s", {"viewer": viewer, "ws": workspace, "name": name}
        )
        return channel_from_row(row) if row else None

    def list_channels(self, workspace: str, viewer: str | None = None) -> list[Channel]:
        rows = self._db.all(q.CHANNEL_QUERY + " ORDER BY c.name", {"viewer": viewer, "ws": workspace})
        return [channel_from_row(r) for r in rows]

    def join_channel(
        self, workspace: str, channel: str, agent: str, now: datetime, record: AuditEntry | None = None
    ) -> bool:
        return self._recorded(
            q.notifying(
                "INSERT INTO channel_members (workspace, channel, agent, joined_at) "
                "VALUES (%(ws)s, %(channel_name)s, %(agent)s, %(at)s) ON CONFLICT DO NOTHING RETURNING 1"
            ),
            self._db.with_notify({"ws": workspace, "channel_name": channel, "agent": agent, "at": to_ts(now)}),
            record,
        )

    def leave_channel(self, workspace: str, channel: str, agent: str, record: AuditEntry | None = None) -> bool:
        return self._recorded(
            q.notifying(
                "DELETE FROM channel_members "
                "WHERE workspace = %(ws)s AND channel = %(channel_name)s AND agent = %(agent)s RETURNING 1"
            ),
            self._db.with_notify({"ws": workspace, "channel_name": channel, "agent": agent}),
            record,
        )

    def channel_members(self, workspace: str, channel: str) -> list[ChannelMember]:
        rows = self._db.all(
            "SELECT agent, joined_at FROM channel_members WHERE workspace = %s AND channel = %s ORDER BY agent",
            (workspace, channel),
        )
        return [built(ChannelMember, agent=r[0], joined_at=from_ts(r[1])) for r in rows]

    def channel_member_names(self, workspace: str, channel: str) -> list[str]:
        rows = self._db.all(
            "SELECT agent FROM channel_members WHERE workspace = %s AND channel = %s ORDER BY agent",
            (workspace, channel),
        )
        return [r[0] for r in rows]

    # --- sessions and machines --------------------------------------------------------------

    def register_session(self, session: NewSession, now: datetime) -> Session | None:
        at = to_ts(now)
        place = {"ws": session.workspace, "machine": session.machine, "pid": session.pid, "at": at}

        def register(conn: psycopg.Connection) -> tuple | None:
            with conn.transaction():
                # Registrations of one process run one at a time (as SQLite's writes all do):
                # two at once would each insert a session.
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"switchboard session {session.workspace} {session.machine} {session.pid}",),
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
                if plan.refresh is not None:
                    session_id = plan.refresh
                    conn.execute(
                        "UPDATE sessions SET last_seen = %s, runtime = %s, terminal = coalesce(%s, terminal) "
                        "WHERE id = %s",
                        (at, session.runtime, session.terminal, session_id),
                    )
                else:
                    session_id = session.id or new_id()
                    conn.execute(
                        f"INSERT INTO sessions ({SESSION_COLUMNS}) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, NULL, %s, NULL)",
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
                conn.execute(q.TOUCH_MACHINE, place)
                self._db.notify(conn)
                return conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = %s", (session_id,)).fetchone()

        row = self._db.run(register)
        return session_from_row(row) if row else None

    def touch_session(
        self, workspace: str, session_id: str, now: datetime, delivery_error: str | None = None
    ) -> Session | None:
        args = {"ws": workspace, "id": session_id, "at": to_ts(now), "error": delivery_error}
        args = self._db.with_notify(args)
        rows = self._db.run(lambda conn: conn.execute(q.TOUCH_SESSION, args).fetchall())
        return session_from_row(rows[0]) if rows else None

    def end_session(self, workspace: str, session_id: str, now: datetime) -> Session | None:
        rows = self._db.notifying(
            "UPDATE sessions SET ended_at = coalesce(ended_at, %(at)s) WHERE workspace = %(ws)s AND id = %(id)s "
            f"RETURNING {SESSION_COLUMNS}",
            {"ws": workspace, "id": session_id, "at": to_ts(now)},
        )
        return session_from_row(rows[0]) if rows else None

    def get_session(self, workspace: str, session_id: str) -> Session | None:
        row = self._db.one(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = %s AND id = %s", (workspace, session_id)
        )
        return session_from_row(row) if row else None

    def list_sessions(self, workspace: str, agent: str | None = None, include_ended: bool = False) -> list[Session]:
        query = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = %s"
        args: list[object] = [workspace]
        if agent is not None:
            query += " AND agent = %s"
            args.append(agent)
        if not include_ended:
            query += " AND ended_at IS NULL"
        rows = self._db.all(query + " ORDER BY started_at DESC, id DESC", args)
        return [session_from_row(r) for r in rows]

    def list_machines(self, workspace: str) -> list[StoredMachine]:
        rows = self._db.all("SELECT name, last_seen FROM machines WHERE workspace = %s ORDER BY name", (workspace,))
        return [StoredMachine(name=r[0], last_seen=from_ts(r[1])) for r in rows]

    # --- messages and mailboxes -------------------------------------------------------------

    def find_idempotent(self, workspace: str, sender: str, key: str) -> IdempotentSend | None:
        row = self._db.one(
            "SELECT request_hash, result FROM messages WHERE workspace = %s AND sender = %s AND idempotency_key = %s",
            (workspace, sender, key),
        )
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
        args = submit_args(message, deliveries, result, idempotency_key, request_hash)
        notice = q.payload(self.replica, message.workspace, args["names"], message.id)  # type: ignore[arg-type]
        args = self._db.with_notify(args, notice)
        return self._db.submit(lambda conn: store_message(conn, args))

    def get_message(self, workspace: str, message_id: str) -> Message | None:
        row = self._db.one(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.workspace = %s AND m.id = %s", (workspace, message_id)
        )
        return message_from_row(row) if row else None

    def thread_party(self, workspace: str, thread_id: str, agent: str) -> bool | None:
        row = self._db.one(q.THREAD_PARTY, {"ws": workspace, "thread": thread_id, "agent": agent})
        return bool(row[1]) if row and row[0] else None

    def deliveries_of(
        self, workspace: str, message_id: str, agents: Sequence[str]
    ) -> tuple[str, list[tuple[str, int, str, str | None]]] | None:
        """A new message as JSON and its deliveries to ``agents`` (recipient, seq, state, target
        session), read in one query: what a replica hands its streams when another replica's
        send names them, instead of each stream reading its mailbox. None if it is not there."""
        rows = self._db.all(
            f"SELECT {MESSAGE_COLUMNS}, d.recipient, d.seq, d.state, d.target_session "
            "FROM messages m JOIN deliveries d ON d.message_id = m.id "
            "WHERE m.workspace = %s AND m.id = %s AND d.workspace = %s AND d.recipient = ANY(%s)",
            (workspace, message_id, workspace, list(agents)),
        )
        if not rows:
            return None
        width = len(rows[0]) - 4
        message_json = message_from_row(rows[0][:width]).model_dump_json()
        return message_json, [(r[width], r[width + 1], r[width + 2], r[width + 3]) for r in rows]

    def send_result(self, workspace: str, message_id: str) -> SendResult | None:
        row = self._db.one("SELECT result FROM messages WHERE workspace = %s AND id = %s", (workspace, message_id))
        return SendResult.model_validate_json(row[0]) if row else None

    def delivery_statuses(self, workspace: str, message_id: str) -> list[RecipientStatus]:
        rows = self._db.all(
            f"SELECT {STATUS_COLUMNS} FROM deliveries WHERE workspace = %s AND message_id = %s ORDER BY recipient",
            (workspace, message_id),
        )
        events = (
            self._db.all(
                f"SELECT {EVENT_COLUMNS} FROM delivery_events WHERE workspace = %s AND message_id = %s "
                "ORDER BY at, ctid",
                (workspace, message_id),
            )
            if rows
            else []
        )
        return with_history([status_from_row(r) for r in rows], events)

    def _mailbox_args(self, workspace: str, agent: str, **more: object) -> dict[str, object]:
        """Parameters of a statement on one mailbox, whose notification names that mailbox."""
        return self._db.with_notify(
            {"ws": workspace, "agent": agent, **more}, q.payload(self.replica, workspace, [agent])
        )

    def claim(
        self, workspace: str, agent: str, after: int | None, limit: int, now: datetime, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        where, args = q.window(after, hidden)
        args = self._mailbox_args(workspace, agent, limit=limit, at=to_ts(now), **args)
        rows = self._db.run(lambda conn: conn.execute(q.claim(where), args).fetchall())
        return [mail_item_from_row(r) for r in rows]

    def peek(
        self, workspace: str, agent: str, after: int | None, limit: int, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        where, args = q.window(after, hidden)
        rows = self._db.all(
            f"SELECT {q.MAIL_COLUMNS} {q.MAILBOX} AND {where} ORDER BY d.seq LIMIT %(limit)s",
            {"ws": workspace, "agent": agent, "limit": limit, **args},
        )
        return [mail_item_from_row(r) for r in rows]

    def mailbox(self, workspace: str, agent: str, include_acked: bool, limit: int) -> list[MailItem]:
        where = "" if include_acked else " AND d.acked_at IS NULL"
        rows = self._db.all(
            f"SELECT {q.MAIL_COLUMNS} {q.MAILBOX}{where} ORDER BY d.seq DESC LIMIT %(limit)s",
            {"ws": workspace, "agent": agent, "limit": limit},
        )
        return [mail_item_from_row(r) for r in reversed(rows)]

    def ack(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        return self._mark(workspace, agent, message_ids, q.ACK, now)

    def mark_read(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        return self._mark(workspace, agent, message_ids, q.MARK_READ, now)

    def _mark(self, workspace: str, agent: str, message_ids: Sequence[str], changes: str, now: datetime) -> list[str]:
        """Apply ``changes`` to these messages' deliveries in the agent's mailbox; the ids not
        there (then nothing is written)."""
        wanted = list(dict.fromkeys(message_ids))
        if not wanted:
            return []
        args = self._mailbox_args(workspace, agent, ids=wanted, count=len(wanted), at=to_ts(now))
        ok, found, _ = self._db.run(lambda conn: conn.execute(q.mark(changes), args).fetchone())  # type: ignore[misc]
        if ok:
            return []
        present = set(found or ())
        return [m for m in wanted if m not in present]

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
        unread, args = q.window(None, hidden)
        where, args = f"{waiting_to_surface('%(now)s')} AND {unread}", {**args, "now": to_ts(now)}
        if peek:
            urgent = " AND m.urgent" if urgent_only else ""
            rows = self._db.all(
                f"SELECT {q.MAIL_COLUMNS} {q.MAILBOX} AND {where}{urgent} ORDER BY d.seq LIMIT %(limit)s",
                {"ws": workspace, "agent": agent, "limit": limit, **args},
            )
            return [mail_item_from_row(r) for r in rows]
        args = self._mailbox_args(workspace, agent, via=via, limit=limit, at=to_ts(now), session=session, **args)
        statement = handing.surface(where, urgent_only, hand)
        rows = self._db.run(lambda conn: conn.execute(statement, args).fetchall())  # type: ignore[call-overload]
        state = DeliveryState.handed if hand else DeliveryState.surfaced
        return [MailItem(seq=r[0], state=state, message=message_from_row(r[2:])) for r in rows]

    def confirm_surfaced(
        self, workspace: str, agent: str, message_ids: Sequence[str], evidence: str, now: datetime
    ) -> list[str]:
        wanted = list(dict.fromkeys(message_ids))
        if not wanted:
            return []
        args = self._mailbox_args(workspace, agent, ids=wanted, at=to_ts(now), detail=evidence)
        rows = self._db.run(lambda conn: conn.execute(handing.CONFIRM_SURFACED, args).fetchall())
        return [r[0] for r in rows]

    def handed_sessions(self, workspace: str, agent: str) -> list[str]:
        return [r[0] for r in self._db.all(handing.HANDED_SESSIONS, {"ws": workspace, "agent": agent})]

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
        ids = None if message_ids is None else list(message_ids)
        args = self._mailbox_args(
            workspace, agent, session=session_id, state=state.value, at=to_ts(now), detail=reason, ids=ids
        )
        rows = self._db.run(lambda conn: conn.execute(handing.RETURN_HANDED, args).fetchall())
        return [r[0] for r in rows]

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
        args = {
            "ws": workspace,
            "agent": agent,
            "message_id": message_id,
            "event": event,
            "at": to_ts(now),
            "session": session,
            "via": via,
            "detail": detail,
        }
        return bool(self._db.run(lambda conn: conn.execute(handing.RECORD_EVENT, args).fetchall()))

    def pair_traffic(self, workspace: str, a: str, b: str, since: datetime, limit: int) -> list[Exchange]:
        one_way = (
            "(SELECT m.sender, m.created_at, d.held_until, d.held_reason, m.id "
            "FROM messages m JOIN deliveries d ON d.message_id = m.id AND d.recipient = {to} "
            "WHERE m.workspace = %(ws)s AND m.sender = {sender} AND m.created_at >= %(since)s "
            "ORDER BY m.created_at DESC LIMIT %(limit)s)"
        )
        rows = self._db.all(
            f"{one_way.format(sender='%(a)s', to='%(b)s')} UNION ALL {one_way.format(sender='%(b)s', to='%(a)s')} "
            "ORDER BY 2 DESC, 5 DESC",
            {"ws": workspace, "a": a, "b": b, "since": to_ts(since), "limit": limit},
        )
        return [exchange_from_row(r) for r in rows]

    def held_mail(self, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
        if agents is not None and not agents:
            return []
        mailboxes = "" if agents is None else " AND d.recipient = ANY(%(agents)s::text[])"
        rows = self._db.all(
            f"SELECT {HELD_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.message_id "
            f"WHERE d.workspace = %(ws)s{mailboxes} AND {held('%(now)s')} ORDER BY d.held_until, d.seq",
            {"ws": workspace, "agents": list(agents or ()), "now": to_ts(now)},
        )
        return [held_mail_from_row(r) for r in rows]

    def unread_count(self, workspace: str, agent: str, hidden: Sequence[str] = ()) -> int:
        where, args = q.window(None, hidden)
        row = self._db.one(
            f"SELECT count(*) FROM deliveries d WHERE d.workspace = %(ws)s AND d.recipient = %(agent)s AND {where}",
            {"ws": workspace, "agent": agent, **args},
        )
        return row[0] if row else 0

    def last_seq(self, workspace: str, agent: str) -> int:
        row = self._db.one("SELECT last_seq FROM agents WHERE workspace = %s AND name = %s", (workspace, agent))
        return row[0] if row else 0

    # --- the audit trail ----------------------------------------------------------------------

    def audit_trail(self, workspace: str, limit: int) -> list[AuditEntry]:
        return [audit_from_row(r) for r in self._db.all(q.AUDIT_TRAIL, (workspace, limit))]

    # --- hub credentials --------------------------------------------------------------------

    def create_token(self, token: NewToken, now: datetime) -> TokenInfo:
        check_token(token)
        try:
            (row,) = self._db.notifying(
                "INSERT INTO tokens (id, kind, workspace, agent, label, secret_hash, created_at) "
                "VALUES (%(id)s, %(kind)s, %(ws)s, %(agent)s, %(label)s, %(hash)s, %(at)s) "
                f"RETURNING {TOKEN_COLUMNS}",
                {
                    "id": token.id,
                    "kind": token.kind,
                    "ws": token.workspace,
                    "agent": token.agent,
                    "label": token.label,
                    "hash": token.secret_hash,
                    "at": to_ts(now),
                },
            )
        except pg_errors.UniqueViolation as error:
            if error.diag.constraint_name == "tokens_secret_hash_key":
                raise TokenTaken("secret_hash") from None
            if error.diag.constraint_name == "tokens_pkey":
                raise TokenTaken("id") from None
            raise
        return token_from_row(row)

    def token_by_hash(self, secret_hash: str) -> TokenInfo | None:
        row = self._db.one(f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE secret_hash = %s", (secret_hash,))
        return token_from_row(row) if row else None

    def list_tokens(self, workspace: str | None = None) -> list[TokenInfo]:
        if workspace is None:
            rows = self._db.all(f"SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY created_at, ordinal")
        else:
            rows = self._db.all(
                f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE workspace = %s ORDER BY created_at, ordinal", (workspace,)
            )
        return [token_from_row(r) for r in rows]

    def revoke_token(self, token_id: str, now: datetime) -> TokenInfo | None:
        rows = self._db.notifying(
            f"UPDATE tokens SET revoked_at = coalesce(revoked_at, %(at)s) WHERE id = %(id)s RETURNING {TOKEN_COLUMNS}",
            {"id": token_id, "at": to_ts(now)},
        )
        return token_from_row(rows[0]) if rows else None
