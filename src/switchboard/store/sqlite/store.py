"""The embedded store: one SQLite file, shared safely by many processes.

Every method is one short transaction on the file (see ``connection``): WAL lets readers and
one writer work at once, and every commit reaches the disk before it returns. Each write hands
its transaction's body to ``transact`` as a function, so that with group commit (the hub's)
many of them run in one transaction.

``SQLiteStore`` is the Store interface and nothing more: each method is the function of the
same name in the module for its part of the schema — ``directory`` (workspaces, agents,
channels), ``sessions``, ``messages`` (storing a send), ``sent`` (reading it back),
``mailbox`` (reading and marking one), ``handing`` (mail handed to a session),
``guard_facts``, ``audit``, ``tokens``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime

from switchboard.delivery.guard import Exchange
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
)
from switchboard.pending import Pending
from switchboard.store.base import IdempotentSend, NewDelivery, NewSession, NewToken, StoredMachine
from switchboard.store.sqlite import (
    audit,
    directory,
    guard_facts,
    handing,
    mailbox,
    messages,
    sent,
    sessions,
    tokens,
)
from switchboard.store.sqlite.connection import SQLiteDatabase


class SQLiteStore:
    """The Store interface on one SQLite database file."""

    def __init__(self, path: str | os.PathLike[str], *, group_commit: bool = False) -> None:
        """``group_commit``: batch the writes of concurrent threads into shared transactions
        (one fsync each) — for a server; a single-threaded process gains nothing from it."""
        self._db = SQLiteDatabase(path, group_commit=group_commit)
        self.path = self._db.path
        self.location = str(self.path)
        # Sends to this many recipients or more are answered before their deliveries are
        # written out, when group-committed on a loop (see messages).
        self.fan_out_later_from = messages.FAN_OUT_LATER_FROM
        try:
            messages.deliveries_written(self._db)  # a hub that stopped short of writing some out (a crash)
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

    # --- workspaces and agents ------------------------------------------------------------

    def ensure_workspace(self, name: str, now: datetime) -> bool:
        return directory.ensure_workspace(self._db, name, now)

    def list_workspaces(self) -> list[Workspace]:
        return directory.list_workspaces(self._db)

    def ensure_agent(self, workspace: str, name: str, now: datetime) -> bool:
        return directory.ensure_agent(self._db, workspace, name, now)

    def create_agent(
        self, workspace: str, name: str, description: str | None, skills: list[str], now: datetime
    ) -> bool:
        return directory.create_agent(self._db, workspace, name, description, skills, now)

    def update_agent(self, workspace: str, name: str, description: str | None, skills: list[str] | None) -> bool:
        return directory.update_agent(self._db, workspace, name, description, skills)

    def get_agent(self, workspace: str, name: str) -> Agent | None:
        return directory.get_agent(self._db, workspace, name)

    def list_agents(self, workspace: str) -> list[Agent]:
        return directory.list_agents(self._db, workspace)

    def delete_agent(
        self, workspace: str, name: str, record: AuditEntry | None = None, *, keep_unread: bool = False
    ) -> int | None:
        return directory.delete_agent(self._db, workspace, name, record, keep_unread)

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
        return directory.create_channel(self._db, workspace, name, creator, description, now, invite_only, record)

    def get_channel(self, workspace: str, name: str, viewer: str | None = None) -> Channel | None:
        return directory.get_channel(self._db, workspace, name, viewer)

    def list_channels(self, workspace: str, viewer: str | None = None) -> list[Channel]:
        return directory.list_channels(self._db, workspace, viewer)

    def join_channel(
        self, workspace: str, channel: str, agent: str, now: datetime, record: AuditEntry | None = None
    ) -> bool:
        return directory.join_channel(self._db, workspace, channel, agent, now, record)

    def leave_channel(self, workspace: str, channel: str, agent: str, record: AuditEntry | None = None) -> bool:
        return directory.leave_channel(self._db, workspace, channel, agent, record)

    def channel_members(self, workspace: str, channel: str) -> list[ChannelMember]:
        return directory.channel_members(self._db, workspace, channel)

    def channel_member_names(self, workspace: str, channel: str) -> list[str]:
        return directory.channel_member_names(self._db, workspace, channel)

    # --- sessions and machines --------------------------------------------------------------

    def register_session(self, session: NewSession, now: datetime) -> Session | None:
        return sessions.register_session(self._db, session, now)

    def touch_session(
        self, workspace: str, session_id: str, now: datetime, delivery_error: str | None = None
    ) -> Session | None:
        return sessions.touch_session(self._db, workspace, session_id, now, delivery_error)

    def end_session(self, workspace: str, session_id: str, now: datetime) -> Session | None:
        return sessions.end_session(self._db, workspace, session_id, now)

    def get_session(self, workspace: str, session_id: str) -> Session | None:
        return sessions.get_session(self._db, workspace, session_id)

    def list_sessions(self, workspace: str, agent: str | None = None, include_ended: bool = False) -> list[Session]:
        return sessions.list_sessions(self._db, workspace, agent, include_ended)

    def list_machines(self, workspace: str) -> list[StoredMachine]:
        return sessions.list_machines(self._db, workspace)

    # --- messages ----------------------------------------------------------------------------

    def find_idempotent(self, workspace: str, sender: str, key: str) -> IdempotentSend | None:
        return sent.find_idempotent(self._db, workspace, sender, key)

    def submit_message(
        self,
        message: Message,
        deliveries: Sequence[NewDelivery],
        result: SendResult,
        idempotency_key: str | None,
        request_hash: str | None,
    ) -> Pending[dict[str, int]]:
        return messages.submit_message(
            self._db, message, deliveries, result, idempotency_key, request_hash, self.fan_out_later_from
        )

    def get_message(self, workspace: str, message_id: str) -> Message | None:
        return sent.get_message(self._db, workspace, message_id)

    def thread_party(self, workspace: str, thread_id: str, agent: str) -> bool | None:
        return sent.thread_party(self._db, workspace, thread_id, agent)

    def send_result(self, workspace: str, message_id: str) -> SendResult | None:
        return sent.send_result(self._db, workspace, message_id)

    def delivery_statuses(self, workspace: str, message_id: str) -> list[RecipientStatus]:
        return sent.delivery_statuses(self._db, workspace, message_id)

    # --- mailboxes ---------------------------------------------------------------------------

    def claim(
        self, workspace: str, agent: str, after: int | None, limit: int, now: datetime, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        return mailbox.claim(self._db, workspace, agent, after, limit, now, hidden)

    def peek(
        self, workspace: str, agent: str, after: int | None, limit: int, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        return mailbox.peek(self._db, workspace, agent, after, limit, hidden)

    def mailbox(self, workspace: str, agent: str, include_acked: bool, limit: int) -> list[MailItem]:
        return mailbox.mailbox(self._db, workspace, agent, include_acked, limit)

    def ack(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        return mailbox.mark(self._db, workspace, agent, message_ids, mailbox.ACK, now)

    def mark_read(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        return mailbox.mark(self._db, workspace, agent, message_ids, mailbox.MARK_READ, now)

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
        return mailbox.surface(self._db, workspace, agent, via, urgent_only, limit, now, peek, hidden, session, hand)

    def unread_count(self, workspace: str, agent: str, hidden: Sequence[str] = ()) -> int:
        return mailbox.unread_count(self._db, workspace, agent, hidden)

    def last_seq(self, workspace: str, agent: str) -> int:
        return mailbox.last_seq(self._db, workspace, agent)

    # --- mail handed to a session ---------------------------------------------------------------

    def confirm_surfaced(
        self, workspace: str, agent: str, message_ids: Sequence[str], evidence: str, now: datetime
    ) -> list[str]:
        return handing.confirm_surfaced(self._db, workspace, agent, message_ids, evidence, now)

    def handed_sessions(self, workspace: str, agent: str) -> list[str]:
        return handing.handed_sessions(self._db, workspace, agent)

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
        return handing.return_handed(self._db, workspace, agent, session_id, state, reason, now, message_ids)

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
        return handing.record_delivery_event(self._db, workspace, agent, message_id, event, now, session, via, detail)

    # --- the facts the guards decide on ---------------------------------------------------------

    def pair_traffic(self, workspace: str, a: str, b: str, since: datetime, limit: int) -> list[Exchange]:
        return guard_facts.pair_traffic(self._db, workspace, a, b, since, limit)

    def held_mail(self, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
        return guard_facts.held_mail(self._db, workspace, agents, now)

    # --- the audit trail and hub credentials ------------------------------------------------------

    def audit_trail(self, workspace: str, limit: int) -> list[AuditEntry]:
        return audit.audit_trail(self._db, workspace, limit)

    def create_token(self, token: NewToken, now: datetime) -> TokenInfo:
        return tokens.create_token(self._db, token, now)

    def token_by_hash(self, secret_hash: str) -> TokenInfo | None:
        return tokens.token_by_hash(self._db, secret_hash)

    def list_tokens(self, workspace: str | None = None) -> list[TokenInfo]:
        return tokens.list_tokens(self._db, workspace)

    def revoke_token(self, token_id: str, now: datetime) -> TokenInfo | None:
        return tokens.revoke_token(self._db, token_id, now)
