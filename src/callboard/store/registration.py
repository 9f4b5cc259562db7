"""What registering a session does to the other open sessions of the same process: the rule
both stores apply, inside the transaction that registers it, to the rows they read there.

A process is (workspace, machine, pid). Its open session of the same agent and the same process
start is the one being registered again: it is refreshed, not duplicated. Any other open
session there is stale — the pid was recycled (another start time), or another agent's session
that the service found not live (``NewSession.may_end``) — and is ended. Another agent's session
the service did not name was registered since it looked: the registration is refused whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from callboard.store.records import NewSession


class OpenSession(NamedTuple):
    """The fields of an open session of the process that the rule reads (in this order, the
    columns ``OPEN_SESSION_COLUMNS`` selects)."""

    id: str
    agent: str
    proc_start: int | None


OPEN_SESSION_COLUMNS = ", ".join(OpenSession._fields)


@dataclass(frozen=True, slots=True)
class Registration:
    """What the store writes: the session to refresh (None: insert the new one) and those to end."""

    refresh: str | None
    end: tuple[str, ...]


def registration(new: NewSession, open_here: Sequence[OpenSession]) -> Registration | None:
    """What registering ``new`` does to the process's open sessions ``open_here``; None when
    another agent's session there was registered since the service looked (nothing is written)."""
    if any(s.agent != new.agent and s.id not in new.may_end for s in open_here):
        return None
    same = next((s.id for s in open_here if s.agent == new.agent and s.proc_start == new.proc_start), None)
    return Registration(refresh=same, end=tuple(s.id for s in open_here if s.id != same))
