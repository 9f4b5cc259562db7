"""Agents, channels and sessions: who is there, which the service's other parts consult.

One of the service's collaborators (see ``Service``): it keeps, in memory, what a send asks
of it for every recipient (the agents known to exist, each workspace's open sessions, the
index of names for a guess), so that a send costs what its recipients cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from callboard.address import parse_channel_name, parse_machine, parse_name, shown
from callboard.errors import (
    AlreadyExists,
    BadRequest,
    Forbidden,
    HasUnreadMail,
    NotMember,
    TooLarge,
    UnknownAgent,
    UnknownChannel,
    UnknownSession,
)
from callboard.limits import (
    AUDIT_LIMIT_DEFAULT,
    DELIVERY_ERROR_CHARS,
    PID_MAX,
    PROC_START_MAX,
    SKILL_CHARS,
    TERMINAL_CHARS,
    Limits,
)
from callboard.model import (
    Agent,
    AuditEntry,
    Caller,
    Channel,
    ChannelMember,
    DeletedAgent,
    Session,
    Workspace,
    new_id,
)
from callboard.requests import SessionRequest
from callboard.service.agent_names import AgentNames
from callboard.service.content import check_text, is_id
from callboard.service.from_memory import memory_only, refresh_ahead, store_needed
from callboard.service.identity_gate import as_agent
from callboard.service.liveness import Liveness, OpenSessions
from callboard.service.unread_counts import UnreadCounts
from callboard.store.base import Store
from callboard.store.records import NewSession


class Directory:
    """The agents, channels and sessions of every workspace of one store."""

    def __init__(
        self,
        store: Store,
        *,
        machine: str,
        liveness: Liveness,
        limits: Limits,
        clock: Callable[[], datetime],
        unread: UnreadCounts,
    ) -> None:
        self.store = store
        self.unread = unread  # a deleted agent's mailbox is gone: its kept count with it
        self.machine = machine
        self.liveness = liveness
        self.limits = limits
        self.clock = clock
        self._known_agents: set[tuple[str, str]] = set()
        self.agents_learned = 0  # counts agents learned of from the store (another process made them)
        self._sessions_read: dict[str, OpenSessions] = {}
        self._agent_names: dict[str, AgentNames] = {}

    # --- callers -------------------------------------------------------------------------

    def enter(self, caller: Caller) -> None:
        """Create the caller's workspace and agent if they do not exist yet: the step of every
        operation that acts as the agent and keeps something of it (a send, a session, a channel
        joined, a runner's report), taken once that operation's checks have passed. Nothing that
        only looks, or fails, calls it: looking writes nothing.

        Cheap to call before every such write: an agent known to exist is not looked up again."""
        caller = as_agent(caller)
        if self.agent_exists(caller.workspace, caller.agent):
            return
        store_needed()
        now = self.clock()
        self.store.directory.ensure_workspace(caller.workspace, now)
        self.store.directory.ensure_agent(caller.workspace, caller.agent, now)
        self._known_agents.add((caller.workspace, caller.agent))
        self.agents_changed(caller.workspace, [caller.agent], added=True)

    def agent_exists(self, workspace: str, name: str) -> bool:
        """Whether the agent exists; a yes is remembered (sends ask it for every recipient).

        An agent deleted by another process since is caught by the store when the send
        commits (``unknown_recipient``); one deleted through this service is forgotten."""
        if (workspace, name) in self._known_agents:
            return True
        store_needed()
        exists = self.store.directory.get_agent(workspace, name) is not None
        if exists:
            self._known_agents.add((workspace, name))
            self.agents_learned += 1
        return exists

    def did_you_mean(self, workspace: str, name: str) -> str:
        """For a name that names no agent: " Did you mean 'backend'?" when agents of close names
        exist (a typo would otherwise create an agent nobody reads), else nothing.

        From the workspace's index of names (see ``reach.NameIndex``), never by comparing the name
        with every agent: a send to a hundred new names in a workspace of thousands of agents
        costs milliseconds. The first guess in a workspace reads its names from the store."""
        names = self._agent_names.get(workspace)
        if names is None:
            names = self._agent_names.setdefault(workspace, AgentNames())
        guesses = names.closest(name, lambda: self._agent_names_stored(workspace))
        return f" Did you mean {' or '.join(repr(g) for g in guesses)}?" if guesses else ""

    def _agent_names_stored(self, workspace: str) -> list[str]:
        store_needed()
        return [agent.name for agent in self.store.directory.list_agents(workspace)]

    def agents_changed(self, workspace: str, names: Sequence[str], added: bool) -> None:
        """Agents created (or deleted) through this service: the guesses know them at once."""
        index = self._agent_names.get(workspace)
        if index is not None:
            for name in names:
                index.noted(name, added)

    def list_workspaces(self) -> list[Workspace]:
        """The workspaces of this store (a person's look: the embedded store's, or a hub's admin)."""
        return self.store.directory.list_workspaces()

    # --- agents --------------------------------------------------------------------------

    def create_agent(
        self, caller: Caller, name: str, description: str | None = None, skills: Sequence[str] = ()
    ) -> Agent:
        caller = as_agent(caller)
        name = parse_name(name, "agent name")
        self._check_card(description, skills)
        self.store.directory.ensure_workspace(caller.workspace, self.clock())  # a fresh store's first agent
        if not self.store.directory.create_agent(caller.workspace, name, description, list(skills), self.clock()):
            raise AlreadyExists(f"agent {name} already exists; use 'agent describe {name}' to change it.")
        self.agents_changed(caller.workspace, [name], added=True)
        return self.describe_agent(caller, name)

    def describe_agent(self, caller: Caller, name: str) -> Agent:
        name = parse_name(name, "agent name")
        agent = self.store.directory.get_agent(caller.workspace, name)
        if agent is None:
            raise _no_agent(caller, name)
        return agent

    def update_agent(
        self, caller: Caller, name: str, description: str | None = None, skills: Sequence[str] | None = None
    ) -> Agent:
        caller = as_agent(caller)
        name = parse_name(name, "agent name")
        self._check_card(description, skills or ())
        if name == caller.agent:
            self.enter(caller)  # an agent that writes its own card declares itself: it exists from now
        if not self.store.directory.update_agent(
            caller.workspace, name, description, None if skills is None else list(skills)
        ):
            self.describe_agent(caller, name)  # raises unknown_agent
        return self.describe_agent(caller, name)

    def list_agents(self, caller: Caller, skill: str | None = None) -> list[Agent]:
        """The workspace's agents; with ``skill``, only those that name it among their skills
        (``offers_skill``: the one rule every face's filter goes through)."""
        agents = self.store.directory.list_agents(caller.workspace)
        if skill is None:
            return agents
        check_text(skill, SKILL_CHARS, "the skill to filter by", hint=" E.g. --skill review (REST: ?skill=review).")
        return [agent for agent in agents if offers_skill(agent.skills, skill)]

    def delete_agent(self, caller: Caller, name: str, *, force: bool = False) -> DeletedAgent:
        """Delete the agent, its mailbox, memberships and sessions (what it sent stays), and
        record who did. While its mailbox holds unread mail it is refused (has_unread_mail)
        unless ``force``d: that mail is then gone for good."""
        caller = as_agent(caller)
        name = parse_name(name, "agent name")
        self._known_agents.discard((caller.workspace, name))
        record = self._record(caller, "agent.delete", name, forced=force)
        unread = self.store.directory.delete_agent(caller.workspace, name, record, keep_unread=not force)
        self.unread.changed(caller.workspace, name)
        if unread is None:
            raise _no_agent(caller, name)
        if unread and not force:
            raise HasUnreadMail(
                f"{name} has {unread} unread message{'s' if unread != 1 else ''}; nothing was deleted. "
                f"Let {name} read them first, or delete with --force (REST: ?force=true) to drop them for good.",
                unread=unread,
            )
        self._sessions_changed(caller.workspace)
        self.agents_changed(caller.workspace, [name], added=False)
        return DeletedAgent(deleted=name, unread_dropped=unread)

    def _record(self, caller: Caller, action: str, target: str, **detail: object) -> AuditEntry:
        """The audit trail's record of ``caller`` doing ``action`` to ``target`` now."""
        return AuditEntry(
            id=new_id(),
            workspace=caller.workspace,
            at=self.clock(),
            actor=caller.agent,
            token_kind=caller.token_kind,
            token_id=caller.token_id,
            action=action,
            target=target,
            detail=detail,
        )

    def audit_trail(self, caller: Caller, limit: int = AUDIT_LIMIT_DEFAULT) -> list[AuditEntry]:
        """The workspace's audit trail, newest first: for persons, not agent tokens."""
        if not caller.person:
            raise Forbidden("the audit trail is for persons: an agent token cannot read it; use a user or admin token.")
        if not 1 <= limit <= self.limits.read_limit:
            raise BadRequest(f"limit must be 1-{self.limits.read_limit}.")
        return self.store.audit.audit_trail(caller.workspace, limit)

    def _check_card(self, description: str | None, skills: Sequence[str]) -> None:
        if description is not None and description.strip():  # a blank description clears it
            check_text(description, self.limits.description_chars, "the description")
        if len(skills) > self.limits.skills:
            raise TooLarge(f"{len(skills)} skills given; the limit is {self.limits.skills}.")
        for skill in skills:
            check_text(skill, SKILL_CHARS, f"skill {shown(skill, 40)!r}")

    # --- channels ------------------------------------------------------------------------

    def create_channel(
        self, caller: Caller, name: str, description: str | None = None, *, invite_only: bool = False
    ) -> Channel:
        """A new channel, the caller its first member. An invite-only one is recorded."""
        caller = as_agent(caller)
        name = parse_channel_name(name)
        self._check_card(description, ())
        record = self._record(caller, "channel.create", f"#{name}", invite_only=True) if invite_only else None
        if not self.store.directory.create_channel(
            caller.workspace, name, caller.agent, description, self.clock(), invite_only, record
        ):
            raise AlreadyExists(f"channel #{name} already exists; join it with 'callboard channel join {name}'.")
        self.enter(caller)  # its first member exists from now on (not when the name was taken)
        return self._channel(caller, name)

    def join_channel(self, caller: Caller, name: str) -> Channel:
        """Join an open channel; an invite-only one only as one who may add members (recorded)."""
        caller = as_agent(caller)
        name = parse_channel_name(name)
        channel = self._channel(caller, name)
        record = None
        if channel.invite_only and not channel.joined:
            self._check_manages(caller, channel, f"#{name} is invite-only")
            record = self._record(caller, "channel.join", caller.agent, channel=name)
        self.enter(caller)  # a member exists: created only by a join that succeeds
        self.store.directory.join_channel(caller.workspace, name, caller.agent, self.clock(), record)
        return self._channel(caller, name)

    def invite_to_channel(self, caller: Caller, name: str, agents: Sequence[str]) -> Channel:
        """Add these existing agents to the channel (all or, when one is unknown, none), each
        addition recorded: its creator's or a person's to do."""
        caller = as_agent(caller)
        name = parse_channel_name(name)
        channel = self._channel(caller, name)
        self._check_manages(caller, channel, f"{caller.agent} cannot add members to #{name}")
        if len(agents) > self.limits.recipients:
            raise TooLarge(f"{len(agents)} agents; at most {self.limits.recipients} are added at once.")
        names = list(dict.fromkeys(parse_name(agent, "agent name") for agent in agents))
        if not names:
            raise BadRequest(f"name at least one agent to add to #{name}.")
        for agent in names:
            if not self.agent_exists(caller.workspace, agent):
                raise UnknownAgent(
                    f"no agent named {agent} in workspace {caller.workspace}; nobody was added."
                    + self.did_you_mean(caller.workspace, agent)
                )
        now = self.clock()
        for agent in names:
            self.store.directory.join_channel(
                caller.workspace, name, agent, now, self._record(caller, "channel.invite", agent, channel=name)
            )
        return self._channel(caller, name)

    def remove_from_channel(self, caller: Caller, name: str, agent: str) -> Channel:
        """Take a member out of the channel, recorded: its creator's or a person's to do."""
        caller = as_agent(caller)
        name, agent = parse_channel_name(name), parse_name(agent, "agent name")
        channel = self._channel(caller, name)
        self._check_manages(caller, channel, f"{caller.agent} cannot remove members of #{name}")
        record = self._record(caller, "channel.remove", agent, channel=name)
        if not self.store.directory.leave_channel(caller.workspace, name, agent, record):
            raise NotMember(f"{agent} is not a member of #{name}; 'callboard channel members {name}' lists them.")
        return self._channel(caller, name)

    @staticmethod
    def _check_manages(caller: Caller, channel: Channel, refused: str) -> None:
        """A channel's members are managed by its creator or a person's credential (a user or
        admin token, or the embedded store), never by another agent's token."""
        if not caller.person and caller.agent != channel.created_by:
            raise Forbidden(
                f"{refused}: only its creator {channel.created_by} or a person (a user token) adds or removes "
                f"its members, with 'callboard channel invite {channel.name} AGENT'."
            )

    def leave_channel(self, caller: Caller, name: str) -> Channel:
        caller = as_agent(caller)
        name = parse_channel_name(name)
        self._channel(caller, name)
        if not self.store.directory.leave_channel(caller.workspace, name, caller.agent):
            raise NotMember(f"{caller.agent} is not a member of #{name}.")
        return self._channel(caller, name)

    def list_channels(self, caller: Caller) -> list[Channel]:
        return self.store.directory.list_channels(caller.workspace, caller.agent)

    def channel_members(self, caller: Caller, name: str) -> list[ChannelMember]:
        """Who is in the channel; an invite-only one's members are for those who may see them."""
        name = parse_channel_name(name)
        channel = self._channel(caller, name)
        if channel.invite_only and not channel.joined and not caller.person and caller.agent != channel.created_by:
            raise NotMember(f"#{name} is invite-only: its members are shown to its members only.")
        return self.store.directory.channel_members(caller.workspace, name)

    def _channel(self, caller: Caller, name: str) -> Channel:
        channel = self.store.directory.get_channel(caller.workspace, name, caller.agent)
        if channel is None:
            raise UnknownChannel(
                f"no channel #{name} in workspace {caller.workspace}; create it with 'callboard channel create {name}'."
            )
        return channel

    # --- sessions ------------------------------------------------------------------------

    def register_session(self, caller: Caller, request: SessionRequest) -> Session:
        """The caller's process ``pid`` on ``machine`` (this one by default) as a session of its
        agent; another agent's session of that pid ends with it, once no longer live (see
        ``_claimable``)."""
        caller = as_agent(caller)
        pid, machine, proc_start, terminal = request.pid, request.machine, request.proc_start, request.terminal
        if not 1 <= pid <= PID_MAX:
            raise BadRequest(f"pid {shown(str(pid), 30)} is not a process id: pids are 1-{PID_MAX}.")
        if proc_start is not None and not 0 <= proc_start <= PROC_START_MAX:
            raise BadRequest(
                f"proc_start {shown(str(proc_start), 30)} is not a process start time: "
                f"it is 0-{PROC_START_MAX} clock ticks since boot, as /proc/PID/stat has it."
            )
        check_text(terminal, TERMINAL_CHARS, "terminal", hint=" (e.g. tmux:%3 or tty:/dev/pts/4)")
        runtime = parse_name(request.runtime, "runtime name")
        machine = parse_machine(machine) if machine else self.machine
        may_end = self._claimable(caller, machine, pid)
        self.enter(caller)  # a session's agent exists from its first session on
        new = NewSession(caller.workspace, caller.agent, machine, pid, runtime, proc_start, terminal, may_end=may_end)
        session = self.store.sessions.register_session(new, self.clock())
        if session is None:  # another agent registered the process meanwhile: say whose it is now
            self._sessions_changed(caller.workspace)
            self._claimable(caller, machine, pid)
            raise AlreadyExists(f"process {pid} on {machine} was just registered by another agent; try again.")
        cached = self._sessions_read.get(caller.workspace)
        if cached is not None:  # kept in place: a workspace of thousands is not listed again per session
            cached.registered(session)
        return self.liveness.marked(session, self.clock())

    def _claimable(self, caller: Caller, machine: str, pid: int) -> tuple[str, ...]:
        """Other agents' open sessions of process ``pid`` on ``machine``, which the caller's claim
        may end: none may be live. A live session belongs to its agent whatever start time the
        claim gives (on another machine the start time cannot be checked, so anyone could give
        another); once it ended or went quiet past the liveness window, its pid may have been
        handed out again, and the new process's agent takes it."""
        # From the open sessions this service keeps (re-read at most a second ago, or kept in
        # place): the store refuses to end any other, so a stale look fails safe.
        now, others = self.clock(), []
        for other in self._open(caller.workspace).of_process(machine, pid):
            if other.agent != caller.agent:
                if self.liveness.is_live(other, now):
                    raise AlreadyExists(
                        f"process {pid} on {machine} is a live session of {other.agent}; another agent cannot "
                        f"register it. Register your own process's pid, or wait until {other.agent}'s session "
                        f"ends (or stops reporting for {self.liveness.window_seconds:g} s)."
                    )
                others.append(other.id)
        return tuple(others)

    def heartbeat(self, caller: Caller, session_id: str, delivery_error: str | None = None) -> Session:
        """The session is still there; ``delivery_error`` says what its delivery path reports
        broken (a socket gone, a stream refused), None when it works."""
        caller = as_agent(caller)
        self._own_session(caller, session_id)
        if delivery_error is not None and delivery_error.strip():
            check_text(delivery_error, DELIVERY_ERROR_CHARS, "delivery_error")
        delivery_error = (delivery_error or "").strip() or None
        session = self.store.sessions.touch_session(caller.workspace, session_id, self.clock(), delivery_error)
        assert session is not None
        self._session_reported(session)
        return self.liveness.marked(session, self.clock())

    def end_session(self, caller: Caller, session_id: str) -> Session:
        """End the caller's own session (unknown_session for another agent's)."""
        self._own_session(caller, session_id)
        session = self.store.sessions.end_session(caller.workspace, session_id, self.clock())
        assert session is not None
        self._session_reported(session)
        return self.liveness.marked(session, self.clock())

    def _own_session(self, caller: Caller, session_id: str) -> Session:
        session = self.store.sessions.get_session(caller.workspace, session_id) if is_id(session_id) else None
        if session is None or session.agent != caller.agent:
            raise UnknownSession(f"no session {session_id} of agent {caller.agent}; 'callboard who' lists sessions.")
        return session

    def session_by_id(self, workspace: str, session_id: str) -> Session | None:
        """A session by id: an open one from the cached list, else from the store."""
        session = self._open(workspace).by_id.get(session_id)
        if session is not None:
            return session
        if not is_id(session_id):
            return None
        store_needed()
        return self.store.sessions.get_session(workspace, session_id)

    def session_address(self, caller: Caller) -> str | None:
        """agent@machine#pid of the session the caller acts in, if it acts in one."""
        caller = as_agent(caller)
        session = self.session_by_id(caller.workspace, caller.session_id) if caller.session_id else None
        return session.address if session else None

    def in_session(
        self,
        caller: Caller,
        *,
        session_id: str | None = None,
        machine: str | None = None,
        lineage: Sequence[tuple[int, int | None]] = (),
    ) -> Caller:
        """The caller acting as one of its agent's sessions: ``session_id`` when given (it must
        be that agent's), else the open session on ``machine`` of the nearest process in
        ``lineage`` (the caller's own process, its parent, …: pid and start time), so a command
        an agent CLI runs acts as that CLI's session. Unchanged when none matches, and for a
        person who names no agent (no session is theirs)."""
        if caller.agent is None:
            return caller
        if session_id is not None:
            session = self.session_by_id(caller.workspace, session_id)
            if session is None or session.agent != caller.agent:
                raise UnknownSession(
                    f"no session {session_id} of agent {caller.agent}; 'callboard who' lists sessions."
                )
            return caller.model_copy(update={"session_id": session.id})
        if not lineage:
            return caller
        machine = parse_machine(machine) if machine else self.machine
        mine = [s for s in self._open(caller.workspace).of(caller.agent) if s.machine == machine]
        for pid, start in lineage:
            for session in mine:
                if session.pid == pid and (start is None or session.proc_start in (None, start)):
                    return caller.model_copy(update={"session_id": session.id})
        return caller

    def hidden_targets(self, caller: Caller) -> tuple[str, ...]:
        """The sessions whose mail a read by ``caller`` skips: its agent's other live sessions.
        Mail pushed to one pane is that pane's while it lives; once it is gone, any pane's (and
        a read as the agent, in no session, sees the whole mailbox)."""
        if caller.session_id is None or caller.agent is None:  # (a session is always an agent's)
            return ()
        now = self.clock()
        return tuple(
            s.id
            for s in self._open(caller.workspace).of(caller.agent)
            if s.id != caller.session_id and self.liveness.is_live(s, now)
        )

    def live_sessions_by_agent(self, caller: Caller, agents: Sequence[str], now: datetime) -> dict[str, list[Session]]:
        """Live sessions of these agents (liveness judged now, on the workspace's open sessions)."""
        open_now = self._open(caller.workspace)
        live: dict[str, list[Session]] = {}
        for agent in agents:
            marked = (self.liveness.marked(session, now) for session in open_now.of(agent))
            live[agent] = [session for session in marked if session.live]
        return live

    def _open(self, workspace: str) -> OpenSessions:
        """The workspace's open sessions by agent and id, read from the store at most once a
        second (a large workspace less often: see ``OpenSessions``): every send needs them.

        Sessions registered through this service are read again at once, reported or ended
        ones updated in place (a hub sees every change so); another process's change is seen
        within a second."""
        cached = self._sessions_read.get(workspace)
        if cached is not None and not cached.stale:
            if cached.ageing and memory_only():
                refresh_ahead((self, "sessions", workspace), lambda: self._list_sessions(workspace))
            return cached
        store_needed()
        return self._list_sessions(workspace)

    def _list_sessions(self, workspace: str) -> OpenSessions:
        fresh = OpenSessions.listed(lambda: self.store.sessions.list_sessions(workspace))
        self._sessions_read[workspace] = fresh
        return fresh

    def _sessions_changed(self, workspace: str) -> None:
        self._sessions_read.pop(workspace, None)

    def _session_reported(self, session: Session) -> None:
        cached = self._sessions_read.get(session.workspace)
        if cached is not None:
            cached.replace(session)


def offers_skill(skills: Sequence[str], wanted: str) -> bool:
    """Whether ``skills`` holds ``wanted``: the whole skill name, case and surrounding blanks
    aside ("Review" finds "review", not "code review": a filter that says what it means)."""
    folded = wanted.strip().casefold()
    return any(skill.strip().casefold() == folded for skill in skills)


def _no_agent(caller: Caller, name: str) -> UnknownAgent:
    return UnknownAgent(f"no agent named {name} in workspace {caller.workspace}; 'callboard agent list' shows them.")
