"""Leases: taking, listing, renewing, releasing and checking agents' advisory claims on paths of
a repository (``leases.py`` holds the rules). A lease is granted even when it conflicts, with the
conflicts listed; ``check`` is read-only. Releasing another agent's lease is a person's act,
with a reason, kept in the audit trail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from callboard.errors import BadRequest, Forbidden
from callboard.leases import TTL_MAX_SECONDS, Lease, LeaseTaken, blocking, conflicting, covers, pattern
from callboard.limits import SUBJECT_CHARS
from callboard.model import AuditEntry, Caller, new_id
from callboard.requests import LeaseCheck, LeaseRelease, LeaseRenewal, LeaseRequest
from callboard.service.identity_gate import AgentCaller, as_agent
from callboard.store.parts.leases import LeasesPart


class Leases:
    def __init__(self, leases: LeasesPart, clock: Callable[[], datetime], enter: Callable[[AgentCaller], None]) -> None:
        self._leases = leases
        self._clock = clock
        self._enter = enter  # the directory's: an agent that takes a lease exists from then on

    def take(self, caller: Caller, request: LeaseRequest) -> LeaseTaken:
        """A lease of the caller's (its session's, when it acts in one), and the other agents'
        active leases it conflicts with."""
        caller = as_agent(caller)
        patterns = checked_patterns(request.patterns)
        now = self._clock()
        lease = Lease(
            id=new_id(),
            workspace=caller.workspace,
            agent=caller.agent,
            session_id=caller.session_id,
            scope=request.scope,
            patterns=patterns,
            shared=request.shared,
            reason=request.reason,
            created_at=now,
            expires_at=now + timedelta(seconds=request.ttl),
        )
        others = self._leases.active_leases(caller.workspace, now, request.scope)
        self._enter(caller)
        self._leases.add_lease(lease)
        return LeaseTaken(lease=lease, conflicts=conflicting(lease, others))

    def of_workspace(self, workspace: str) -> list[Lease]:
        """The workspace's active leases (for ``who``: the caller was let look already)."""
        return self._leases.active_leases(workspace, self._clock())

    def list_leases(self, caller: Caller, *, every: bool = False, scope: str | None = None) -> list[Lease]:
        """The caller's active leases, or (``every``) the workspace's, oldest first."""
        caller = as_agent(caller)
        if scope is not None and len(scope) > SUBJECT_CHARS:  # as a lease's own scope is bounded
            raise BadRequest(f"scope is at most {SUBJECT_CHARS} characters.")
        active = self._leases.active_leases(caller.workspace, self._clock(), scope)
        return active if every else [lease for lease in active if lease.agent == caller.agent]

    def renew(self, caller: Caller, request: LeaseRenewal) -> list[Lease]:
        """The caller's active leases among ``ids`` (all of them when none is named) expire
        ``ttl`` seconds from now."""
        caller = as_agent(caller)
        ttl = request.ttl
        if not 0 < ttl <= TTL_MAX_SECONDS:
            raise BadRequest(f"a lease lasts 0-{TTL_MAX_SECONDS:g} seconds, not {ttl:g}.")
        now = self._clock()
        mine = request.ids or [lease.id for lease in self.list_leases(caller)]
        return self._leases.renew_leases(caller.workspace, caller.agent, mine, now + timedelta(seconds=ttl), now)

    def release(self, caller: Caller, request: LeaseRelease) -> list[str]:
        """Release leases: the caller's own by id or by the paths they cover (all when neither is
        given); ``force`` releases another agent's by id (a person's act, audited)."""
        caller = as_agent(caller)
        now = self._clock()
        active = self._leases.active_leases(caller.workspace, now, request.scope)
        if request.force:
            return self._forced(caller, request, active, now)
        paths = checked_patterns(request.patterns) if request.patterns else []
        mine = [lease for lease in active if lease.agent == caller.agent]
        chosen = [
            lease.id
            for lease in mine
            if (not request.ids and not paths)
            or lease.id in request.ids
            or any(covers(p, path) or covers(path, p) for p in lease.patterns for path in paths)
        ]
        others = [i for i in request.ids if i not in {lease.id for lease in mine}]
        if others:
            raise BadRequest(
                f"no active lease of {caller.agent} with id {others[0]}; a person releases another agent's with --force."
            )
        return self._leases.release_leases(caller.workspace, chosen, now)

    def check(self, caller: Caller, request: LeaseCheck) -> list[Lease]:
        """Other agents' exclusive leases covering any of the paths (read-only)."""
        caller = as_agent(caller)
        wanted, scope = checked_patterns(request.paths), request.scope
        return blocking(caller.agent, scope, wanted, self._leases.active_leases(caller.workspace, self._clock(), scope))

    def _forced(self, caller: AgentCaller, request: LeaseRelease, active: list[Lease], now: datetime) -> list[str]:
        if not caller.person:
            raise Forbidden("releasing another agent's lease is a person's act: use a user or admin token.")
        if not request.reason or not request.reason.strip():
            raise BadRequest("say why with --reason: a forced release is kept in the audit trail.")
        if not request.ids:
            raise BadRequest("name the lease to release by its id (`callboard lease list --all` shows them).")
        known = {lease.id: lease for lease in active}
        missing = [i for i in request.ids if i not in known]
        if missing:
            raise BadRequest(
                f"no active lease {missing[0]} in this workspace; `callboard lease list --all` shows them."
            )
        released: list[str] = []
        for lease_id in request.ids:
            lease = known[lease_id]
            record = AuditEntry(
                id=new_id(),
                workspace=caller.workspace,
                at=now,
                actor=caller.agent,
                token_kind=caller.token_kind,
                token_id=caller.token_id,
                action="lease.release",
                target=lease.agent,
                detail={"lease": lease.id, "patterns": lease.patterns, "scope": lease.scope, "reason": request.reason},
            )
            released += self._leases.release_leases(caller.workspace, [lease_id], now, record)
        return released


def checked_patterns(given: Sequence[str]) -> list[str]:
    """Each path or glob as a repository-relative pattern; bad_request for one that is not."""
    patterns = []
    for text in given:
        cleaned = pattern(text) if isinstance(text, str) else None
        if cleaned is None:
            raise BadRequest(
                f"{text!r} is not a path inside the repository: give it relative to the repository's root, "
                "without '..' (a folder with a trailing '/', or a glob such as src/**/*.py)."
            )
        patterns.append(cleaned)
    return patterns
