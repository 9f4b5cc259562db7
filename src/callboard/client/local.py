"""``LocalClient``: the Client interface on a Service in this process (the embedded store)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from callboard.address import parse_machine, parse_name
from callboard.client.background import BackgroundWork, RemotePumping
from callboard.client.base import NOTHING_AFTER_SEND, AfterSend, task_sent
from callboard.config import Settings
from callboard.errors import NoIdentity
from callboard.identity import SessionHint, acting_pid, machine_name, resolve_agent
from callboard.leases import Lease, LeaseTaken
from callboard.model import (
    AckResult,
    Agent,
    AuditEntry,
    Caller,
    Channel,
    ChannelMember,
    DeletedAgent,
    MailItem,
    MarkResult,
    MessageStatus,
    Part,
    Reach,
    ReadResult,
    SendResult,
    Session,
    WhoAmI,
    WhoReport,
    Workspace,
)
from callboard.procs import process_start_time
from callboard.remotes import RemoteAgent
from callboard.requests import (
    InboxQuery,
    LeaseCheck,
    LeaseRelease,
    LeaseRenewal,
    LeaseRequest,
    ReadQuery,
    RoundProposal,
    RoundRequest,
    RoundVote,
    SendRequest,
    SessionRequest,
    SurfaceQuery,
    TaskListQuery,
    TaskRequest,
)
from callboard.rounds import RoundActed, RoundInfo
from callboard.runners import RunnerReport
from callboard.service.door import Service
from callboard.service.remotes import CardSource
from callboard.store.opening import open_store
from callboard.tasks import Task, TaskArtifact, TaskPage, TaskSent, TaskState


class LocalClient:
    """The Client interface on a Service in this process (the embedded store)."""

    def __init__(
        self,
        service: Service,
        caller: Caller,
        identity_source: str = "given",
        session: SessionHint | None = None,
        *,
        owns_store: bool = True,
        remote_pumping: RemotePumping | None = None,
    ) -> None:
        self.service = service
        self.after_send: AfterSend = NOTHING_AFTER_SEND
        self.caller = caller
        self.identity_source = identity_source
        self.session = session
        self._owns_store = owns_store  # another client's (as_agent): closing this one leaves it open
        # The store's background work is its opener's (as_agent's clients have none of their own).
        self.background = BackgroundWork(service, remote_pumping if owns_store else None)
        self._counted: int | None = None  # the unread count the last call brought (a read's)

    @classmethod
    def open(
        cls,
        settings: Settings | None = None,
        *,
        agent: str | None = None,
        env: Mapping[str, str] = os.environ,
        cwd: Path | None = None,
        card_source: CardSource | None = None,
        remote_pumping: RemotePumping | None = None,
    ) -> LocalClient:
        """Open the embedded store and act as ``agent`` (default: the identity rule's answer; when
        it names none, as the person at this machine, who may look but not act: no_identity then);
        ``card_source``: how outside A2A agents' cards are fetched, ``remote_pumping``: how mail to
        them is sent (the composition root gives both: the client knows no A2A)."""
        settings = settings or Settings.load(env)
        source = "given"
        if agent is None:
            try:
                identity = resolve_agent(env, cwd or Path.cwd(), settings.agent)
            except NoIdentity:  # the person at this machine: looking needs no agent
                source = "none"
            else:
                agent, source = identity.name, identity.source
        else:
            agent = parse_name(agent, "agent name")
        workspace = settings.workspace_in(env)
        service = Service(open_store(settings.store_location), machine=machine_name(env), card_source=card_source)
        caller = Caller(workspace=workspace, agent=agent)
        return cls(service, caller, source, SessionHint.from_env(env), remote_pumping=remote_pumping)

    def _as(self) -> Caller:
        # Nothing is created here: an operation that acts as the agent creates it in its own
        # step (the service's rule); one that only looks, or fails, writes nothing.
        self._counted = None  # a new call: what the last one counted is past
        if self.session is None:
            return self.caller
        # Asked at each call: the session may be registered after the client opened (an MCP
        # server's keeper registers its parent's session once serving).
        return self.service.directory.in_session(
            self.caller, session_id=self.session.session_id, lineage=self.session.lineage
        )

    def as_agent(self, agent: str, session_id: str | None = None) -> LocalClient:
        """Another client on the same store and workspace, acting as ``agent`` (in its session
        ``session_id`` when given: mail it surfaces by a handing path is handed to that session)."""
        caller = self.caller.model_copy(update={"agent": parse_name(agent, "agent name")})
        session = SessionHint(session_id=session_id) if session_id else None
        return LocalClient(self.service, caller, session=session, owns_store=False)

    def whoami(self) -> WhoAmI:
        return self.service.whoami(self._as(), self.identity_source)

    def send(self, request: SendRequest) -> SendResult:
        return self.after_send.sent(self, self.service.sending.send(self._as(), request))

    def read(self, query: ReadQuery = ReadQuery()) -> ReadResult:
        result = self.service.mailbox.read(self._as(), query)
        self._counted = result.unread
        return result

    def inbox(self, query: InboxQuery = InboxQuery()) -> list[MailItem]:
        return self.service.mailbox.inbox(self._as(), query)

    def unread_count(self) -> int:
        return self.service.mailbox.unread_count(self._as())

    def last_unread(self) -> int:
        return self._counted if self._counted is not None else self.unread_count()

    def ack(self, message_ids: Sequence[str]) -> AckResult:
        return self.service.mailbox.ack(self._as(), message_ids)

    def mark_read(self, message_ids: Sequence[str]) -> MarkResult:
        return self.service.mailbox.mark_read(self._as(), message_ids)

    def surface(self, query: SurfaceQuery) -> ReadResult:
        result = self.service.surface(self._as(), query)
        self._counted = result.unread
        return result

    def confirm_surfaced(self, message_ids: Sequence[str], evidence: str = "transcript") -> MarkResult:
        return self.service.confirm_surfaced(self._as(), message_ids, evidence)

    def record_receipt(self, message_ids: Sequence[str], status: str, reason: str | None = None) -> MarkResult:
        return self.service.handover.record_receipt(self._as(), message_ids, status, reason)

    def message_status(self, message_id: str) -> MessageStatus:
        self.after_send.before_status(self)
        return self.service.message_status(self._as(), message_id)

    def who(self) -> WhoReport:
        return self.service.who(self._as())

    def reach(self, address: str) -> Reach:
        return self.service.presence.reach(self._as(), address)

    def register_session(
        self, *, runtime: str, pid: int | None = None, machine: str | None = None, terminal: str | None = None
    ) -> Session:
        pid = pid if pid is not None else acting_pid()
        machine = parse_machine(machine) if machine else self.service.machine
        # Only a process on this machine can be checked for its start time.
        proc_start = process_start_time(pid) if machine == self.service.machine else None
        return self.service.register_session(
            self._as(),
            SessionRequest(pid=pid, runtime=runtime, machine=machine, proc_start=proc_start, terminal=terminal),
        )

    def heartbeat(self, session_id: str, delivery_error: str | None = None) -> Session:
        return self.service.directory.heartbeat(self._as(), session_id, delivery_error)

    def end_session(self, session_id: str) -> Session:
        return self.service.end_session(self._as(), session_id)

    def create_agent(self, name: str, description: str | None = None, skills: Sequence[str] = ()) -> Agent:
        return self.service.directory.create_agent(self._as(), name, description, skills)

    def describe_agent(self, name: str) -> Agent:
        return self.service.directory.describe_agent(self._as(), name)

    def agent_card(self, name: str) -> dict[str, Any] | None:
        return None  # no hub serves it

    def update_agent(self, name: str, description: str | None = None, skills: Sequence[str] | None = None) -> Agent:
        return self.service.directory.update_agent(self._as(), name, description, skills)

    def list_agents(self, skill: str | None = None) -> list[Agent]:
        return self.service.list_agents(self._as(), skill)

    def delete_agent(self, name: str, *, force: bool = False) -> DeletedAgent:
        return self.service.directory.delete_agent(self._as(), name, force=force)

    def add_remote(self, name: str, url: str, *, token: str | None = None) -> RemoteAgent:
        return self.service.remotes.add(self._as(), name, url, token=token)

    def remove_remote(self, name: str) -> RemoteAgent:
        return self.service.remotes.remove(self._as(), name)

    def list_remotes(self) -> list[RemoteAgent]:
        return self.service.remotes.list(self._as())

    def create_channel(self, name: str, description: str | None = None, *, invite_only: bool = False) -> Channel:
        return self.service.directory.create_channel(self._as(), name, description, invite_only=invite_only)

    def invite_to_channel(self, name: str, agents: Sequence[str]) -> Channel:
        return self.service.directory.invite_to_channel(self._as(), name, agents)

    def remove_from_channel(self, name: str, agent: str) -> Channel:
        return self.service.directory.remove_from_channel(self._as(), name, agent)

    def audit_trail(self, *, limit: int = 50) -> list[AuditEntry]:
        return self.service.directory.audit_trail(self._as(), limit)

    def join_channel(self, name: str) -> Channel:
        return self.service.directory.join_channel(self._as(), name)

    def leave_channel(self, name: str) -> Channel:
        return self.service.directory.leave_channel(self._as(), name)

    def list_channels(self) -> list[Channel]:
        return self.service.directory.list_channels(self._as())

    def channel_members(self, name: str) -> list[ChannelMember]:
        return self.service.directory.channel_members(self._as(), name)

    def list_workspaces(self) -> list[Workspace]:
        return self.service.directory.list_workspaces()

    def report_runner(self, report: RunnerReport) -> RunnerReport:
        return self.service.runners.report(self._as(), report)

    def list_runners(self, agent: str | None = None) -> list[RunnerReport]:
        return self.service.runners.listed(self._as(), agent)

    def open_task(self, request: TaskRequest) -> TaskSent:
        return task_sent(self.after_send, self, self.service.tasking.open_task(self._as(), request))

    def update_task(
        self,
        task_id: str,
        *,
        state: TaskState | str | None = None,
        parts: Sequence[Part | dict] = (),
        artifacts: Sequence[TaskArtifact | dict[str, Any]] = (),
    ) -> Task:
        return self.service.tasking.update_task(self._as(), task_id, state=state, parts=parts, artifacts=artifacts)

    def cancel_task(self, task_id: str) -> Task:
        return self.service.tasking.cancel_task(self._as(), task_id)

    def get_task(
        self, task_id: str, *, history_length: int | None = None, after_generation: int | None = None, wait: float = 0.0
    ) -> Task:
        return self.service.tasking.get_task(
            self._as(), task_id, history_length=history_length, after_generation=after_generation, wait=wait
        )

    def list_tasks(self, query: TaskListQuery = TaskListQuery()) -> TaskPage:
        return self.service.tasking.list_tasks(self._as(), query)

    def open_round(self, request: RoundRequest) -> RoundInfo:
        return self.service.rounds.open_round(self._as(), request)

    def get_round(self, round_id: str, *, after_events: int | None = None, wait: float = 0.0) -> RoundInfo:
        return self.service.rounds.get_round(self._as(), round_id, after_events=after_events, wait=wait)

    def list_rounds(self, *, every: bool = False) -> list[RoundInfo]:
        return self.service.rounds.list_rounds(self._as(), open_only=not every)

    def propose(self, round_id: str, request: RoundProposal) -> RoundActed:
        return self.service.rounds.propose(self._as(), round_id, request)

    def vote(self, round_id: str, request: RoundVote) -> RoundActed:
        return self.service.rounds.vote(self._as(), round_id, request)

    def cancel_round(self, round_id: str) -> RoundInfo:
        return self.service.rounds.cancel(self._as(), round_id)

    def take_lease(self, request: LeaseRequest) -> LeaseTaken:
        return self.service.leases.take(self._as(), request)

    def list_leases(self, *, every: bool = False, scope: str | None = None) -> list[Lease]:
        return self.service.leases.list_leases(self._as(), every=every, scope=scope)

    def renew_leases(self, request: LeaseRenewal) -> list[Lease]:
        return self.service.leases.renew(self._as(), request)

    def release_leases(self, request: LeaseRelease) -> list[str]:
        return self.service.leases.release(self._as(), request)

    def check_leases(self, request: LeaseCheck) -> list[Lease]:
        return self.service.leases.check(self._as(), request)

    def run_background(self) -> Callable[[], None]:
        self.background.start()
        return self.background.stop

    def send_to_outside_agents(self, message_id: str, seconds: float) -> None:
        self.background.send_now(self.caller.workspace, message_id, seconds)

    def close(self) -> None:
        self.background.stop()  # before the store closes: its last writes commit
        if self._owns_store:
            self.service.store.close()
