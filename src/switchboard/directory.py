"""Agents, channels, sessions and presence: who is there, and whether an address reaches anyone.

A part of ``Service`` (which inherits it), kept in its own module because it is its own idea:
the directory that sending and reading consult.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from switchboard.address import AgentAddress, parse_address, parse_channel_name, parse_machine, parse_name, shown
from switchboard.bounds import DELIVERY_ERROR_CHARS, PID_MAX, PROC_START_MAX, SKILL_CHARS, TERMINAL_CHARS
from switchboard.content import Limits, check_text, is_id
from switchboard.errors import (
    AlreadyExists,
    BadRequest,
    NotMember,
    TooLarge,
    UnknownAgent,
    UnknownChannel,
    UnknownSession,
)
from switchboard.liveness import Liveness
from switchboard.model import (
    Agent,
    AgentPresence,
    Caller,
    Channel,
    ChannelMember,
    DeliveryState,
    Machine,
    Reach,
    RecipientStatus,
    Session,
    WhoReport,
)
from switchboard.reach import reach as reach_of
from switchboard.store.base import NewSession, Store

SESSIONS_FRESH_SECONDS = 1.0


class Directory:
    store: Store
    machine: str
    liveness: Liveness
    limits: Limits
    clock: Callable[[], datetime]
    _known_agents: set[tuple[str, str]]
    _sessions_read: dict[str, tuple[float, list[Session]]]

    def _agent_exists(self, workspace: str, name: str) -> bool:
        """Whether the agent exists; a yes is remembered (sends ask it for every recipient).

        An agent deleted by another process since is caught by the store when the send
        commits (``unknown_recipient``); one deleted through this service is forgotten."""
        if (workspace, name) in self._known_agents:
            return True
        exists = self.store.get_agent(workspace, name) is not None
        if exists:
            self._known_agents.add((workspace, name))
        return exists

    def _did_you_mean(self, workspace: str, name: str) -> str:
        """For a name that names no agent: " Did you mean 'backend'?" when agents of close names
        exist (a typo would otherwise create an agent nobody reads), else nothing."""
        known = [agent.name for agent in self.store.list_agents(workspace) if agent.name != name]
        guesses = difflib.get_close_matches(name, known, n=2, cutoff=0.75)
        return f" Did you mean {' or '.join(repr(g) for g in guesses)}?" if guesses else ""

    # --- agents --------------------------------------------------------------------------

    def create_agent(
        self, caller: Caller, name: str, description: str | None = None, skills: Sequence[str] = ()
    ) -> Agent:
        name = parse_name(name, "agent name")
        self._check_card(description, skills)
        if not self.store.create_agent(caller.workspace, name, description, list(skills), self.clock()):
            raise AlreadyExists(f"agent {name} already exists; use 'agent describe {name}' to change it.")
        return self.describe_agent(caller, name)

    def describe_agent(self, caller: Caller, name: str) -> Agent:
        name = parse_name(name, "agent name")
        agent = self.store.get_agent(caller.workspace, name)
        if agent is None:
            raise UnknownAgent(
                f"no agent named {name} in workspace {caller.workspace}; 'switchboard agent list' shows them."
            )
        return agent

    def update_agent(
        self, caller: Caller, name: str, description: str | None = None, skills: Sequence[str] | None = None
    ) -> Agent:
        name = parse_name(name, "agent name")
        self._check_card(description, skills or ())
        if not self.store.update_agent(caller.workspace, name, description, None if skills is None else list(skills)):
            self.describe_agent(caller, name)  # raises unknown_agent
        return self.describe_agent(caller, name)

    def list_agents(self, caller: Caller) -> list[Agent]:
        return self.store.list_agents(caller.workspace)

    def delete_agent(self, caller: Caller, name: str) -> None:
        name = parse_name(name, "agent name")
        self._known_agents.discard((caller.workspace, name))
        deleted = self.store.delete_agent(caller.workspace, name)
        self._sessions_changed(caller.workspace)
        if not deleted:
            self.describe_agent(caller, name)

    def _check_card(self, description: str | None, skills: Sequence[str]) -> None:
        if description is not None and description.strip():  # a blank description clears it
            check_text(description, self.limits.description_chars, "the description")
        if len(skills) > self.limits.skills:
            raise TooLarge(f"{len(skills)} skills given; the limit is {self.limits.skills}.")
        for skill in skills:
            check_text(skill, SKILL_CHARS, f"skill {shown(skill, 40)!r}")

    # --- channels ------------------------------------------------------------------------

    def create_channel(self, caller: Caller, name: str, description: str | None = None) -> Channel:
        name = parse_channel_name(name)
        self._check_card(description, ())
        if not self.store.create_channel(caller.workspace, name, caller.agent, description, self.clock()):
            raise AlreadyExists(f"channel #{name} already exists; join it with 'switchboard channel join {name}'.")
        return self._channel(caller, name)

    def join_channel(self, caller: Caller, name: str) -> Channel:
        name = parse_channel_name(name)
        self._channel(caller, name)
        self.store.join_channel(caller.workspace, name, caller.agent, self.clock())
        return self._channel(caller, name)

    def leave_channel(self, caller: Caller, name: str) -> Channel:
        name = parse_channel_name(name)
        self._channel(caller, name)
        if not self.store.leave_channel(caller.workspace, name, caller.agent):
            raise NotMember(f"{caller.agent} is not a member of #{name}.")
        return self._channel(caller, name)

    def list_channels(self, caller: Caller) -> list[Channel]:
        return self.store.list_channels(caller.workspace, caller.agent)

    def channel_members(self, caller: Caller, name: str) -> list[ChannelMember]:
        name = parse_channel_name(name)
        self._channel(caller, name)
        return self.store.channel_members(caller.workspace, name)

    def _channel(self, caller: Caller, name: str) -> Channel:
        channel = self.store.get_channel(caller.workspace, name, caller.agent)
        if channel is None:
            raise UnknownChannel(
                f"no channel #{name} in workspace {caller.workspace}; create it with 'switchboard channel create {name}'."
            )
        return channel

    # --- sessions ------------------------------------------------------------------------

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
        if not 1 <= pid <= PID_MAX:
            raise BadRequest(f"pid {shown(str(pid), 30)} is not a process id: pids are 1-{PID_MAX}.")
        if proc_start is not None and not 0 <= proc_start <= PROC_START_MAX:
            raise BadRequest(
                f"proc_start {shown(str(proc_start), 30)} is not a process start time: "
                f"it is 0-{PROC_START_MAX} clock ticks since boot, as /proc/PID/stat has it."
            )
        check_text(terminal, TERMINAL_CHARS, "terminal", hint=" (e.g. tmux:%3 or tty:/dev/pts/4)")
        runtime = parse_name(runtime, "runtime name")
        machine = parse_machine(machine) if machine else self.machine
        now = self.clock()
        for other in self.store.list_sessions(caller.workspace):
            # A live process belongs to the agent that registered it; only a dead or recycled
            # pid may be claimed by another agent (the store then ends the old session).
            if other.machine == machine and other.pid == pid and other.agent != caller.agent:
                if self.liveness.is_live(other, now) and (proc_start is None or other.proc_start == proc_start):
                    raise AlreadyExists(
                        f"process {pid} on {machine} is a live session of {other.agent}; "
                        "it must end (or its process exit) before another agent registers it."
                    )
        session = self.store.register_session(
            NewSession(caller.workspace, caller.agent, machine, pid, runtime, proc_start, terminal), self.clock()
        )
        self._sessions_changed(caller.workspace)
        return self.liveness.marked(session, self.clock())

    def heartbeat(self, caller: Caller, session_id: str, delivery_error: str | None = None) -> Session:
        """The session is still there; ``delivery_error`` says what its delivery path reports
        broken (a socket gone, a stream refused), None when it works."""
        self._own_session(caller, session_id)
        if delivery_error is not None and delivery_error.strip():
            check_text(delivery_error, DELIVERY_ERROR_CHARS, "delivery_error")
        delivery_error = (delivery_error or "").strip() or None
        session = self.store.touch_session(caller.workspace, session_id, self.clock(), delivery_error)
        self._sessions_changed(caller.workspace)
        assert session is not None
        return self.liveness.marked(session, self.clock())

    def end_session(self, caller: Caller, session_id: str) -> Session:
        self._own_session(caller, session_id)
        session = self.store.end_session(caller.workspace, session_id, self.clock())
        self._sessions_changed(caller.workspace)
        assert session is not None
        return self.liveness.marked(session, self.clock())

    def _own_session(self, caller: Caller, session_id: str) -> Session:
        session = self.store.get_session(caller.workspace, session_id) if is_id(session_id) else None
        if session is None or session.agent != caller.agent:
            raise UnknownSession(f"no session {session_id} of agent {caller.agent}; 'switchboard who' lists sessions.")
        return session

    def session_by_id(self, workspace: str, session_id: str) -> Session | None:
        """A session by id: an open one from the cached list, else from the store."""
        for session in self._open_sessions(workspace):
            if session.id == session_id:
                return session
        return self.store.get_session(workspace, session_id) if is_id(session_id) else None

    def session_address(self, caller: Caller) -> str | None:
        """agent@machine#pid of the session the caller acts in, if it acts in one."""
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
        an agent CLI runs acts as that CLI's session. Unchanged when none matches."""
        if session_id is not None:
            session = self.session_by_id(caller.workspace, session_id)
            if session is None or session.agent != caller.agent:
                raise UnknownSession(
                    f"no session {session_id} of agent {caller.agent}; 'switchboard who' lists sessions."
                )
            return caller.model_copy(update={"session_id": session.id})
        if not lineage:
            return caller
        machine = parse_machine(machine) if machine else self.machine
        mine = [s for s in self._open_sessions(caller.workspace) if s.agent == caller.agent and s.machine == machine]
        for pid, start in lineage:
            for session in mine:
                if session.pid == pid and (start is None or session.proc_start in (None, start)):
                    return caller.model_copy(update={"session_id": session.id})
        return caller

    def hidden_targets(self, caller: Caller) -> tuple[str, ...]:
        """The sessions whose mail a read by ``caller`` skips: its agent's other live sessions.
        Mail pushed to one pane is that pane's while it lives; once it is gone, any pane's (and
        a read as the agent, in no session, sees the whole mailbox)."""
        if caller.session_id is None:
            return ()
        now = self.clock()
        return tuple(
            s.id
            for s in self._open_sessions(caller.workspace)
            if s.agent == caller.agent and s.id != caller.session_id and self.liveness.is_live(s, now)
        )

    def _live_sessions_by_agent(self, caller: Caller, agents: Sequence[str], now: datetime) -> dict[str, list[Session]]:
        """Live sessions of these agents (liveness judged now, on the workspace's open sessions)."""
        wanted, live = set(agents), {agent: [] for agent in agents}
        for session in self._open_sessions(caller.workspace):
            if session.agent in wanted and (marked := self.liveness.marked(session, now)).live:
                live[session.agent].append(marked)
        return live

    def _open_sessions(self, workspace: str) -> list[Session]:
        """The workspace's open sessions, read at most once a second: every send needs them.

        Sessions registered, reported or ended through this service refresh them at once (a
        hub sees every change so); another process's change is seen within a second."""
        cached = self._sessions_read.get(workspace)
        if cached is not None and time.monotonic() - cached[0] < SESSIONS_FRESH_SECONDS:
            return cached[1]
        sessions = self.store.list_sessions(workspace)
        self._sessions_read[workspace] = (time.monotonic(), sessions)
        return sessions

    def _sessions_changed(self, workspace: str) -> None:
        self._sessions_read.pop(workspace, None)

    # --- presence ------------------------------------------------------------------------

    def reach(self, caller: Caller, address: str) -> Reach:
        """Whether an agent address can be reached now, and if not, plainly why."""
        parsed = parse_address(address)
        if not isinstance(parsed, AgentAddress):
            raise BadRequest(
                f"{address!r} is a channel; ask about an agent address (name, name@machine, name@machine#pid)."
            )
        return self._reach(caller, parsed, self.clock())[0]

    def _reach(self, caller: Caller, address: AgentAddress, now: datetime) -> tuple[Reach, list[Session]]:
        """The address's reach, and every session of its agent (newest first, ``live`` marked)."""
        exists = self._agent_exists(caller.workspace, address.name)
        stored = self.store.list_sessions(caller.workspace, address.name, include_ended=True) if exists else []
        sessions = [self.liveness.marked(s, now) for s in stored]
        return self._reach_among(address, exists, sessions, self._machines_seen(caller.workspace), now), sessions

    def _reach_among(
        self, address: AgentAddress, exists: bool, sessions: list[Session], machines: dict[str, datetime], now: datetime
    ) -> Reach:
        return reach_of(
            address,
            exists=exists,
            sessions=sessions,
            machines=machines,
            window_seconds=self.liveness.window_seconds,
            now=now,
        )

    def _machines_seen(self, workspace: str) -> dict[str, datetime]:
        """Each machine of the workspace and when a session on it last reported."""
        return {m.name: m.last_seen for m in self.store.list_machines(workspace)}

    def _with_reach(self, caller: Caller, statuses: list[RecipientStatus]) -> list[RecipientStatus]:
        """Each recipient that has not read the message yet, with whether it can be reached now
        (and if not, why): mail that waits should say what it waits for."""

        def waiting(row: RecipientStatus) -> bool:
            return (
                row.agent is not None and row.state != "unknown_recipient" and row.state.rank < DeliveryState.read.rank
            )

        if not any(waiting(row) for row in statuses):
            return statuses
        now = self.clock()
        sessions: dict[str, list[Session]] = {}  # every agent's, read once for all the rows
        for session in self.store.list_sessions(caller.workspace, include_ended=True):
            sessions.setdefault(session.agent, []).append(self.liveness.marked(session, now))
        machines = self._machines_seen(caller.workspace)

        def with_reach(row: RecipientStatus) -> RecipientStatus:
            parsed = parse_address(row.address)
            if not isinstance(parsed, AgentAddress) or parsed.name != row.agent:
                parsed = AgentAddress(row.agent or "")  # reached through a channel: the agent's mailbox
            found = self._reach_among(parsed, True, sessions.get(parsed.name, []), machines, now)
            return row.model_copy(update={"reach": found})

        return [with_reach(row) if waiting(row) else row for row in statuses]

    def who(self, caller: Caller) -> WhoReport:
        now = self.clock()
        sessions = [self.liveness.marked(s, now) for s in self.store.list_sessions(caller.workspace)]
        agents = [
            AgentPresence(
                name=agent.name,
                description=agent.description,
                live=any(s.live for s in sessions if s.agent == agent.name),
                unread=self.store.unread_count(caller.workspace, agent.name),
                sessions=[s for s in sessions if s.agent == agent.name],
            )
            for agent in self.store.list_agents(caller.workspace)
        ]
        machines = [
            Machine(name=m.name, last_seen=m.last_seen, up=self.liveness.recent(m.last_seen, now))
            for m in self.store.list_machines(caller.workspace)
        ]
        return WhoReport(
            workspace=caller.workspace, agents=agents, machines=machines, liveness_seconds=self.liveness.window_seconds
        )
