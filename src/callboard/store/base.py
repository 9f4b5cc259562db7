"""The Store interface: durable state behind the service.

A store keeps rows and makes each method atomic; it holds no mailbox rules (who may post
where, what a send answers) — those live in the service. Every write method commits (and,
for a durable store, reaches stable storage) before it returns. ``tests/store/`` is the
contract: a new implementation passes it unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

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
    TokenKind,
    Workspace,
)
from callboard.pending import Pending
from callboard.remotes import RemoteAgent
from callboard.runners import RunnerReport
from callboard.tasks import PushConfig, Task, TaskArtifact, TaskEvent


@dataclass(frozen=True, slots=True)
class NewDelivery:
    """One recipient's row of a message being stored."""

    recipient: str
    state: DeliveryState  # queued, or delivered when live sessions could read it at send time
    channel: str | None = None
    sessions: Sequence[str] = ()
    target_session: str | None = None  # set when the address named one exact session
    create_agent: bool = False  # the recipient did not exist: create it in the same transaction
    held_until: float | None = None  # a guard holds it back from being surfaced until then (Unix seconds)
    held_reason: str | None = None  # which guard: echo_loop or flood (see guard.py)


@dataclass(frozen=True, slots=True)
class IdempotentSend:
    """What an earlier send with the same idempotency key stored."""

    request_hash: str
    result: SendResult


@dataclass(frozen=True, slots=True)
class StoredMachine:
    name: str
    last_seen: datetime


@dataclass(slots=True)
class NewSession:
    workspace: str
    agent: str
    machine: str
    pid: int
    runtime: str
    proc_start: int | None = None
    terminal: str | None = None
    id: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    # Other agents' open sessions of this process that registering it may end (the service
    # found them not live); any other agent's open session there makes the claim fail.
    may_end: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NewToken:
    id: str
    kind: TokenKind
    secret_hash: str  # sha256 hex of the secret; the secret itself is never stored
    workspace: str | None = None
    agent: str | None = None
    label: str | None = None


@dataclass(frozen=True, slots=True)
class TaskWrite:
    """A task's change that rides on a message: written in the message's transaction, so the
    mail and the task commit together or not at all.

    ``task`` is the task as the change leaves it (its generation counts ``events`` on from
    ``expected_generation``); ``artifacts`` the artifacts it added or changed (whole, as they
    are now). ``expected_generation`` None: a new task, inserted; else the stored row must still
    be at that generation (optimistic: TaskConflict, and nothing is stored, when another change
    came first). Every push config of the task gets one outbox row per event."""

    task: Task
    events: Sequence[TaskEvent]
    expected_generation: int | None = None
    artifacts: Sequence[TaskArtifact] = ()
    a2a_message_id: str | None = None  # the A2A client's message id of the mail, kept beside it
    # The mail goes to this outside A2A agent: its row in the remote outbox, written with it.
    remote_send: NewRemoteSend | None = None


@dataclass(frozen=True, slots=True)
class NewRemoteSend:
    """A message for an outside A2A agent, to be sent by a pump (see RemoteSend)."""

    message_id: str
    remote: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RemoteSend:
    """One message in the remote outbox: pending until the remote took it (tried again, with the
    same message id, until the remote's deadline), then following its task, then done or failed.
    A claimer holds it under a lease, so two pumps never send it at once."""

    workspace: str
    message_id: str
    task_id: str
    remote: str
    state: str  # pending, following, done, failed
    attempts: int
    created_at: datetime
    next_attempt_at: datetime
    last_error: str | None
    remote_task_id: str | None
    remote_context_id: str | None


class TaskConflict(Exception):
    """Raised by submit_message when its TaskWrite found the task changed (or, for a new task,
    already there); nothing of the message was stored. The service reads it again and retries."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


@dataclass(frozen=True, slots=True)
class TaskQuery:
    """Which tasks a list takes: the agent's (as requester or worker), newest updated first,
    after the keyset position ``after`` (updated_at, id) of the previous page."""

    workspace: str
    agent: str
    limit: int
    context_id: str | None = None
    state: str | None = None
    updated_after: float | None = None  # Unix seconds
    after: tuple[float, str] | None = None
    with_agent: str | None = None  # only the tasks between ``agent`` and this one


@dataclass(frozen=True, slots=True)
class PushDelivery:
    """One post of the push outbox, claimed with a lease, with its config's target."""

    id: str
    workspace: str
    task_id: str
    config_id: str
    generation: int
    payload: str  # the TaskEvent's JSON (the poster renders it as A2A wants)
    attempts: int
    url: str
    token: str | None
    auth_scheme: str | None
    auth_credentials: str | None


class DuplicateIdempotencyKey(Exception):
    """Raised by submit_message when (workspace, sender, key) was stored by a racing send."""


class RecipientsGone(Exception):
    """Raised by submit_message when recipients that were not to be created no longer exist
    (deleted since the service looked them up); nothing of the message was stored."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(", ".join(names))
        self.names = list(names)


class TokenTaken(Exception):
    """Raised by create_token when a stored token already has this ``field`` ("id" or
    "secret_hash"); nothing was stored."""

    def __init__(self, field: Literal["id", "secret_hash"]) -> None:
        super().__init__(field)
        self.field = field


class Store(Protocol):
    """Persistence for workspaces, agents, channels, sessions, messages and deliveries."""

    location: str  # a path or URL, for people

    def close(self) -> None: ...

    def change_counter(self) -> int:
        """A number that changes after any process commits a change; cheap enough to poll."""
        ...

    def wait_for_change(self, timeout: float) -> bool:
        """Block until another process may have committed (True: look at ``change_counter``) or
        ``timeout`` passes (False). A store that cannot tell waits a short poll interval and
        says True."""
        ...

    # workspaces and agents
    def ensure_workspace(self, name: str, now: datetime) -> bool: ...
    def list_workspaces(self) -> list[Workspace]: ...
    def ensure_agent(self, workspace: str, name: str, now: datetime) -> bool: ...
    def create_agent(
        self, workspace: str, name: str, description: str | None, skills: list[str], now: datetime
    ) -> bool: ...
    def update_agent(self, workspace: str, name: str, description: str | None, skills: list[str] | None) -> bool: ...
    def get_agent(self, workspace: str, name: str) -> Agent | None: ...
    def list_agents(self, workspace: str) -> list[Agent]: ...
    def delete_agent(
        self, workspace: str, name: str, record: AuditEntry | None = None, *, keep_unread: bool = False
    ) -> int | None:
        """Remove the agent, its mailbox, memberships and sessions (sent messages stay) and append
        ``record``, its detail given ``unread``, in one transaction. The number of unread
        messages its mailbox held, or None when there is no such agent. With ``keep_unread``,
        an agent with unread mail is left as it is (the count says why)."""
        ...

    # channels
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
        """Create the channel with its creator as first member, and append ``record``, in one
        transaction; False if it already exists (then nothing is written)."""
        ...

    def get_channel(self, workspace: str, name: str, viewer: str | None = None) -> Channel | None: ...
    def list_channels(self, workspace: str, viewer: str | None = None) -> list[Channel]: ...
    def join_channel(
        self, workspace: str, channel: str, agent: str, now: datetime, record: AuditEntry | None = None
    ) -> bool:
        """Add the member, and append ``record`` when it was not one, in one transaction; whether
        it was added."""
        ...

    def leave_channel(self, workspace: str, channel: str, agent: str, record: AuditEntry | None = None) -> bool:
        """Remove the member, and append ``record`` when it was one, in one transaction; whether
        it was removed."""
        ...

    def channel_members(self, workspace: str, channel: str) -> list[ChannelMember]: ...
    def channel_member_names(self, workspace: str, channel: str) -> list[str]:
        """The members' names, sorted: what a post needs (a channel may have thousands)."""
        ...

    # sessions and machines
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

    def end_session(self, workspace: str, session_id: str, now: datetime) -> Session | None: ...
    def get_session(self, workspace: str, session_id: str) -> Session | None: ...
    def list_sessions(self, workspace: str, agent: str | None = None, include_ended: bool = False) -> list[Session]: ...
    def list_machines(self, workspace: str) -> list[StoredMachine]: ...

    # messages and mailboxes
    def find_idempotent(self, workspace: str, sender: str, key: str) -> IdempotentSend | None: ...
    def submit_message(
        self,
        message: Message,
        deliveries: Sequence[NewDelivery],
        result: SendResult,
        idempotency_key: str | None,
        request_hash: str | None,
        task: TaskWrite | None = None,
    ) -> Pending[dict[str, int]]:
        """Store the message and one delivery per recipient, each with the recipient's next
        sequence number, and ``task``'s change with it: the future resolves once that is
        durable, to the numbers by recipient (a server awaits it; anyone else calls
        ``.result()``), or fails with DuplicateIdempotencyKey, or RecipientsGone when a
        recipient that need not be created does not exist, or TaskConflict."""
        ...

    def get_message(self, workspace: str, message_id: str) -> Message | None: ...
    def task_ids_of(self, workspace: str, message_ids: Sequence[str]) -> list[str]:
        """The tasks these messages belong to (each once; messages of no task pass over)."""
        ...

    def thread_party(self, workspace: str, thread_id: str, agent: str) -> bool | None:
        """Whether ``agent`` sent or received a message of this thread; None when no message of
        the workspace is in it."""
        ...

    def send_result(self, workspace: str, message_id: str) -> SendResult | None: ...
    def delivery_statuses(self, workspace: str, message_id: str) -> list[RecipientStatus]: ...
    def claim(
        self, workspace: str, agent: str, after: int | None, limit: int, now: datetime, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        """Return and mark read, in one transaction, the agent's unread deliveries in sequence
        order — or, with ``after``, every delivery past that sequence number. Deliveries pushed
        to a session in ``hidden`` (another live session's mail) are skipped, here and below."""
        ...

    def peek(
        self, workspace: str, agent: str, after: int | None, limit: int, hidden: Sequence[str] = ()
    ) -> list[MailItem]: ...
    def mailbox(self, workspace: str, agent: str, include_acked: bool, limit: int) -> list[MailItem]:
        """The newest ``limit`` deliveries (unacked only unless asked), oldest first."""
        ...

    def ack(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        """Mark these messages acked (and read). Returns the ids not in this mailbox; when any
        is missing nothing is written."""
        ...

    def mark_read(self, workspace: str, agent: str, message_ids: Sequence[str], now: datetime) -> list[str]:
        """Mark these messages read (a later state stays). Returns the ids not in this mailbox;
        when any is missing nothing is written."""
        ...

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
        """Return and mark surfaced (by ``via``), in one transaction, the agent's deliveries that
        are neither handed, surfaced nor read yet, in sequence order; with ``urgent_only``,
        urgent ones. With ``hand``, mark them handed to ``session`` instead. Each is recorded in
        its history. With ``peek``, return them and mark nothing."""
        ...

    def confirm_surfaced(
        self, workspace: str, agent: str, message_ids: Sequence[str], evidence: str, now: datetime
    ) -> list[str]:
        """Mark surfaced those of these messages that are handed (to any session of ``agent``),
        recording ``evidence``; their ids."""
        ...

    def handed_sessions(self, workspace: str, agent: str) -> list[str]:
        """The sessions holding mail of ``agent`` handed to them and not surfaced yet."""
        ...

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
        """Put the mail handed to ``session_id`` (only these messages, when given) and not
        surfaced back in the mailbox, unread, in ``state`` (delivered or queued), recording
        ``reason``; the ids returned."""
        ...

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
        """Append an event to the history of the message's delivery to ``agent``; False when
        there is no such delivery (nothing is written)."""
        ...

    def unread_count(self, workspace: str, agent: str, hidden: Sequence[str] = ()) -> int: ...
    def last_seq(self, workspace: str, agent: str) -> int: ...

    # the facts the loop and flood guards decide on (guard.py)
    def pair_traffic(self, workspace: str, a: str, b: str, since: datetime, limit: int) -> list[Exchange]:
        """The newest ``limit`` messages from ``a`` to ``b`` sent since ``since``, and as many
        from ``b`` to ``a``: one list, newest first, each with what a guard decided for it."""
        ...

    def held_mail(self, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
        """The mail of these mailboxes (None: all of the workspace's) a guard holds at ``now``
        (neither surfaced nor read), in the order it is let through."""
        ...

    # the audit trail
    def audit_trail(self, workspace: str, limit: int) -> list[AuditEntry]:
        """The workspace's newest ``limit`` records, newest first."""
        ...

    # hub credentials
    def create_token(self, token: NewToken, now: datetime) -> TokenInfo:
        """Store the token; TokenTaken when its id or secret hash is already stored."""
        ...

    def token_by_hash(self, secret_hash: str) -> TokenInfo | None:
        """The token with this secret hash, revoked or not (the caller checks ``revoked_at``)."""
        ...

    def list_tokens(self, workspace: str | None = None) -> list[TokenInfo]:
        """Tokens of one workspace (None: every token, admin ones included), oldest first."""
        ...

    def revoke_token(self, token_id: str, now: datetime) -> TokenInfo | None:
        """Mark revoked (keeping the first revocation time); None when no such token."""
        ...

    # tasks (their rules are tasks.py's and the service's; written by submit_message's TaskWrite)
    def get_task(self, workspace: str, task_id: str) -> Task | None:
        """The task with its artifacts (no history), or None."""
        ...

    def list_tasks(self, query: TaskQuery) -> tuple[list[Task], int]:
        """A page of the agent's tasks (see TaskQuery), and how many match without paging."""
        ...

    def task_events(self, workspace: str, task_id: str, after_generation: int) -> list[TaskEvent]:
        """The task's events past ``after_generation``, oldest first."""
        ...

    def task_messages(self, workspace: str, task_id: str, limit: int) -> list[Message]:
        """The task's newest ``limit`` messages, oldest first."""
        ...

    # push-notification configs, and the outbox of their posts
    def set_push_config(self, workspace: str, config: PushConfig) -> PushConfig:
        """Store the config, replacing one of the same task and id."""
        ...

    def get_push_config(self, workspace: str, task_id: str, config_id: str) -> PushConfig | None: ...
    def list_push_configs(self, workspace: str, task_id: str) -> list[PushConfig]: ...
    def delete_push_config(self, workspace: str, task_id: str, config_id: str) -> bool:
        """Whether it was there; its posts not yet made are dropped with it."""
        ...

    def claim_push_deliveries(self, now: datetime, lease_seconds: float, limit: int) -> list[PushDelivery]:
        """Take up to ``limit`` due posts (not delivered, next attempt reached, no live lease),
        oldest first, leasing them until ``now + lease_seconds``: no other claimer takes them
        meanwhile, and a claimer that died lets them come due again when the lease ends."""
        ...

    def push_delivered(self, delivery_id: str, now: datetime) -> None: ...
    def push_failed(self, delivery_id: str, error: str, retry_at: datetime | None) -> None:
        """Record a failed attempt; it comes due again at ``retry_at`` (None: given up)."""
        ...

    # outside A2A agents (service/remotes.py) and the outbox of mail to them (a2a/remote_pump.py)
    def add_remote_agent(self, remote: RemoteAgent, token: str | None) -> None:
        """Register (or replace) the outside agent, creating its workspace and agent row."""
        ...

    def get_remote_agent(self, workspace: str, name: str) -> tuple[RemoteAgent, str | None] | None:
        """The outside agent and its token, or None."""
        ...

    def remote_agent_by_url(self, workspace: str, url: str) -> RemoteAgent | None: ...
    def list_remote_agents(self, workspace: str, names: Sequence[str] | None = None) -> list[RemoteAgent]:
        """The workspace's outside agents (only those of ``names``, when given), by name."""
        ...

    def delete_remote_agent(self, workspace: str, name: str) -> bool:
        """Whether it was registered; its mail not yet sent is failed with it."""
        ...

    def claim_remote_sends(self, now: datetime, lease_seconds: float, limit: int) -> list[RemoteSend]:
        """Take up to ``limit`` due rows (pending or following, next attempt reached, no live
        lease), oldest first, leasing them until ``now + lease_seconds``."""
        ...

    def renew_remote_send(self, workspace: str, message_id: str, lease_until: datetime) -> None: ...
    def remote_send_started(self, workspace: str, message_id: str, remote_task_id: str, remote_context_id: str) -> None:
        """The remote took the message: its task's ids are kept, the row is following."""
        ...

    def remote_send_retry(self, workspace: str, message_id: str, error: str | None, retry_at: datetime) -> None: ...
    def remote_send_finished(self, workspace: str, message_id: str, state: str, error: str | None) -> None:
        """Done or failed: never claimed again."""
        ...

    def remote_sends(
        self, workspace: str, *, task_id: str | None = None, message_id: str | None = None
    ) -> list[RemoteSend]:
        """The outbox rows of a task (oldest first) or of one message."""
        ...

    # runners' reports of themselves (service/runner_reports.py), one row per (workspace, agent, machine)
    def put_runner_report(self, workspace: str, report: RunnerReport) -> None:
        """Keep ``report`` as its runner's newest, replacing the one of the same agent and machine."""
        ...

    def runner_reports(self, workspace: str, agent: str | None = None) -> list[RunnerReport]:
        """The workspace's runner reports (of ``agent`` only, when given), newest update first;
        ``live`` as the runner wrote it (the service marks it)."""
        ...
