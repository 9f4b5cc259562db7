"""Hub credentials: issuing, checking and revoking tokens, and who a request may act as.

Three kinds: the admin token (any workspace, any agent), workspace user tokens (a person's
machines: any agent of that workspace) and agent tokens (that one agent). Admin and user
tokens act as the agent the client's identity rule names; an agent token only as its own.
Secrets are random, shown once, and stored only as their SHA-256.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from callboard.address import parse_name
from callboard.errors import AlreadyExists, BadRequest, Forbidden, Unauthorized, UnknownAgent, UnknownToken
from callboard.identity import DEFAULT_WORKSPACE
from callboard.limits import TOKEN_LABEL_CHARS
from callboard.model import Caller, TokenKind, Workspace, new_id, utcnow
from callboard.service.content import check_text
from callboard.store.base import Store
from callboard.store.records import NewToken, TokenTaken
from callboard.tokens import IssuedToken, TokenInfo

TOKEN_PREFIX = "cb_"
NAME_THE_AGENT = "name the agent you act as: set CALLBOARD_AGENT (sent as the X-Callboard-Agent header)."
REVOKED = "this token was revoked; ask for a new one with 'callboard token create'."


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Credential:
    """What a checked token allows."""

    token_id: str
    kind: TokenKind
    workspace: str | None
    agent: str | None

    def acting_in(self, workspace: str | None) -> str | None:
        """The workspace a request acts in, given the one it names (the workspace header): an
        admin token may name any (None when it names none: every workspace); a user or agent
        token only its own, which it acts in whether named or not."""
        named = parse_name(workspace, "workspace name") if workspace is not None else None
        if self.kind == "admin":
            return named
        if named is not None and named != self.workspace:
            raise Forbidden(f"this token belongs to workspace {self.workspace}, not {named}.")
        return self.workspace

    def check_manages(self, agent: str) -> None:
        """Whether this credential may create, change or delete ``agent``'s card: an agent token
        only its own agent's; a person's credential (user or admin token) any agent's."""
        if self.kind == "agent" and agent.strip().lower() != self.agent:
            raise Forbidden(f"this token acts only as agent {self.agent}; it cannot change {agent}.")

    def caller(self, agent: str | None, workspace: str | None, *, agent_needed: bool = True) -> Caller:
        """Who this request acts as: the agent token's own agent, or the agent the client names
        (a person's credential: user and admin tokens). A person's credential that names none
        is refused (unknown_agent), unless ``agent_needed`` is false: then it is the person,
        acting as no agent, who may only look (``service.identity_gate``)."""
        if self.kind == "agent":
            assert self.workspace is not None and self.agent is not None
            if agent is not None and parse_name(agent, "agent name") != self.agent:
                raise Forbidden(
                    f"this token acts only as agent {self.agent}, not {agent}; log in with a token for {agent}."
                )
            self.acting_in(workspace)
            return Caller(
                workspace=self.workspace, agent=self.agent, person=False, token_kind="agent", token_id=self.token_id
            )
        if agent is None and agent_needed:
            raise UnknownAgent(NAME_THE_AGENT)
        return Caller(
            workspace=self.acting_in(workspace) or DEFAULT_WORKSPACE,
            agent=parse_name(agent, "agent name") if agent is not None else None,
            token_kind=self.kind,
            token_id=self.token_id,
        )


class Credentials:
    """Token operations. Checked tokens are remembered (the hub checks one per request); a
    revocation through this object forgets them at once, so a revoked token is refused from the
    next request on. Where other hubs share the store (PostgreSQL replicas), a revocation made
    through another replica is seen within ``recheck_seconds``: remembered tokens are checked
    against the store again after that long."""

    def __init__(
        self, store: Store, clock: Callable[[], datetime] = utcnow, *, recheck_seconds: float | None = None
    ) -> None:
        self.store = store
        self.clock = clock
        self._recheck = recheck_seconds
        self._checked: dict[str, Credential] = {}  # secret hash -> credential
        self._checked_at: dict[str, float] = {}  # secret hash -> when (monotonic), with recheck_seconds
        self._revocations = 0  # a check that overlapped a revocation is not remembered
        self._revoked: set[str] = set()  # secret hashes of revoked tokens (a revocation is for good)
        self._lock = threading.Lock()

    def cached(self, secret: str | None) -> Credential | None:
        """The credential for ``secret`` if it was checked before (no I/O), else None."""
        if not secret:
            return None
        secret_hash = hash_secret(secret)
        if self._recheck is not None and time.monotonic() - self._checked_at.get(secret_hash, 0.0) > self._recheck:
            return None
        return self._checked.get(secret_hash)

    def authenticate(self, secret: str | None) -> Credential:
        if not secret:
            raise Unauthorized(
                "no token: send 'Authorization: Bearer <token>' (callboard login URL, then paste the token)."
            )
        secret_hash = hash_secret(secret)
        if (known := self.cached(secret)) is not None:
            return known
        if secret_hash in self._revoked:  # no need to ask the store again
            raise Unauthorized(REVOKED)
        revocations = self._revocations
        token = self.store.tokens.token_by_hash(secret_hash)
        if token is None:
            raise Unauthorized(
                "this token is not known to the hub; ask for a new one with 'callboard token create'.",
                reason="unknown",
            )
        if token.revoked_at is not None:
            with self._lock:
                if len(self._revoked) < 100_000:
                    self._revoked.add(secret_hash)
            raise Unauthorized(REVOKED)
        credential = Credential(token.id, token.kind, token.workspace, token.agent)
        with self._lock:
            if len(self._checked) < 100_000 and revocations == self._revocations:
                self._checked[secret_hash] = credential
                if self._recheck is not None:
                    self._checked_at[secret_hash] = time.monotonic()
        return credential

    def issue(
        self,
        issuer: Credential | None,
        kind: TokenKind,
        workspace: str | None = None,
        agent: str | None = None,
        label: str | None = None,
        *,
        named: str | None = None,
    ) -> IssuedToken:
        """Create a token. ``issuer`` None is the hub itself (its first admin token). ``named``:
        the workspace the request names (its workspace header): the token's, unless
        ``workspace`` names one."""
        check_text(label, TOKEN_LABEL_CHARS, "the label")
        workspace = parse_name(workspace, "workspace name") if workspace else None
        agent = parse_name(agent, "agent name") if agent else None
        if kind == "admin":
            workspace = agent = None
        elif kind == "user":
            agent = None
        if issuer is not None:
            self._check_may_issue(issuer, kind, workspace)
            acting_in = issuer.acting_in(named)
            if kind != "admin" and named is not None and acting_in is not None:
                if workspace is not None and workspace != acting_in:
                    raise BadRequest(
                        f"the token is asked for workspace {workspace}, but the request acts in {acting_in} "
                        "(X-Callboard-Workspace); name one workspace."
                    )
                workspace = acting_in
        if kind != "admin" and workspace is None:
            workspace = issuer.workspace if issuer is not None and issuer.workspace else DEFAULT_WORKSPACE
        if kind == "agent" and agent is None:
            raise UnknownAgent("an agent token names its agent: token create --agent NAME.")
        now = self.clock()
        if workspace is not None:
            self.store.directory.ensure_workspace(workspace, now)
        if kind == "agent":
            assert workspace is not None and agent is not None
            self.store.directory.ensure_agent(workspace, agent, now)
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = NewToken(
            id=new_id(), kind=kind, secret_hash=hash_secret(secret), workspace=workspace, agent=agent, label=label
        )
        try:
            info = self.store.tokens.create_token(token, now)
        except TokenTaken as taken:
            raise AlreadyExists(
                f"a token with id {token.id} already exists; issue it again."
                if taken.field == "id"
                else "a token with this secret already exists; issue it again with a new secret."
            ) from None
        return IssuedToken(**info.model_dump(), token=secret)

    @staticmethod
    def _check_may_issue(issuer: Credential, kind: TokenKind, workspace: str | None) -> None:
        if issuer.kind == "admin":
            return
        if issuer.kind == "agent":
            raise Forbidden("an agent token cannot create tokens; use a user or admin token.")
        if kind == "admin":
            raise Forbidden(
                "only an admin token can create admin tokens (on the hub's machine: "
                "callboard token create --admin --as-admin)."
            )
        if workspace is not None and workspace != issuer.workspace:
            raise Forbidden(
                f"this token can create tokens only for workspace {issuer.workspace}; the admin token "
                "can for any (on the hub's machine: callboard token create --workspace NAME --as-admin)."
            )

    def revoked_among(self, secret_hashes: Iterable[str]) -> set[str]:
        """Those of these secret hashes whose token is revoked (or gone) in the store: a hub asks
        for the tokens of its open streams, which another replica may have revoked."""
        gone = set()
        for secret_hash in secret_hashes:
            token = self.store.tokens.token_by_hash(secret_hash)
            if token is None or token.revoked_at is not None:
                gone.add(secret_hash)
        if gone:
            with self._lock:
                self._revocations += 1
                self._checked = {h: c for h, c in self._checked.items() if h not in gone}
        return gone

    def has_admin(self) -> bool:
        return any(t.kind == "admin" and t.revoked_at is None for t in self.store.tokens.list_tokens(None))

    def workspaces(self, credential: Credential, named: str | None = None) -> list[Workspace]:
        """The workspaces this credential may see: the one it acts in (``named``, the workspace
        the request names: ``Credential.acting_in``), or all for the admin token naming none."""
        workspaces = self.store.directory.list_workspaces()
        workspace = credential.acting_in(named)
        return workspaces if workspace is None else [w for w in workspaces if w.name == workspace]

    def list(self, issuer: Credential, named: str | None = None) -> list[TokenInfo]:
        """The tokens this credential may see, of the workspace it acts in (the admin token naming
        none: every token); an agent token sees only itself."""
        workspace = issuer.acting_in(named)
        if issuer.kind == "agent":
            return [t for t in self.store.tokens.list_tokens(workspace) if t.id == issuer.token_id]
        return self.store.tokens.list_tokens(workspace)

    def revoke(self, issuer: Credential, token_id: str, named: str | None = None) -> TokenInfo:
        visible = {t.id for t in self.list(issuer, named)}
        if issuer.kind == "agent" and token_id != issuer.token_id:
            visible = set()
        token = self.store.tokens.revoke_token(token_id, self.clock()) if token_id in visible else None
        with self._lock:
            self._revocations += 1
            self._checked = {h: c for h, c in self._checked.items() if c.token_id != token_id}
        if token is None:
            raise UnknownToken(
                f"no token {token_id} that this credential may revoke; 'callboard token list' shows them."
            )
        return token
