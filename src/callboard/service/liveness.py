"""When a session counts as live.

Live: not ended, reported within the liveness window, and — when it runs on this machine —
its process is still the one that registered (pid and start time), so a crashed session or a
recycled pid is never reported as a place mail was delivered to.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from callboard.limits import DEFAULT_WINDOW_SECONDS
from callboard.model import Session
from callboard.procs import process_alive


@dataclass(frozen=True, slots=True)
class Liveness:
    machine: str  # this machine: its sessions' processes can be checked directly
    window_seconds: float = DEFAULT_WINDOW_SECONDS

    def is_live(self, session: Session, now: datetime) -> bool:
        if session.ended_at is not None:
            return False
        if not self.recent(session.last_seen, now):
            return False
        if session.machine == self.machine:
            return process_alive(session.pid, session.proc_start)
        return True

    def recent(self, last_seen: datetime, now: datetime) -> bool:
        return (now - last_seen).total_seconds() <= self.window_seconds

    def marked(self, session: Session, now: datetime) -> Session:
        """The session with its ``live`` flag set as of ``now``."""
        return session.model_copy(update={"live": self.is_live(session, now)})


# --- open sessions, as the directory keeps them in memory so that a send costs what its
# recipients cost, not what the workspace holds. Read from the store now and then (other
# processes and replicas change it too), kept current in between by this process's own changes.

SESSIONS_FRESH_SECONDS = 1.0  # another process's session change is seen within this (small workspaces)
RELIST_DUTY = 0.02  # a large workspace's sessions are listed again at most this share of the time


class OpenSessions:
    """One workspace's open sessions as the store listed them, indexed by agent and by id; a
    heartbeat or an end through this service updates them in place (copy on write: a reader in
    another thread keeps a consistent list)."""

    def __init__(self, sessions: Sequence[Session], listed_in: float) -> None:
        self.read_at = time.monotonic()
        # Listing 10,000 sessions takes tens of milliseconds: a large workspace is listed less
        # often, so that its re-listing costs at most RELIST_DUTY of a core.
        self.fresh_for = max(SESSIONS_FRESH_SECONDS, listed_in / RELIST_DUTY)
        self.by_id: dict[str, Session] = {}
        self.by_agent: dict[str, list[Session]] = {}
        for session in sessions:  # newest first, as the store lists them
            self.by_id[session.id] = session
            self.by_agent.setdefault(session.agent, []).append(session)

    @classmethod
    def listed(cls, list_sessions: Callable[[], Sequence[Session]]) -> OpenSessions:
        began = time.monotonic()
        sessions = list_sessions()
        return cls(sessions, time.monotonic() - began)

    @property
    def stale(self) -> bool:
        return time.monotonic() - self.read_at >= self.fresh_for

    @property
    def ageing(self) -> bool:
        """Past half its freshness: time to list them again (``from_memory.refresh_ahead``)."""
        return time.monotonic() - self.read_at >= self.fresh_for / 2

    def of(self, agent: str) -> list[Session]:
        return self.by_agent.get(agent, [])

    def registered(self, session: Session) -> None:
        """A session registered (new, or refreshed) through this service: as the store did, every
        other open session of its process ended (a recycled pid, or a dead one taken over)."""
        for old in self.of_process(session.machine, session.pid):
            if old.id != session.id:
                self.replace(old.model_copy(update={"ended_at": session.last_seen}))
        if session.id in self.by_id:
            self.replace(session)
            return
        self.by_id[session.id] = session
        mine = [session, *self.by_agent.get(session.agent, [])]
        self.by_agent[session.agent] = sorted(mine, key=lambda s: s.started_at, reverse=True)

    def of_process(self, machine: str, pid: int) -> list[Session]:
        """The open sessions of process ``pid`` on ``machine`` (another agent's, a recycled pid's)."""
        return [s for s in self.by_id.values() if s.machine == machine and s.pid == pid]

    def replace(self, session: Session) -> None:
        """A session reported (heartbeat): its new state; an ended one leaves."""
        if session.id not in self.by_id:
            return  # not open when listed: the next listing has it
        mine = [s for s in self.by_agent.get(session.agent, []) if s.id != session.id]
        if session.ended_at is None:
            mine = sorted([*mine, session], key=lambda s: s.started_at, reverse=True)
            self.by_id[session.id] = session
        else:
            self.by_id.pop(session.id, None)
        self.by_agent[session.agent] = mine
