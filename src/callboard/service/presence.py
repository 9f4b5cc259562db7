"""Presence: the reach rule (``callboard.reach``) on the store's facts, and who is there (``who``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from callboard.address import AgentAddress, ChannelAddress, parse_address
from callboard.errors import BadRequest
from callboard.model import (
    AgentPresence,
    Caller,
    DeliveryState,
    HeldMail,
    Machine,
    Reach,
    RecipientStatus,
    Session,
    WhoReport,
)
from callboard.service import holds

if TYPE_CHECKING:
    from callboard.service.directory import Directory
    from callboard.service.liveness import Liveness
    from callboard.store.base import Store

from callboard.reach import reach


class Presence:
    """Whether an address reaches anyone now, and who is there (``who``)."""

    def __init__(self, store: Store, directory: Directory, liveness: Liveness, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.directory = directory
        self.liveness = liveness
        self.clock = clock

    def reach(self, caller: Caller, address: str) -> Reach:
        """Whether an agent address can be reached now, and if not, plainly why."""
        parsed = parse_address(address)
        if not isinstance(parsed, AgentAddress):
            what = "a channel" if isinstance(parsed, ChannelAddress) else "an outside A2A agent's URL"
            raise BadRequest(
                f"{address!r} is {what}; ask about an agent address (name, name@machine, name@machine#pid)."
            )
        return self.of_address(caller, parsed, self.clock())[0]

    def of_address(self, caller: Caller, address: AgentAddress, now: datetime) -> tuple[Reach, list[Session]]:
        """The address's reach, and every session of its agent (newest first, ``live`` marked)."""
        exists = self.directory.agent_exists(caller.workspace, address.name)
        stored = self.store.sessions.list_sessions(caller.workspace, address.name, include_ended=True) if exists else []
        sessions = [self.liveness.marked(s, now) for s in stored]
        return self._among(address, exists, sessions, self._machines_seen(caller.workspace), now), sessions

    def _among(
        self, address: AgentAddress, exists: bool, sessions: list[Session], machines: dict[str, datetime], now: datetime
    ) -> Reach:
        return reach(
            address,
            exists=exists,
            sessions=sessions,
            machines=machines,
            window_seconds=self.liveness.window_seconds,
            now=now,
        )

    def _machines_seen(self, workspace: str) -> dict[str, datetime]:
        """Each machine of the workspace and when a session on it last reported."""
        return {m.name: m.last_seen for m in self.store.sessions.list_machines(workspace)}

    def with_reach(self, caller: Caller, statuses: list[RecipientStatus]) -> list[RecipientStatus]:
        """Each recipient that has not read the message yet, with whether it can be reached now
        (and if not, why): mail that waits should say what it waits for."""

        def waiting(row: RecipientStatus) -> bool:
            # The store's states (a guard's "held" is only put on for people to read, after this).
            return (
                row.agent is not None
                and isinstance(row.state, DeliveryState)
                and row.state.rank < DeliveryState.read.rank
            )

        if not any(waiting(row) for row in statuses):
            return statuses
        now = self.clock()
        sessions = self._sessions_by_agent(caller.workspace, now, include_ended=True)  # read once for all rows
        machines = self._machines_seen(caller.workspace)

        def with_reach(row: RecipientStatus) -> RecipientStatus:
            parsed = parse_address(row.address)
            if not isinstance(parsed, AgentAddress) or parsed.name != row.agent:
                parsed = AgentAddress(row.agent or "")  # reached through a channel: the agent's mailbox
            found = self._among(parsed, True, sessions.get(parsed.name, []), machines, now)
            return row.model_copy(update={"reach": found})

        return [with_reach(row) if waiting(row) else row for row in statuses]

    def _sessions_by_agent(self, workspace: str, now: datetime, include_ended: bool) -> dict[str, list[Session]]:
        """The workspace's sessions by agent, ``live`` marked (a workspace may have thousands)."""
        sessions: dict[str, list[Session]] = {}
        for session in self.store.sessions.list_sessions(workspace, include_ended=include_ended):
            sessions.setdefault(session.agent, []).append(self.liveness.marked(session, now))
        return sessions

    def who(self, caller: Caller) -> WhoReport:
        """Every agent of the workspace with its sessions, unread count and the mail a guard
        holds now, and every machine, up or down."""
        now = self.clock()
        sessions = self._sessions_by_agent(caller.workspace, now, include_ended=False)
        held_by: dict[str, list[HeldMail]] = {}
        for mail in holds.held_mail(self.store.guard_facts, caller.workspace, None, now):  # one query for all of them
            held_by.setdefault(mail.recipient, []).append(mail)
        agents = [
            AgentPresence(
                name=agent.name,
                description=agent.description,
                skills=agent.skills,
                live=any(s.live for s in sessions.get(agent.name, ())),
                unread=self.store.mailbox.unread_count(caller.workspace, agent.name),
                sessions=sessions.get(agent.name, []),
                held=held_by.get(agent.name, []),
            )
            for agent in self.store.directory.list_agents(caller.workspace)
        ]
        machines = [
            Machine(name=m.name, last_seen=m.last_seen, up=self.liveness.recent(m.last_seen, now))
            for m in self.store.sessions.list_machines(caller.workspace)
        ]
        return WhoReport(
            workspace=caller.workspace, agents=agents, machines=machines, liveness_seconds=self.liveness.window_seconds
        )
