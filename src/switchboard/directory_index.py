"""What the directory keeps in memory so that a send costs what its recipients cost, not what the
workspace holds: each workspace's open sessions by agent and by id, and its agent names indexed
for did-you-mean guesses.

Both are read from the store now and then (other processes, other replicas change it too) and
kept current in between by the changes made through this process's service.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from switchboard.model import Session
from switchboard.name_index import NameIndex

SESSIONS_FRESH_SECONDS = 1.0  # another process's session change is seen within this (small workspaces)
RELIST_DUTY = 0.02  # a large workspace's sessions are listed again at most this share of the time
NAMES_FRESH_SECONDS = 30.0  # agents created or deleted by another process are guessed within this


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


class AgentNames:
    """One workspace's agent names, indexed (see ``name_index``). Changes made through this
    service are queued without waiting (an event loop may make them) and applied by the next
    guess; every NAMES_FRESH_SECONDS a guess first reads the names from the store again."""

    def __init__(self) -> None:
        self._index: NameIndex | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()
        self._changes: deque[tuple[bool, str]] = deque()  # (added, name)

    def noted(self, name: str, added: bool) -> None:
        self._changes.append((added, name))

    def closest(self, name: str, list_names: Callable[[], Iterable[str]]) -> list[str]:
        with self._lock:
            found = self._current(list_names).closest(name)
        time.sleep(0)  # let the GIL go: a send guessing a hundred names must not hold up an event loop
        return found

    def _current(self, list_names: Callable[[], Iterable[str]]) -> NameIndex:
        if self._index is None or time.monotonic() - self._read_at >= NAMES_FRESH_SECONDS:
            self._read_at = time.monotonic()
            stored = set(list_names())
            if self._index is None:
                self._index = NameIndex(stored)
            else:  # only the difference: other processes' creations and deletions
                for gone in self._index.names - stored:
                    self._index.remove(gone)
                for new in stored - self._index.names:
                    self._index.add(new)
        while self._changes:
            added, name = self._changes.popleft()
            (self._index.add if added else self._index.remove)(name)
        return self._index
