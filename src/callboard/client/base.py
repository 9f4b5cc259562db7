"""The one interface every face uses to reach a mailbox.

``Client`` is what the faces (CLI, MCP tools, hooks, runners) call. ``LocalClient`` (local.py)
runs the service in this process on the embedded store; ``HubClient`` (hub.py) speaks the same
interface to a hub over HTTP. A client acts as one agent of one workspace, named when it opens,
and in the session its process belongs to; ``opening.open_client`` picks one.

``AfterSend`` is what the process that opened a client adds to the sends it makes (the CLI: mail
injected into this machine's Claude Code sessions that no Callboard process serves). It is a
step of the client's own send, not a wrapper around the client: nothing is forwarded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from callboard.leases import Lease, LeaseTaken
from callboard.model import (
    AckResult,
    Agent,
    AuditEntry,
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
    SurfaceQuery,
    TaskListQuery,
    TaskRequest,
)
from callboard.rounds import RoundActed, RoundInfo
from callboard.runners import RunnerReport
from callboard.tasks import Task, TaskArtifact, TaskPage, TaskSent, TaskState


class AfterSend(Protocol):
    """Run by a client after each send it makes (a task it opens is mail to its worker too), and
    before it asks a message's status; best effort: it never fails the send."""

    def sent(self, client: Client, result: SendResult) -> SendResult:
        """``result``, with what this step did to it said (e.g. the sessions injected into)."""
        ...

    def before_status(self, client: Client) -> None:
        """Tell the mailbox what this step knows of delivery before a status is judged."""
        ...


class NothingAfterSend:
    """The step of a client nobody handed one: a send's result as it is."""

    def sent(self, client: Client, result: SendResult) -> SendResult:
        return result

    def before_status(self, client: Client) -> None:
        return None


NOTHING_AFTER_SEND = NothingAfterSend()


def task_sent(after: AfterSend, client: Client, opened: TaskSent) -> TaskSent:
    """``opened`` with ``after`` run on the mail that opened the task."""
    send = after.sent(client, opened.send)
    return opened if send is opened.send else opened.model_copy(update={"send": send})


class Client(Protocol):
    """Mailbox operations as one agent. Errors are ``callboard.errors.CallboardError``."""

    # Run after each send; a client another one makes (as_agent) starts with none.
    after_send: AfterSend

    def whoami(self) -> WhoAmI: ...
    def as_agent(self, agent: str, session_id: str | None = None) -> Client:
        """The same store or hub and credential, acting as another agent of this workspace (in
        its session ``session_id`` when given); close it when done. Through a hub only a user or
        admin token may: an agent token is refused (forbidden) at the first request."""
        ...

    # messaging
    def send(self, request: SendRequest) -> SendResult:
        """Mail to agents or a channel; per recipient, what really happened (Sending.submit)."""
        ...

    def read(self, query: ReadQuery = ReadQuery()) -> ReadResult:
        """Drain (claim and mark read) this agent's unread mail, or peek (Mailbox.read)."""
        ...

    def inbox(self, query: InboxQuery = InboxQuery()) -> list[MailItem]: ...
    def unread_count(self) -> int: ...
    def last_unread(self) -> int:
        """The agent's unread count as this client's last call left it, from that call's own
        answer where it brought one (every hub answer, a read), else counted now."""
        ...

    def ack(self, message_ids: Sequence[str]) -> AckResult: ...
    def mark_read(self, message_ids: Sequence[str]) -> MarkResult: ...
    def surface(self, query: SurfaceQuery) -> ReadResult:
        """Mail not yet read nor put before the agent, marked surfaced by ``via`` (Service.surface)."""
        ...

    def confirm_surfaced(self, message_ids: Sequence[str], evidence: str = "transcript") -> MarkResult:
        """Mail handed to this session is in its model's context now (Service.confirm_surfaced); evidence
        "transcript", "hook" or "turn" (a runner's CLI took it)."""
        ...

    def record_receipt(self, message_ids: Sequence[str], status: str, reason: str | None = None) -> MarkResult:
        """What this session's client reported about a frame of its mail (Handover.record_receipt)."""
        ...

    def message_status(self, message_id: str) -> MessageStatus: ...

    # presence and sessions
    def who(self) -> WhoReport: ...
    def reach(self, address: str) -> Reach:
        """Whether an agent address can be reached now, and if not, plainly why."""
        ...

    def register_session(
        self, *, runtime: str, pid: int | None = None, machine: str | None = None, terminal: str | None = None
    ) -> Session: ...
    def heartbeat(self, session_id: str, delivery_error: str | None = None) -> Session: ...
    def end_session(self, session_id: str) -> Session: ...

    # agents
    def create_agent(self, name: str, description: str | None = None, skills: Sequence[str] = ()) -> Agent: ...
    def describe_agent(self, name: str) -> Agent: ...
    def agent_card(self, name: str) -> dict[str, Any] | None:
        """The agent's A2A card as a hub serves it (its JSON); None on the embedded store, where
        no hub serves it (the face builds one)."""
        ...

    def update_agent(self, name: str, description: str | None = None, skills: Sequence[str] | None = None) -> Agent: ...
    def list_agents(self, skill: str | None = None) -> list[Agent]:
        """The workspace's agents; with ``skill``, only those offering it (case aside)."""
        ...

    def delete_agent(self, name: str, *, force: bool = False) -> DeletedAgent:
        """Refused (has_unread_mail) while its mailbox holds unread mail, unless ``force``."""
        ...

    # outside A2A agents: mail to one becomes an A2A task, its answers mail from it
    def add_remote(self, name: str, url: str, *, token: str | None = None) -> RemoteAgent:
        """Register the outside agent whose card is at ``url`` as ``name`` (again: its card anew)."""
        ...

    def remove_remote(self, name: str) -> RemoteAgent: ...
    def list_remotes(self) -> list[RemoteAgent]: ...

    # channels
    def create_channel(self, name: str, description: str | None = None, *, invite_only: bool = False) -> Channel: ...
    def join_channel(self, name: str) -> Channel: ...
    def leave_channel(self, name: str) -> Channel: ...
    def invite_to_channel(self, name: str, agents: Sequence[str]) -> Channel: ...
    def remove_from_channel(self, name: str, agent: str) -> Channel: ...
    def list_channels(self) -> list[Channel]: ...
    def channel_members(self, name: str) -> list[ChannelMember]: ...

    def audit_trail(self, *, limit: int = 50) -> list[AuditEntry]:
        """Actions with large effects in the workspace, newest first (a person's credential only)."""
        ...

    # tasks (mail with an A2A lifecycle: Tasking.open_task and the rest)
    def open_task(self, request: TaskRequest) -> TaskSent:
        """Ask ``worker`` to do something (a new task, submitted); with ``task_id``, answer a
        task of yours that waits on you (it goes on, same task and context). ``message_id``:
        the caller's id for this message; a repeat with it returns the first, never a second."""
        ...

    def update_task(
        self,
        task_id: str,
        *,
        state: TaskState | str | None = None,
        parts: Sequence[Part | dict] = (),
        artifacts: Sequence[TaskArtifact | dict[str, Any]] = (),
    ) -> Task:
        """The worker's move: a new state, a status message, artifacts (mailed to the requester)."""
        ...

    def cancel_task(self, task_id: str) -> Task:
        """The requester's cancel (its worker is told by mail)."""
        ...

    def get_task(
        self, task_id: str, *, history_length: int | None = None, after_generation: int | None = None, wait: float = 0.0
    ) -> Task:
        """One task of this agent's; with ``after_generation`` (a generation seen), waits up to
        ``wait`` seconds until the task moves past it or is final (a long-poll)."""
        ...

    def list_tasks(self, query: TaskListQuery = TaskListQuery()) -> TaskPage:
        """The tasks this agent asked or was asked, newest updated first, a page at a time."""
        ...

    # rounds (a goal put to agents, who propose, vote and converge: Rounds)
    def open_round(self, request: RoundRequest) -> RoundInfo:
        """Open a round as its coordinator; each participant is asked each phase by a task."""
        ...

    def get_round(self, round_id: str, *, after_events: int | None = None, wait: float = 0.0) -> RoundInfo:
        """A round whole; with ``after_events`` (how many events seen), waits up to ``wait``
        seconds until it has more or ends."""
        ...

    def list_rounds(self, *, every: bool = False) -> list[RoundInfo]:
        """The rounds this agent takes part in or opened (open ones, or ``every`` one)."""
        ...

    def propose(self, round_id: str, request: RoundProposal) -> RoundActed: ...
    def vote(self, round_id: str, request: RoundVote) -> RoundActed: ...
    def cancel_round(self, round_id: str) -> RoundInfo: ...

    # leases (advisory claims on repository paths: Leases)
    def take_lease(self, request: LeaseRequest) -> LeaseTaken: ...
    def list_leases(self, *, every: bool = False, scope: str | None = None) -> list[Lease]: ...
    def renew_leases(self, request: LeaseRenewal) -> list[Lease]: ...
    def release_leases(self, request: LeaseRelease) -> list[str]: ...
    def check_leases(self, request: LeaseCheck) -> list[Lease]: ...

    def list_workspaces(self) -> list[Workspace]: ...

    # runners (callboard run) report themselves; ``runner status`` lists them, from any machine
    def report_runner(self, report: RunnerReport) -> RunnerReport:
        """Keep this agent's runner's report (its agent must be this client's): what was kept."""
        ...

    def list_runners(self, agent: str | None = None) -> list[RunnerReport]:
        """The workspace's runner reports (of ``agent`` only), newest first, each marked live or not."""
        ...

    # the store's background work: a hub does it; on the embedded store, the client that opened it
    def run_background(self) -> Callable[[], None]:
        """Do what a hub does in the background for the store (sending mail to outside A2A
        agents) until the returned call stops it, or this client closes: for a long-lived process
        (``callboard mcp``). Through a hub, nothing: the hub does it."""
        ...

    def send_to_outside_agents(self, message_id: str, seconds: float) -> None:
        """Send mail to outside A2A agents now, that message first, until its first answer or
        for ``seconds`` (a one-shot command's send); through a hub, nothing: the hub does it."""
        ...

    def close(self) -> None: ...
