"""The mailbox's domain operations: the one place that decides and writes.

Every face (CLI, hub, MCP, hooks) calls these methods through a Client; rules about messages
live here once. The service validates input before touching the store, so a bad request
fails whole and writes nothing, and it publishes a mailbox signal after each commit.

``Service`` is the one door, and a set of collaborators behind it, each its own idea:

- ``directory.Directory``: agents, channels and sessions (who is there);
- ``reach.Presence``: whether an address reaches anyone now, and ``who``;
- ``delivery.sending.Sending``: the send path (``delivery.recipients`` resolves its addresses,
  ``delivery.holds`` decides what the guards hold);
- ``delivery.reading.Mailbox``: reading, surfacing and marking a mailbox;
- ``delivery.handing.Handover``: mail handed to a session, until it is surfaced or returned;
- ``delivery.status.Statuses``: what happened to a message, per recipient;
- ``delivery.tasking.Tasking``: tasks (A2A's), each move of one mail in its thread;
- ``delivery.runner_reports.RunnerReports``: what each runner reports of itself.

The methods here only hand each call to its collaborator, except where one operation takes two
of them (a session registered or ended gives back the mail handed to the one it replaced).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

from callboard.errors import NoIdentity
from callboard.limits import AUDIT_LIMIT_DEFAULT, DEFAULT_WINDOW_SECONDS, Limits
from callboard.model import (
    AckResult,
    Agent,
    AuditEntry,
    Caller,
    Channel,
    ChannelMember,
    DeletedAgent,
    HeldMail,
    MailItem,
    MarkResult,
    MessageStatus,
    Part,
    Reach,
    ReadResult,
    Session,
    WhoAmI,
    WhoReport,
    Workspace,
    utcnow,
)
from callboard.remotes import RemoteAgent
from callboard.runners import RunnerReport
from callboard.service.credentials import Credentials
from callboard.service.directory import Directory
from callboard.service.events import AsyncSubscription, MailboxEvents
from callboard.service.handing import Handover
from callboard.service.holds import Guards
from callboard.service.liveness import Liveness
from callboard.service.presence import Presence
from callboard.service.push_targets import check_webhook
from callboard.service.reading import Mailbox
from callboard.service.recipients import Recipients
from callboard.service.remote_outbox import RemoteOutbox
from callboard.service.remotes import CardSource, Remotes
from callboard.service.runner_reports import RunnerReports
from callboard.service.sending import Sending
from callboard.service.status import Statuses
from callboard.service.subscriptions import Subscriptions
from callboard.service.tasking import Tasking
from callboard.service.unread_counts import UnreadCounts
from callboard.store.base import Store
from callboard.store.opening import store_kind
from callboard.store.records import PushDelivery
from callboard.tasks import PushConfig, Task, TaskArtifact, TaskEvent, TaskPage, TaskSent, TaskState

# What a person who names no agent is told when it asks for more than a look.
NO_AGENT = (
    "this acts as an agent, and none is named: set CALLBOARD_AGENT=name (sent to a hub as X-Callboard-Agent), "
    "put the name in a .callboard-agent file in the project, or run inside a git repository."
)


class Service:
    """The mailbox: sending and reading, on top of the directory of agents, channels and sessions."""

    def __init__(
        self,
        store: Store,
        *,
        machine: str,
        events: MailboxEvents | None = None,
        liveness_seconds: float = DEFAULT_WINDOW_SECONDS,
        limits: Limits = Limits(),
        clock: Callable[[], datetime] = utcnow,
        allow_private_webhooks: bool = False,
        card_source: CardSource | None = None,
        allow_private_remotes: bool = True,
    ) -> None:
        """``allow_private_webhooks``: a task's push notifications may go to loopback and
        private addresses (a hub whose agents share one private network). ``card_source``
        fetches an outside A2A agent's card (a face gives it: the service speaks no A2A);
        ``allow_private_remotes``: outside agents may live on loopback and private addresses."""
        self.store = store
        self.machine = machine
        self.events = (
            events if events is not None else MailboxEvents(store.change_counter, wait_for_change=store.wait_for_change)
        )
        self.subscriptions: Subscriptions = self.events  # what faces listen with
        self.liveness = Liveness(machine, liveness_seconds)
        self.limits = limits
        self.clock = clock
        unread = UnreadCounts()  # kept by the mailbox, the send and the directory's deletions
        self.directory = Directory(
            store, machine=machine, liveness=self.liveness, limits=limits, clock=clock, unread=unread
        )
        self.presence = Presence(store, self.directory, self.liveness, clock)
        self.handover = Handover(store, self.directory, self.events, self.liveness, clock)
        self.guards = Guards(store.guard_facts)
        self.remotes = Remotes(
            store, self.directory, clock, card_source=card_source, allow_private=allow_private_remotes
        )
        recipients = Recipients(store, self.directory, self.presence, self.remotes)
        self.sending = Sending(
            store, self.directory, recipients, self.guards, self.events, limits, clock, unread, self.remotes
        )
        self.mailbox = Mailbox(store, self.directory, self.handover, self.events, limits, clock, unread)
        self.statuses = Statuses(store.sent, self.handover, self.presence, clock)
        self.remote_outbox = RemoteOutbox(store, self.remotes, clock)  # the remote pump's door
        self.runners = RunnerReports(store.runners, self.liveness, clock, self.directory.enter)
        self.tasking = Tasking(
            store, self.sending, self.events, limits, clock, allow_private_webhooks=allow_private_webhooks
        )

    # --- runners (callboard run) --------------------------------------------------------

    def report_runner(self, caller: Caller, report: RunnerReport) -> RunnerReport:
        """The caller's own runner reports itself (RunnerReports.report)."""
        return self.runners.report(self.as_agent(caller), report)

    def list_runners(self, caller: Caller, agent: str | None = None) -> list[RunnerReport]:
        return self.runners.listed(caller, agent)

    # --- callers -------------------------------------------------------------------------

    @staticmethod
    def as_agent(caller: Caller) -> Caller:
        """The caller, when it names the agent it acts as; no_identity when it names none.

        Only a person may name no agent (this machine's embedded store, a user or admin token),
        and then only look: ``who``, the agents, channels, runners, workspaces and audit trail,
        a message's status. Every other operation acts as an agent, and asks for it here."""
        if caller.agent is None:
            raise NoIdentity(NO_AGENT)
        return caller

    def enter(self, caller: Caller) -> None:
        """Create the caller's workspace and agent now if they do not exist. Every operation
        that acts as the agent and keeps something of it does so itself, once its checks have
        passed (``Directory.enter``); nothing that only looks or fails does."""
        self.directory.enter(self.as_agent(caller))

    def whoami(self, caller: Caller, source: str, store: str | None = None) -> WhoAmI:
        """Who the caller is: ``source`` says which rule (or credential) named its agent, ``store``
        where this service is reached (a hub's URL; by default, its store's location)."""
        caller = self.as_agent(caller)
        return WhoAmI(
            workspace=caller.workspace,
            agent=caller.agent,
            source=source,
            machine=self.machine,
            store=store if store is not None else self.store.location,
            session=self.directory.session_address(caller),
            liveness_seconds=self.liveness.window_seconds,
        )

    def list_workspaces(self) -> list[Workspace]:
        return self.store.directory.list_workspaces()

    # --- what a server asks of the store it serves ----------------------------------------

    @property
    def store_kind(self) -> str:
        """ "postgresql" or "sqlite", as the hub's /health says."""
        return store_kind(self.store)

    def credentials(self, *, recheck_seconds: float | None = None) -> Credentials:
        """The tokens kept in this service's store, checked against it (a hub's door);
        ``recheck_seconds``: how long a token checked is trusted before the store is asked again."""
        return Credentials(self.store, self.clock, recheck_seconds=recheck_seconds)

    # --- reading (``delivery.reading``) ----------------------------------------------------

    def read(
        self, caller: Caller, *, peek: bool = False, after: int | None = None, limit: int = 100, wait: float = 0.0
    ) -> ReadResult:
        """Drain (claim and mark read) the caller's unread mail, or peek without marking: see
        ``Mailbox.read``."""
        return self.mailbox.read(self.as_agent(caller), peek=peek, after=after, limit=limit, wait=wait)

    def surface(
        self,
        caller: Caller,
        *,
        via: str,
        urgent_only: bool = False,
        limit: int = 100,
        wait: float = 0.0,
        peek: bool = False,
    ) -> ReadResult:
        """Take the caller's mail not yet put before the agent, and mark it surfaced by ``via``:
        see ``Mailbox.surface``. A task among it that waited to be taken up is working now."""
        caller = self.as_agent(caller)
        result = self.mailbox.surface(caller, via=via, urgent_only=urgent_only, limit=limit, wait=wait, peek=peek)
        if not peek:
            self.tasking.taken_up(caller, [item.message.task_id for item in result.items])
        return result

    def held_mail(self, caller: Caller) -> list[HeldMail]:
        """The caller's mail a loop or flood guard holds now, and why (see holds)."""
        return self.mailbox.held_mail(self.as_agent(caller))

    def check_read_options(self, *, limit: int, after: int | None, wait: float) -> None:
        self.mailbox.check_read_options(limit=limit, after=after, wait=wait)

    def deliveries_since(
        self, caller: Caller, cursor: int, limit: int = 100, hidden: Sequence[str] | None = None
    ) -> list[MailItem]:
        """The caller's deliveries past ``cursor`` in sequence order, marking nothing (streams)."""
        return self.mailbox.deliveries_since(self.as_agent(caller), cursor, limit, hidden)

    def unread_count(self, caller: Caller) -> int:
        """How many of the caller's messages are unread (for a session: not counting another
        live session's)."""
        return self.mailbox.unread_count(self.as_agent(caller))

    def mailbox_position(self, caller: Caller) -> int:
        """The caller's newest delivery sequence number: a stream that starts now resumes after it."""
        return self.mailbox.mailbox_position(self.as_agent(caller))

    def inbox(self, caller: Caller, *, include_acked: bool = False, limit: int = 50) -> list[MailItem]:
        """The newest messages of the caller's mailbox (unacked unless asked), without marking."""
        return self.mailbox.inbox(self.as_agent(caller), include_acked=include_acked, limit=limit)

    def ack(self, caller: Caller, message_ids: Sequence[str]) -> AckResult:
        """Mark these messages of the caller's mailbox acknowledged (handled; read too)."""
        return self.mailbox.ack(self.as_agent(caller), message_ids)

    def mark_read(self, caller: Caller, message_ids: Sequence[str]) -> MarkResult:
        """Mark these messages of the caller's mailbox read (acknowledged ones stay so)."""
        return self.mailbox.mark_read(self.as_agent(caller), message_ids)

    def message_status(self, caller: Caller, message_id: str) -> MessageStatus:
        """Per recipient, the state reached and when (the sender sees every recipient, a
        recipient only its own row, a person who names no agent any message of the workspace
        as its sender does): see ``Statuses``."""
        return self.remote_outbox.status(caller, self.statuses.message_status(caller, message_id))

    # --- handed mail (the rule: ``delivery.handing``) --------------------------------------

    def confirm_surfaced(self, caller: Caller, message_ids: Sequence[str], evidence: str) -> MarkResult:
        """Those of these messages handed to a session of the caller's agent are in its model's
        context now: ``evidence`` says how that is known ("transcript": the session's transcript
        recorded a turn carrying them; "turn": a runner's CLI took them as its turn's input). Ids not handed (surfaced already, read, another agent's)
        are passed over. The ids marked surfaced. A task among them that waited to be taken up
        is working now."""
        caller = self.as_agent(caller)
        marked = self.handover.confirm_surfaced(caller, message_ids, evidence)
        self.tasking.taken_up(caller, self.store.sent.task_ids_of(caller.workspace, marked.marked))
        return marked

    def record_receipt(
        self, caller: Caller, message_ids: Sequence[str], status: str, reason: str | None = None
    ) -> MarkResult:
        """What the caller's session's client reported about mail handed to it (Claude Code's
        ``peer_message_status``): recorded in each message's history; mail the model will never
        see (expired, refused, denied, dropped) goes back to the mailbox. The ids recorded."""
        return self.handover.record_receipt(self.as_agent(caller), message_ids, status, reason)

    # --- sessions (``directory``) ----------------------------------------------------------

    def register_session(
        self,
        caller: Caller,
        *,
        pid: int,
        runtime: str,
        machine: str | None = None,
        proc_start: int | None = None,
        terminal: str | None = None,
    ) -> Session:
        """Register the caller's process as a session (see ``Directory.register_session``); a
        session this one replaced gives back its handed mail."""
        caller = self.as_agent(caller)
        session = self.directory.register_session(
            caller, pid=pid, runtime=runtime, machine=machine, proc_start=proc_start, terminal=terminal
        )
        assert caller.agent is not None, "as_agent saw to it"
        self.handover.return_stranded(caller.workspace, caller.agent, self.clock())
        return session

    def heartbeat(self, caller: Caller, session_id: str, delivery_error: str | None = None) -> Session:
        """The session is still there; ``delivery_error`` says what its delivery path reports
        broken (a socket gone, a stream refused), None when it works."""
        return self.directory.heartbeat(self.as_agent(caller), session_id, delivery_error)

    def end_session(self, caller: Caller, session_id: str) -> Session:
        """End the session; mail handed to it and not surfaced goes back to the mailbox."""
        caller = self.as_agent(caller)
        session = self.directory.end_session(caller, session_id)
        assert caller.agent is not None, "as_agent saw to it"
        self.handover.return_stranded(caller.workspace, caller.agent, self.clock())
        return session

    def session_by_id(self, workspace: str, session_id: str) -> Session | None:
        """A session by id: an open one from the cached list, else from the store."""
        return self.directory.session_by_id(workspace, session_id)

    def session_address(self, caller: Caller) -> str | None:
        """agent@machine#pid of the session the caller acts in, if it acts in one."""
        return self.directory.session_address(self.as_agent(caller))

    def in_session(
        self,
        caller: Caller,
        *,
        session_id: str | None = None,
        machine: str | None = None,
        lineage: Sequence[tuple[int, int | None]] = (),
    ) -> Caller:
        """The caller acting as one of its agent's sessions: see ``Directory.in_session``."""
        return self.directory.in_session(caller, session_id=session_id, machine=machine, lineage=lineage)

    def hidden_targets(self, caller: Caller) -> tuple[str, ...]:
        """The sessions whose mail a read by ``caller`` skips: its agent's other live sessions."""
        return self.directory.hidden_targets(caller)

    # --- agents and channels (``directory``) -----------------------------------------------

    def create_agent(
        self, caller: Caller, name: str, description: str | None = None, skills: Sequence[str] = ()
    ) -> Agent:
        return self.directory.create_agent(self.as_agent(caller), name, description, skills)

    def describe_agent(self, caller: Caller, name: str) -> Agent:
        return self.directory.describe_agent(caller, name)

    def update_agent(
        self, caller: Caller, name: str, description: str | None = None, skills: Sequence[str] | None = None
    ) -> Agent:
        return self.directory.update_agent(self.as_agent(caller), name, description, skills)

    def list_agents(self, caller: Caller, skill: str | None = None) -> list[Agent]:
        """The workspace's agents; with ``skill``, those offering it (see ``Directory.list_agents``);
        outside A2A agents marked with their URL."""
        urls = {r.name: r.url for r in self.remotes.list(caller)}
        agents = self.directory.list_agents(caller, skill)
        return [a.model_copy(update={"remote": urls[a.name]}) if a.name in urls else a for a in agents]

    # --- outside A2A agents (``delivery.remotes``; sent by a pump: ``remote_outbox``) --------

    def add_remote(self, caller: Caller, name: str, url: str, *, token: str | None = None) -> RemoteAgent:
        """Register the outside A2A agent whose card is at ``url`` as ``name`` (again: its card anew)."""
        return self.remotes.add(self.as_agent(caller), name, url, token)

    def remove_remote(self, caller: Caller, name: str) -> RemoteAgent:
        """Forget the outside agent and its mailbox; its mail not yet sent fails."""
        return self.remotes.remove(self.as_agent(caller), name)

    def list_remotes(self, caller: Caller) -> list[RemoteAgent]:
        return self.remotes.list(caller)

    def delete_agent(self, caller: Caller, name: str, *, force: bool = False) -> DeletedAgent:
        """Delete the agent, its mailbox, memberships and sessions (what it sent stays), and
        record who did: see ``Directory.delete_agent``."""
        return self.directory.delete_agent(self.as_agent(caller), name, force=force)

    def audit_trail(self, caller: Caller, limit: int = AUDIT_LIMIT_DEFAULT) -> list[AuditEntry]:
        """The workspace's audit trail, newest first: for persons, not agent tokens."""
        return self.directory.audit_trail(caller, limit)

    def create_channel(
        self, caller: Caller, name: str, description: str | None = None, *, invite_only: bool = False
    ) -> Channel:
        """A new channel, the caller its first member. An invite-only one is recorded."""
        return self.directory.create_channel(self.as_agent(caller), name, description, invite_only=invite_only)

    def join_channel(self, caller: Caller, name: str) -> Channel:
        """Join an open channel; an invite-only one only as one who may add members (recorded)."""
        return self.directory.join_channel(self.as_agent(caller), name)

    def invite_to_channel(self, caller: Caller, name: str, agents: Sequence[str]) -> Channel:
        """Add these existing agents to the channel (all or none), each addition recorded."""
        return self.directory.invite_to_channel(self.as_agent(caller), name, agents)

    def remove_from_channel(self, caller: Caller, name: str, agent: str) -> Channel:
        """Take a member out of the channel, recorded: its creator's or a person's to do."""
        return self.directory.remove_from_channel(self.as_agent(caller), name, agent)

    def leave_channel(self, caller: Caller, name: str) -> Channel:
        return self.directory.leave_channel(self.as_agent(caller), name)

    def list_channels(self, caller: Caller) -> list[Channel]:
        return self.directory.list_channels(caller)

    def channel_members(self, caller: Caller, name: str) -> list[ChannelMember]:
        """Who is in the channel; an invite-only one's members are for those who may see them."""
        return self.directory.channel_members(caller, name)

    # --- presence (``reach``) --------------------------------------------------------------

    def reach(self, caller: Caller, address: str) -> Reach:
        """Whether an agent address can be reached now, and if not, plainly why."""
        return self.presence.reach(caller, address)

    def who(self, caller: Caller) -> WhoReport:
        """Every agent of the workspace with its sessions, unread count and held mail, and every
        machine, up or down."""
        report = self.presence.who(caller)
        urls = {r.name: r.url for r in self.remotes.list(caller)}
        if not urls:
            return report
        agents = [a.model_copy(update={"remote": urls[a.name]}) if a.name in urls else a for a in report.agents]
        return report.model_copy(update={"agents": agents})

    # --- tasks (``delivery.tasking``; the lifecycle's rules are ``tasks``') -----------------

    def open_task(
        self,
        caller: Caller,
        worker: str,
        parts: Sequence[Part | dict],
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        a2a_message_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        subject: str | None = None,
    ) -> TaskSent:
        """A new task: ``parts`` mailed to ``worker`` (in thread ``context_id``, else a new one),
        submitted. With ``task_id``: the requester's follow-up on that task (one waiting on it
        goes back to submitted). ``a2a_message_id``: the A2A client's id, its retries' key."""
        return self.tasking.open_task(
            self.as_agent(caller),
            worker,
            parts,
            task_id=task_id,
            context_id=context_id,
            a2a_message_id=a2a_message_id,
            metadata=metadata,
            subject=subject,
        )

    def update_task(
        self,
        caller: Caller,
        task_id: str,
        *,
        state: TaskState | str | None = None,
        parts: Sequence[Part | dict] = (),
        artifacts: Sequence[TaskArtifact | dict[str, Any]] = (),
        append: bool = False,
        last_chunk: bool = True,
    ) -> Task:
        """The worker's move (a state, a message, artifacts), mailed to the requester."""
        return self.tasking.update_task(
            self.as_agent(caller),
            task_id,
            state=state,
            parts=parts,
            artifacts=artifacts,
            append=append,
            last_chunk=last_chunk,
        )

    def cancel_task(self, caller: Caller, task_id: str) -> Task:
        """The requester's cancel; the worker is told by mail."""
        return self.tasking.cancel_task(self.as_agent(caller), task_id)

    def get_task(self, caller: Caller, task_id: str, *, history_length: int | None = None) -> Task:
        """The task, for its requester or worker (anyone else: unknown_task)."""
        return self.tasking.get_task(self.as_agent(caller), task_id, history_length=history_length)

    def list_tasks(
        self,
        caller: Caller,
        *,
        context_id: str | None = None,
        state: TaskState | str | None = None,
        page_size: int = 50,
        page_token: str | None = None,
        updated_after: datetime | None = None,
        history_length: int = 0,
        include_artifacts: bool = True,
        with_agent: str | None = None,
    ) -> TaskPage:
        """The caller's tasks, as requester or worker (``with_agent``: only those between it and
        that agent), newest updated first, a page at a time."""
        return self.tasking.list_tasks(
            self.as_agent(caller),
            context_id=context_id,
            state=state,
            page_size=page_size,
            page_token=page_token,
            updated_after=updated_after,
            history_length=history_length,
            include_artifacts=include_artifacts,
            with_agent=with_agent,
        )

    def task_events(self, caller: Caller, task_id: str, after_generation: int) -> list[TaskEvent]:
        """The task's events past ``after_generation``: what a subscriber missed."""
        return self.tasking.task_events(self.as_agent(caller), task_id, after_generation)

    def subscribe_task(self, workspace: str, task_id: str) -> AbstractContextManager[AsyncSubscription]:
        """A waiter (on the running loop) woken on every change of the task, here or elsewhere."""
        return self.tasking.subscribe_task(workspace, task_id)

    def set_push_config(
        self,
        caller: Caller,
        task_id: str,
        url: str,
        *,
        config_id: str | None = None,
        token: str | None = None,
        auth_scheme: str | None = None,
        auth_credentials: str | None = None,
    ) -> PushConfig:
        """Post the task's updates to ``url`` (bad_webhook for a target the hub will not post to)."""
        return self.tasking.set_push_config(
            self.as_agent(caller),
            task_id,
            url,
            config_id=config_id,
            token=token,
            auth_scheme=auth_scheme,
            auth_credentials=auth_credentials,
        )

    def get_push_config(self, caller: Caller, task_id: str, config_id: str) -> PushConfig:
        return self.tasking.get_push_config(self.as_agent(caller), task_id, config_id)

    def list_push_configs(self, caller: Caller, task_id: str) -> list[PushConfig]:
        return self.tasking.list_push_configs(self.as_agent(caller), task_id)

    def delete_push_config(self, caller: Caller, task_id: str, config_id: str) -> None:
        self.tasking.delete_push_config(self.as_agent(caller), task_id, config_id)

    # --- the push outbox (posted by the hub: ``a2a/server/push.py``) --------------------------------

    def claim_push_deliveries(self, lease_seconds: float, limit: int) -> list[PushDelivery]:
        """Due push posts, leased to this poster for ``lease_seconds`` (another replica's poster
        takes them up when a lease ends unposted)."""
        return self.store.tasks.claim_push_deliveries(self.clock(), lease_seconds, limit)

    def push_target(self, delivery: PushDelivery) -> tuple[Task | None, str]:
        """The task a claimed post is about, and its URL checked again (names move): BadWebhook
        for a target no longer allowed."""
        url = check_webhook(delivery.url, allow_private=self.tasking.allow_private_webhooks)
        return self.store.tasks.get_task(delivery.workspace, delivery.task_id), url

    def push_delivered(self, delivery_id: str) -> None:
        self.store.tasks.push_delivered(delivery_id, self.clock())

    def push_failed(self, delivery_id: str, error: str, retry_in: float | None) -> None:
        """A post failed: tried again ``retry_in`` seconds from now, or never (None: given up)."""
        retry_at = self.clock() + timedelta(seconds=retry_in) if retry_in is not None else None
        self.store.tasks.push_failed(delivery_id, error, retry_at)
