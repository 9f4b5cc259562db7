"""The mailbox's domain operations: the one place that decides and writes.

Every face (CLI, hub, MCP, hooks) reaches the service through a Client; rules about messages
live here once. The service validates input before touching the store, so a bad request
fails whole and writes nothing, and it publishes a mailbox signal after each commit.

``Service`` is the one door. Its collaborators are its public attributes, each its own idea,
and a face calls an operation on the one that does it (``service.mailbox.read(caller, query)``),
with the request model the face built (``callboard.requests``):

- ``directory`` (``Directory``): agents, channels, sessions and workspaces (who is there);
- ``presence`` (``Presence``): whether an address reaches anyone now;
- ``sending`` (``Sending``): the send path (``recipients`` resolves its addresses, ``holds``
  decides what the guards hold);
- ``mailbox`` (``Mailbox``): reading and marking a mailbox;
- ``handover`` (``Handover``): mail handed to a session, until it is surfaced or returned;
- ``statuses`` (``Statuses``): what happened to a message, per recipient;
- ``tasking`` (``Tasking``): tasks (A2A's), each move of one mail in its thread;
- ``remotes`` (``Remotes``): outside A2A agents (``remote_outbox``: the pump's door);
- ``push_outbox`` (``PushOutbox``): a task's push notifications, as the hub's poster takes them;
- ``runners`` (``RunnerReports``): what each runner reports of itself.

Each operation that acts as an agent asks for one itself (``identity_gate.as_agent``). The
methods here are the operations that take more than one collaborator (a session registered or
ended gives back the mail handed to the one it replaced; surfaced mail takes up its tasks; the
agents and ``who`` carry the outside agents' URLs; a status carries the pump's word), and what
a server asks of the store it serves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from callboard.limits import DEFAULT_WINDOW_SECONDS, Limits
from callboard.model import (
    Agent,
    Caller,
    MarkResult,
    MessageStatus,
    ReadResult,
    Session,
    WhoAmI,
    WhoReport,
    utcnow,
)
from callboard.requests import SessionRequest, SurfaceQuery
from callboard.service.credentials import Credentials
from callboard.service.directory import Directory
from callboard.service.events import MailboxEvents
from callboard.service.handing import Handover
from callboard.service.holds import Guards
from callboard.service.identity_gate import as_agent
from callboard.service.leases import Leases
from callboard.service.liveness import Liveness
from callboard.service.presence import Presence
from callboard.service.push_outbox import PushOutbox
from callboard.service.reading import Mailbox
from callboard.service.recipients import Recipients
from callboard.service.remote_outbox import RemoteOutbox
from callboard.service.remotes import CardSource, Remotes
from callboard.service.rounds import Rounds
from callboard.service.runner_reports import RunnerReports
from callboard.service.sending import Sending
from callboard.service.status import Statuses
from callboard.service.subscriptions import Subscriptions
from callboard.service.tasking import Tasking
from callboard.service.unread_counts import UnreadCounts
from callboard.store.base import Store
from callboard.store.opening import store_kind


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
        self.push_outbox = PushOutbox(store.tasks, clock, allow_private=allow_private_webhooks)  # the push poster's
        self.runners = RunnerReports(store.runners, self.liveness, clock, self.directory.enter)
        self.tasking = Tasking(
            store, self.sending, self.events, limits, clock, allow_private_webhooks=allow_private_webhooks
        )
        self.rounds = Rounds(store.rounds, store.directory, self.tasking, self.sending, self.events, clock)
        self.tasking.worker_moved = self.rounds.task_answered  # a phase task's answer is a round's act
        self.leases = Leases(store.leases, clock, self.directory.enter)

    # --- who calls ------------------------------------------------------------------------

    def whoami(self, caller: Caller, source: str, store: str | None = None) -> WhoAmI:
        """Who the caller is: ``source`` says which rule (or credential) named its agent, ``store``
        where this service is reached (a hub's URL; by default, its store's location)."""
        caller = as_agent(caller)
        return WhoAmI(
            workspace=caller.workspace,
            agent=caller.agent,
            source=source,
            machine=self.machine,
            store=store if store is not None else self.store.location,
            session=self.directory.session_address(caller),
            liveness_seconds=self.liveness.window_seconds,
        )

    # --- what a server asks of the store it serves ----------------------------------------

    @property
    def store_kind(self) -> str:
        """ "postgresql" or "sqlite", as the hub's /health says."""
        return store_kind(self.store)

    def credentials(self, *, recheck_seconds: float | None = None) -> Credentials:
        """The tokens kept in this service's store, checked against it (a hub's door);
        ``recheck_seconds``: how long a token checked is trusted before the store is asked again."""
        return Credentials(self.store, self.clock, recheck_seconds=recheck_seconds)

    # --- operations of more than one collaborator -----------------------------------------

    def surface(self, caller: Caller, query: SurfaceQuery) -> ReadResult:
        """Take the caller's mail not yet put before the agent, and mark it surfaced by ``via``:
        see ``Mailbox.surface``. A task among it that waited to be taken up is working now."""
        caller = as_agent(caller)
        result = self.mailbox.surface(caller, query)
        if not query.peek:
            self.tasking.taken_up(caller, [item.message.task_id for item in result.items])
        return result

    def message_status(self, caller: Caller, message_id: str) -> MessageStatus:
        """Per recipient, the state reached and when (the sender sees every recipient, a
        recipient only its own row, a person who names no agent any message of the workspace
        as its sender does): see ``Statuses``; mail to an outside agent says what its pump did."""
        return self.remote_outbox.status(caller, self.statuses.message_status(caller, message_id))

    def confirm_surfaced(self, caller: Caller, message_ids: Sequence[str], evidence: str) -> MarkResult:
        """Those of these messages handed to a session of the caller's agent are in its model's
        context now: ``evidence`` says how that is known ("transcript": the session's transcript
        recorded a turn carrying them; "turn": a runner's CLI took them as its turn's input). Ids
        not handed (surfaced already, read, another agent's) are passed over. The ids marked
        surfaced. A task among them that waited to be taken up is working now."""
        caller = as_agent(caller)
        marked = self.handover.confirm_surfaced(caller, message_ids, evidence)
        self.tasking.taken_up(caller, self.store.sent.task_ids_of(caller.workspace, marked.marked))
        return marked

    def register_session(self, caller: Caller, request: SessionRequest) -> Session:
        """Register the caller's process as a session (see ``Directory.register_session``); a
        session this one replaced gives back its handed mail."""
        caller = as_agent(caller)
        session = self.directory.register_session(caller, request)
        self.handover.return_stranded(caller.workspace, caller.agent, self.clock())
        return session

    def end_session(self, caller: Caller, session_id: str) -> Session:
        """End the session; mail handed to it and not surfaced goes back to the mailbox."""
        caller = as_agent(caller)
        session = self.directory.end_session(caller, session_id)
        self.handover.return_stranded(caller.workspace, caller.agent, self.clock())
        return session

    def list_agents(self, caller: Caller, skill: str | None = None) -> list[Agent]:
        """The workspace's agents; with ``skill``, those offering it (see ``Directory.list_agents``);
        outside A2A agents marked with their URL."""
        urls = {r.name: r.url for r in self.remotes.list(caller)}
        agents = self.directory.list_agents(caller, skill)
        return [a.model_copy(update={"remote": urls[a.name]}) if a.name in urls else a for a in agents]

    def who(self, caller: Caller) -> WhoReport:
        """Every agent of the workspace with its sessions, unread count, held mail and leases, and
        every machine, up or down; outside A2A agents marked with their URL."""
        report = self.presence.who(caller)
        urls = {r.name: r.url for r in self.remotes.list(caller)}
        held: dict[str, list[str]] = {}
        for lease in self.leases.of_workspace(report.workspace):
            kind = "shared" if lease.shared else "exclusive"
            held.setdefault(lease.agent, []).append(
                f"{', '.join(lease.patterns)} ({kind}) in {lease.scope}, id {lease.id}"
            )
        if not urls and not held:
            return report
        agents = [
            a.model_copy(update={"remote": urls.get(a.name), "leases": held.get(a.name, [])}) for a in report.agents
        ]
        return report.model_copy(update={"agents": agents})
