"""Leases: an agent's advisory claim on paths of a repository, so that two agents do not edit the
same files at once without knowing it.

A lease names repository-relative paths or globs (``src/retry.py``, ``docs/``, ``src/**/*.ts``),
exclusive unless shared, for a time (its TTL, renewable), and ends with the session that took it.
It is scoped to its repository: the normalised remote (so two clones on two machines conflict),
else the machine and root. Advisory: a lease is granted even when it conflicts, with the
conflicts listed; ``check`` is the read-only question a pre-commit hook asks. Two leases conflict
when one covers a path the other names (a directory covers what is under it) and they are not
both shared. Pure: the service stores them and asks these rules.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from datetime import datetime

from pydantic import Field

from callboard.model import Model

PATTERNS_MAX = 64
PATTERN_CHARS = 500
TTL_DEFAULT_SECONDS = 3600.0
TTL_MAX_SECONDS = 7 * 24 * 3600.0
REASON_CHARS = 500
GLOB = frozenset("*?[")


class Lease(Model):
    id: str
    workspace: str
    agent: str
    session_id: str | None = Field(default=None, description="the session it ends with, when taken in one")
    scope: str = Field(description="its repository: the normalised remote, else machine:root")
    patterns: list[str] = Field(description="repository-relative paths or globs; a directory covers what is under it")
    shared: bool = False
    reason: str | None = None
    created_at: datetime
    expires_at: datetime
    released_at: datetime | None = None


class LeaseTaken(Model):
    """A lease granted, and the other agents' leases it conflicts with (advisory: it is granted)."""

    lease: Lease
    conflicts: list[Lease] = Field(default_factory=list)


def pattern(text: str) -> str | None:
    """``text`` as a repository-relative pattern (forward slashes, no ``./``), or None when it
    is not one (empty, absolute, or climbing out with ``..``)."""
    cleaned = text.strip().replace("\\", "/")
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    if not cleaned or cleaned.startswith("/") or len(cleaned) > PATTERN_CHARS:
        return None
    parts = [p for p in cleaned.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts) + ("/" if cleaned.endswith("/") else "")


def covers(lease_pattern: str, path: str) -> bool:
    """Whether ``lease_pattern`` covers ``path`` (a path, or another pattern taken as one): the
    same path, a path under a directory, or a glob's match (also of a parent directory)."""
    base = lease_pattern.rstrip("/")
    target = path.rstrip("/")
    if not GLOB & set(base):
        return target == base or target.startswith(base + "/")
    pieces = target.split("/")
    return any(fnmatch.fnmatchcase("/".join(pieces[:n]), base) for n in range(1, len(pieces) + 1))


def overlaps(one: str, other: str) -> bool:
    """Whether two patterns may name a path in common (each taken as a path for the other)."""
    return covers(one, other) or covers(other, one)


def conflicting(mine: Lease, others: Sequence[Lease]) -> list[Lease]:
    """The leases of other agents in ``mine``'s repository that it conflicts with."""
    return [
        other
        for other in others
        if other.agent != mine.agent
        and other.scope == mine.scope
        and not (other.shared and mine.shared)
        and any(overlaps(a, b) for a in mine.patterns for b in other.patterns)
    ]


def blocking(agent: str, scope: str, paths: Sequence[str], others: Sequence[Lease]) -> list[Lease]:
    """Other agents' exclusive leases that cover any of ``paths`` (what ``check`` refuses)."""
    return [
        other
        for other in others
        if other.agent != agent
        and other.scope == scope
        and not other.shared
        and any(covers(p, path) for p in other.patterns for path in paths)
    ]
