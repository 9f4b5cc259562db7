"""Where an agent address reaches now: the live session its mail is pushed to, or plainly why none.

``name`` reaches the agent's newest live session, ``name@machine`` its newest live session on
that machine, ``name@machine#pid`` exactly that session. A session that ended or went quiet
never shadows a live one (only live sessions are candidates), and a pid that a newer process
reuses is a new session (its own id), so it never inherits mail meant for the dead one.
The rule (``reach``) is pure: the caller hands in the sessions (live flags marked) and the
machines' last reports. ``Presence``, one of the service's collaborators, reads those facts from
the store and answers ``reach`` and ``who``; ``AgentNames`` guesses the name a typo meant.
"""

from __future__ import annotations

import difflib
import heapq
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from callboard.address import AgentAddress, ChannelAddress, parse_address
from callboard.delivery import holds
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

if TYPE_CHECKING:
    from callboard.directory import Directory
    from callboard.liveness import Liveness
    from callboard.store.base import Store


def reach(
    address: AgentAddress,
    *,
    exists: bool,
    sessions: Sequence[Session],
    machines: Mapping[str, datetime],
    window_seconds: float,
    now: datetime,
) -> Reach:
    """``sessions``: every session of the agent, ended ones too, newest first, ``live`` marked.
    ``machines``: each machine of the workspace and when a session on it last reported."""
    text = str(address)
    if not exists:
        return Reach(address=text, state="unknown_agent", reason=f"no agent named {address.name} exists.")
    candidates = [
        s
        for s in sessions
        if (address.machine is None or s.machine == address.machine) and (address.pid is None or s.pid == address.pid)
    ]
    live = [s for s in candidates if s.live]
    if live:
        target = live[0]
        common = {"address": text, "sessions": [s.address for s in live], "session": target.address}
        if target.delivery_error:
            return Reach(
                **common,
                state="path_broken",
                machine=target.machine,
                reason=f"{target.address} is live but its delivery path reports: {target.delivery_error}; "
                f"mail waits in {address.name}'s mailbox until that session reads it.",
            )
        return Reach(**common, state="live", machine=target.machine, reason=f"pushed to {target.address}.")
    return _unreached(address, candidates, machines, window_seconds, now)


def _unreached(
    address: AgentAddress,
    candidates: Sequence[Session],
    machines: Mapping[str, datetime],
    window_seconds: float,
    now: datetime,
) -> Reach:
    """Nothing live answers the address: which of the plain reasons it is, most specific first."""
    text = str(address)
    machine = address.machine or (candidates[0].machine if candidates else None)
    last_seen = machines.get(machine) if machine else None
    down = last_seen is not None and (now - last_seen).total_seconds() > window_seconds
    detail = _no_live_session(address, candidates, window_seconds)
    if address.machine is not None and address.machine not in machines:
        detail += f"; no machine named {address.machine} has reported"
    if not candidates and address.machine is not None:  # a wrong address, not an absent agent
        return Reach(address=text, state="unknown_address", machine=address.machine, reason=f"{detail}.")
    if down:
        assert machine is not None and last_seen is not None
        return Reach(
            address=text,
            state="machine_down",
            machine=machine,
            machine_last_seen=last_seen,
            reason=f"{detail}; machine {machine} is down: none of its sessions reported since "
            f"{_when(last_seen)} ({_ago(now, last_seen)} ago, window {window_seconds:g} s).",
        )
    return Reach(
        address=text, state="no_live_session", machine=machine, machine_last_seen=last_seen, reason=f"{detail}."
    )


def _no_live_session(address: AgentAddress, candidates: Sequence[Session], window_seconds: float) -> str:
    """Why none of the address's sessions (``candidates``, newest first) is live, in words."""
    text = str(address)
    if address.pid is not None:
        if not candidates:
            return f"no session {text} has ever reported"
        return f"session {text} is not live: {_gone(candidates[0], window_seconds)}"
    where = "" if address.machine is None else f" on {address.machine}"
    if candidates:
        newest = candidates[0]
        return f"{address.name} has no live session{where} (newest: {newest.address}, {_gone(newest, window_seconds)})"
    return f"{address.name} has no session{where} that ever reported"


def _gone(session: Session, window_seconds: float) -> str:
    if session.ended_at is not None:
        return f"ended {_when(session.ended_at)}"
    return f"last seen {_when(session.last_seen)}, past the {window_seconds:g} s liveness window"


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _ago(now: datetime, then: datetime) -> str:
    seconds = max(0, int((now - then).total_seconds()))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


# --- did-you-mean: the names close to a given one, found without comparing it with every name.
#
# A symmetric-delete index: each name is filed under itself and every string one deletion away
# from it; a query looks up itself and the strings one and two deletions away from it. Two names
# meet when deleting at most two letters from the query and at most one from the name gives the
# same string: every name one edit away (a letter added, dropped, changed, or two neighbours
# swapped) and the common two-edit typos (two letters added; one added and one changed). The few
# names found are then ranked by ``difflib``'s ratio, as ``difflib.get_close_matches`` ranks.
#
# A query costs the lookups of its own deletions (a few hundred for a long name), not the size
# of the index; each name costs about its length in entries (a name's two-deletion strings would
# cost the square of it, which is too much memory for tens of thousands of names).

MOST_CANDIDATES = 256  # ranked per query, at most: a dense run of names (agent-0001…) is all close


def deletions(name: str, depth: int) -> list[set[str]]:
    """``name`` (first), the strings one deletion from it, …, ``depth`` deletions from it."""
    levels = [{name}]
    for _ in range(depth):
        levels.append({word[:i] + word[i + 1 :] for word in levels[-1] for i in range(len(word))})
    return levels


def _keys(name: str) -> set[str]:
    """Where a name is filed: under itself and every string one deletion from it."""
    return set().union(*deletions(name, 1))


class NameIndex:
    """Names, and for any string the names close to it. Not thread-safe: its owner locks."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        # key -> the one name filed under it, or a list of them (most keys have one: no list)
        self._filed: dict[str, str | list[str]] = {}
        self._names: set[str] = set()
        for name in names:
            self.add(name)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._names)

    def add(self, name: str) -> None:
        if name in self._names:
            return
        self._names.add(name)
        for key in _keys(name):
            filed = self._filed.get(key)
            if filed is None:
                self._filed[key] = name
            elif isinstance(filed, str):
                self._filed[key] = [filed, name]
            else:
                filed.append(name)

    def remove(self, name: str) -> None:
        if name not in self._names:
            return
        self._names.discard(name)
        for key in _keys(name):
            filed = self._filed.get(key)
            if filed == name:
                del self._filed[key]
            elif isinstance(filed, list):
                filed.remove(name)
                if len(filed) == 1:
                    self._filed[key] = filed[0]

    def closest(self, word: str, n: int = 2, cutoff: float = 0.75) -> list[str]:
        """Up to ``n`` names near ``word`` (not ``word`` itself) whose ``difflib`` ratio to it is
        at least ``cutoff``, best first (as ``difflib.get_close_matches`` orders them)."""
        candidates: set[str] = set()
        for level in deletions(word, 2):  # the nearest first: a long run of close names stops early
            for key in level:
                filed = self._filed.get(key)
                if filed is not None:
                    candidates.update((filed,) if isinstance(filed, str) else filed)
            if len(candidates) >= MOST_CANDIDATES:
                break
        candidates.discard(word)
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(word)
        scored = []
        for name in candidates:
            matcher.set_seq1(name)
            if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
                score = matcher.ratio()
                if score >= cutoff:
                    scored.append((score, name))
        return [name for _, name in heapq.nlargest(n, scored)]


# --- a workspace's agent names, indexed, as the directory keeps them in memory

NAMES_FRESH_SECONDS = 30.0  # agents created or deleted by another process are guessed within this


class AgentNames:
    """One workspace's agent names, indexed (see ``NameIndex``). Changes made through this
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


# --- presence: the rule above, on the store's facts


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
        stored = self.store.list_sessions(caller.workspace, address.name, include_ended=True) if exists else []
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
        return {m.name: m.last_seen for m in self.store.list_machines(workspace)}

    def with_reach(self, caller: Caller, statuses: list[RecipientStatus]) -> list[RecipientStatus]:
        """Each recipient that has not read the message yet, with whether it can be reached now
        (and if not, why): mail that waits should say what it waits for."""

        def waiting(row: RecipientStatus) -> bool:
            return (
                row.agent is not None and row.state != "unknown_recipient" and row.state.rank < DeliveryState.read.rank
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
        for session in self.store.list_sessions(workspace, include_ended=include_ended):
            sessions.setdefault(session.agent, []).append(self.liveness.marked(session, now))
        return sessions

    def who(self, caller: Caller) -> WhoReport:
        """Every agent of the workspace with its sessions, unread count and the mail a guard
        holds now, and every machine, up or down."""
        now = self.clock()
        sessions = self._sessions_by_agent(caller.workspace, now, include_ended=False)
        held_by: dict[str, list[HeldMail]] = {}
        for mail in holds.held_mail(self.store, caller.workspace, None, now):  # one query for all of them
            held_by.setdefault(mail.recipient, []).append(mail)
        agents = [
            AgentPresence(
                name=agent.name,
                description=agent.description,
                skills=agent.skills,
                live=any(s.live for s in sessions.get(agent.name, ())),
                unread=self.store.unread_count(caller.workspace, agent.name),
                sessions=sessions.get(agent.name, []),
                held=held_by.get(agent.name, []),
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
