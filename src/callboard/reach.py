"""Where an agent address reaches now: the live session its mail is pushed to, or plainly why none.

``name`` reaches the agent's newest live session, ``name@machine`` its newest live session on
that machine, ``name@machine#pid`` exactly that session. A session that ended or went quiet
never shadows a live one (only live sessions are candidates), and a pid that a newer process
reuses is a new session (its own id), so it never inherits mail meant for the dead one.
The rule (``reach``) is pure: the caller hands in the sessions (live flags marked) and the
machines' last reports. ``service.presence`` reads those facts from the store and answers
``reach`` and ``who``; ``service.agent_names`` guesses the name a typo meant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from callboard.address import AgentAddress
from callboard.model import (
    Reach,
    Session,
)

if TYPE_CHECKING:
    pass


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
