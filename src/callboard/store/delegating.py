"""What the SQLite and PostgreSQL stores share: a Store whose methods are its part modules' functions.

Each store keeps its schema in modules of its own folder, one a part — ``directory`` (workspaces,
agents, channels), ``sessions``, ``sent`` (reading a send back), ``mailbox`` (reading and
marking one), ``handing`` (mail handed to a session), ``guard_facts``, ``audit``, ``tasks`` (tasks, their
push configs and outbox), ``remotes`` (outside A2A agents and their outbox), ``tokens``, ``runners`` —
whose functions take the store's database first and the Store method's arguments after, in the
same order. ``DelegatingStore`` is that mapping, written once: each Store method here is the
function of the same name (``ack`` and ``mark_read`` are ``mailbox.mark``) on ``self._db``.

A concrete store opens its database and names its modules (``Parts.of``); what really differs
between the stores stays in it: ``submit_message`` (SQLite passes its fan-out threshold),
``change_counter``, ``committing_on_loop`` and their extras.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from types import ModuleType
from typing import ClassVar, Generic, Protocol, TypeVar

from callboard.guards import Exchange
from callboard.model import (
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
from callboard.remotes import RemoteAgent
from callboard.runners import RunnerReport
from callboard.store.base import (
    IdempotentSend,
    NewSession,
    NewToken,
    PushDelivery,
    RemoteSend,
    Store,
    StoredMachine,
    TaskQuery,
)
from callboard.tasks import PushConfig, Task, TaskEvent


class Database(Protocol):
    """What this class asks of a store's database itself; the part modules ask the rest."""

    def close(self) -> None: ...


DB = TypeVar("DB", bound=Database)


@dataclass(frozen=True, slots=True)
class Parts:
    """A store's part modules (see the module's docstring)."""

    directory: ModuleType
    sessions: ModuleType
    sent: ModuleType
    mailbox: ModuleType
    handing: ModuleType
    guard_facts: ModuleType
    audit: ModuleType
    remotes: ModuleType
    tasks: ModuleType
    tokens: ModuleType
    runners: ModuleType

    @classmethod
    def of(cls, *modules: ModuleType) -> Parts:
        """The parts, each module taken by its own name (``….sqlite.directory`` is ``directory``):
        there is no order to get wrong, and a module missing or extra fails here, on import."""
        return cls(**{module.__name__.rpartition(".")[2]: module for module in modules})


class DelegatingStore(Store, Generic[DB]):
    """The Store methods that are one call of a part module's function on the database."""

    # Set by each concrete store to its own folder's modules: the same for all its instances.
    _parts: ClassVar[Parts]

    def __init__(self, db: DB) -> None:
        self._db = db

    def close(self) -> None:
        self._db.close()

    # --- workspaces and agents ------------------------------------------------------------

    def ensure_workspace(self, name: str, now: datetime) -> bool:
        return self._parts.directory.ensure_workspace(self._db, name, now)

    def list_workspaces(self) -> list[Workspace]:
        return self._parts.directory.list_workspaces(self._db)

    def ensure_agent(self, workspace: str, name: str, now: datetime) -> bool:
        return self._parts.directory.ensure_agent(self._db, workspace, name, now)

    def create_agent(
        self, workspace: str, name: str, description: str | None, skills: list[str], now: datetime
    ) -> bool:
        return self._parts.directory.create_agent(self._db, workspace, name, description, skills, now)

    def update_agent(self, workspace: str, name: str, description: str | None, skills: list[str] | None) -> bool:
        return self._parts.directory.update_agent(self._db, workspace, name, description, skills)

    def get_agent(self, workspace: str, name: str) -> Agent | None:
        return self._parts.directory.get_agent(self._db, workspace, name)

    def list_agents(self, workspace: str) -> list[Agent]:
        return self._parts.directory.list_agents(self._db, workspace)

    def delete_agent(
        self, workspace: str, name: str, record: AuditEntry | None = None, *, keep_unread: bool = False
    ) -> int | None:
        return self._parts.directory.delete_agent(self._db, workspace, name, record, keep_unread)

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
        return self._parts.directory.create_channel(
            self._db, workspace, name, creator, description, now, invite_only, record
        )

    def get_channel(self, workspace: str, name: str, viewer: str | None = None) -> Channel | None:
        return self._parts.directory.get_channel(self._db, workspace, name, viewer)

    def list_channels(self, workspace: str, viewer: str | None = None) -> list[Channel]:
        return self._parts.directory.list_channels(self._db, workspace, viewer)

    def join_channel(
        self, workspace: str, channel: str, agent: str, now: datetime, record: AuditEntry | None = None
    ) -> bool:
        return self._parts.directory.join_channel(self._db, workspace, channel, agent, now, record)

    def leave_channel(self, workspace: str, channel: str, agent: str, record: AuditEntry | None = None) -> bool:
        return self._parts.directory.leave_channel(self._db, workspace, channel, agent, record)

    def channel_members(self, workspace: str, channel: str) -> list[ChannelMember]:
        return self._parts.directory.channel_members(self._db, workspace, channel)

    def channel_member_names(self, workspace: str, channel: str) -> list[str]:
        return self._parts.directory.channel_member_names(self._db, workspace, channel)

    # --- sessions and machines --------------------------------------------------------------

    def register_session(self, session: NewSession, now: datetime) -> Session | None:
        return self._parts.sessions.register_session(self._db, session, now)

    def touch_session(
        self, workspace: str, session_id: str, now: datetime, delivery_error: str | None = None
    ) -> Session | None:
        return self._parts.sessions.touch_session(self._db, workspace, session_id, now, delivery_error)

    def end_session(self, workspace: str, session_id: str, now: datetime) -> Session | None:
        return self._parts.sessions.end_session(self._db, workspace, session_id, now)

    def get_session(self, workspace: str, session_id: str) -> Session | None:
        return self._parts.sessions.get_session(self._db, workspace, session_id)

    def list_sessions(self, workspace: str, agent: str | None = None, include_ended: bool = False) -> list[Session]:
        return self._parts.sessions.list_sessions(self._db, workspace, agent, include_ended)

    def list_machines(self, workspace: str) -> list[StoredMachine]:
        return self._parts.sessions.list_machines(self._db, workspace)

    # --- messages ----------------------------------------------------------------------------

    def find_idempotent(self, workspace: str, sender: str, key: str) -> IdempotentSend | None:
        return self._parts.sent.find_idempotent(self._db, workspace, sender, key)

    def get_message(self, workspace: str, message_id: str) -> Message | None:
        return self._parts.sent.get_message(self._db, workspace, message_id)

    def task_ids_of(self, workspace: str, message_ids: Sequence[str]) -> list[str]:
        return self._parts.sent.task_ids_of(self._db, workspace, message_ids) if message_ids else []

    def thread_party(self, workspace: str, thread_id: str, agent: str) -> bool | None:
        return self._parts.sent.thread_party(self._db, workspace, thread_id, agent)

    def send_result(self, workspace: str, message_id: str) -> SendResult | None:
        return self._parts.sent.send_result(self._db, workspace, message_id)

    def delivery_statuses(self, workspace: str, message_id: str) -> list[RecipientStatus]:
        return self._parts.sent.delivery_statuses(self._db, workspace, message_id)

    # --- mailboxes ---------------------------------------------------------------------------

    def claim(
        self, workspace: str, agent: str, after: int | None, limit: int, now: datetime, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        return self._parts.mailbox.claim(self._db, workspace, agent, after, limit, now, hidden)

    def peek(
        self, workspace: str, agent: str, after: int | None, limit: int, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        return self._parts.mailbox.peek(self._db, workspace, agent, after, limit, hidden)

    def mailbox(self, workspace: str, agent: str, include_acked: bool, limit: int) -> list[MailItem]:
        return self._parts.mailbox.mailbox(self._db, workspace, agent, include_acked, limit)

    def ack(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        return self._parts.mailbox.mark(self._db, workspace, agent, message_ids, self._parts.mailbox.ACK, now)

    def mark_read(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        return self._parts.mailbox.mark(self._db, workspace, agent, message_ids, self._parts.mailbox.MARK_READ, now)

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
        return self._parts.mailbox.surface(
            self._db, workspace, agent, via, urgent_only, limit, now, peek, hidden, session, hand
        )

    def unread_count(self, workspace: str, agent: str, hidden: Sequence[str] = ()) -> int:
        return self._parts.mailbox.unread_count(self._db, workspace, agent, hidden)

    def last_seq(self, workspace: str, agent: str) -> int:
        return self._parts.mailbox.last_seq(self._db, workspace, agent)

    # --- mail handed to a session ---------------------------------------------------------------

    def confirm_surfaced(
        self, workspace: str, agent: str, message_ids: Sequence[str], evidence: str, now: datetime
    ) -> list[str]:
        return self._parts.handing.confirm_surfaced(self._db, workspace, agent, message_ids, evidence, now)

    def handed_sessions(self, workspace: str, agent: str) -> list[str]:
        return self._parts.handing.handed_sessions(self._db, workspace, agent)

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
        return self._parts.handing.return_handed(
            self._db, workspace, agent, session_id, state, reason, now, message_ids
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
        return self._parts.handing.record_delivery_event(
            self._db, workspace, agent, message_id, event, now, session, via, detail
        )

    # --- the facts the guards decide on ---------------------------------------------------------

    def pair_traffic(self, workspace: str, a: str, b: str, since: datetime, limit: int) -> list[Exchange]:
        return self._parts.guard_facts.pair_traffic(self._db, workspace, a, b, since, limit)

    def held_mail(self, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
        return self._parts.guard_facts.held_mail(self._db, workspace, agents, now)

    # --- the audit trail and hub credentials ------------------------------------------------------

    def audit_trail(self, workspace: str, limit: int) -> list[AuditEntry]:
        return self._parts.audit.audit_trail(self._db, workspace, limit)

    def create_token(self, token: NewToken, now: datetime) -> TokenInfo:
        return self._parts.tokens.create_token(self._db, token, now)

    def token_by_hash(self, secret_hash: str) -> TokenInfo | None:
        return self._parts.tokens.token_by_hash(self._db, secret_hash)

    def list_tokens(self, workspace: str | None = None) -> list[TokenInfo]:
        return self._parts.tokens.list_tokens(self._db, workspace)

    def revoke_token(self, token_id: str, now: datetime) -> TokenInfo | None:
        return self._parts.tokens.revoke_token(self._db, token_id, now)

    # --- tasks, their push configs and the outbox of their posts ----------------------------------

    def get_task(self, workspace: str, task_id: str) -> Task | None:
        return self._parts.tasks.get_task(self._db, workspace, task_id)

    def list_tasks(self, query: TaskQuery) -> tuple[list[Task], int]:
        return self._parts.tasks.list_tasks(self._db, query)

    def task_events(self, workspace: str, task_id: str, after_generation: int) -> list[TaskEvent]:
        return self._parts.tasks.task_events(self._db, workspace, task_id, after_generation)

    def task_messages(self, workspace: str, task_id: str, limit: int) -> list[Message]:
        return self._parts.tasks.task_messages(self._db, workspace, task_id, limit)

    def set_push_config(self, workspace: str, config: PushConfig) -> PushConfig:
        return self._parts.tasks.set_push_config(self._db, workspace, config)

    def get_push_config(self, workspace: str, task_id: str, config_id: str) -> PushConfig | None:
        return self._parts.tasks.get_push_config(self._db, workspace, task_id, config_id)

    def list_push_configs(self, workspace: str, task_id: str) -> list[PushConfig]:
        return self._parts.tasks.list_push_configs(self._db, workspace, task_id)

    def delete_push_config(self, workspace: str, task_id: str, config_id: str) -> bool:
        return self._parts.tasks.delete_push_config(self._db, workspace, task_id, config_id)

    def claim_push_deliveries(self, now: datetime, lease_seconds: float, limit: int) -> list[PushDelivery]:
        return self._parts.tasks.claim_push_deliveries(self._db, now, lease_seconds, limit)

    def push_delivered(self, delivery_id: str, now: datetime) -> None:
        self._parts.tasks.push_delivered(self._db, delivery_id, now)

    def push_failed(self, delivery_id: str, error: str, retry_at: datetime | None) -> None:
        self._parts.tasks.push_failed(self._db, delivery_id, error, retry_at)

    # --- outside A2A agents and the outbox of mail to them ------------------------------------------

    def add_remote_agent(self, remote: RemoteAgent, token: str | None) -> None:
        self._parts.remotes.add_remote_agent(self._db, remote, token)

    def get_remote_agent(self, workspace: str, name: str) -> tuple[RemoteAgent, str | None] | None:
        return self._parts.remotes.get_remote_agent(self._db, workspace, name)

    def remote_agent_by_url(self, workspace: str, url: str) -> RemoteAgent | None:
        return self._parts.remotes.remote_agent_by_url(self._db, workspace, url)

    def list_remote_agents(self, workspace: str, names: Sequence[str] | None = None) -> list[RemoteAgent]:
        return self._parts.remotes.list_remote_agents(self._db, workspace, names)

    def delete_remote_agent(self, workspace: str, name: str) -> bool:
        return self._parts.remotes.delete_remote_agent(self._db, workspace, name)

    def claim_remote_sends(self, now: datetime, lease_seconds: float, limit: int) -> list[RemoteSend]:
        return self._parts.remotes.claim_remote_sends(self._db, now, lease_seconds, limit)

    def renew_remote_send(self, workspace: str, message_id: str, lease_until: datetime) -> None:
        self._parts.remotes.renew_remote_send(self._db, workspace, message_id, lease_until)

    def remote_send_started(self, workspace: str, message_id: str, remote_task_id: str, remote_context_id: str) -> None:
        self._parts.remotes.remote_send_started(self._db, workspace, message_id, remote_task_id, remote_context_id)

    def remote_send_retry(self, workspace: str, message_id: str, error: str | None, retry_at: datetime) -> None:
        self._parts.remotes.remote_send_retry(self._db, workspace, message_id, error, retry_at)

    def remote_send_finished(self, workspace: str, message_id: str, state: str, error: str | None) -> None:
        self._parts.remotes.remote_send_finished(self._db, workspace, message_id, state, error)

    def remote_sends(
        self, workspace: str, *, task_id: str | None = None, message_id: str | None = None
    ) -> list[RemoteSend]:
        return self._parts.remotes.remote_sends(self._db, workspace, task_id=task_id, message_id=message_id)

    # --- runner reports ----------------------------------------------------------------------

    def put_runner_report(self, workspace: str, report: RunnerReport) -> None:
        self._parts.runners.put_runner_report(self._db, workspace, report)

    def runner_reports(self, workspace: str, agent: str | None = None) -> list[RunnerReport]:
        return self._parts.runners.runner_reports(self._db, workspace, agent)
