"""What every endpoint needs: who is calling (credential → caller), its rate limit, its body
(``hub/endpoint.py`` gives it to each endpoint).

Blocking work (SQLite, a group commit's fsync) runs in worker threads, never on the event loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from callboard import headers
from callboard.errors import BadName, TooLarge, Unauthorized, UnknownAgent
from callboard.headers import parse_process_header
from callboard.hub.open_streams import OpenStreams
from callboard.hub.options import DEFAULT_MAX_STREAMS
from callboard.hub.ratelimit import RateLimiter, bad_token_limiter
from callboard.model import Caller
from callboard.pending import Pending
from callboard.requests import refusal
from callboard.service.credentials import NAME_THE_AGENT, Credential, Credentials, hash_secret
from callboard.service.door import Service

T = TypeVar("T")
Headers = Mapping[str, str]  # by lower-case name: Starlette's headers, or a plain dict of ASGI's
M = TypeVar("M", bound=BaseModel)

AGENT_HEADER = headers.AGENT_HEADER.lower()  # lower case: ASGI gives header names so
WORKSPACE_HEADER = headers.WORKSPACE_HEADER.lower()
SESSION_HEADER = headers.SESSION_HEADER.lower()
PROCESS_HEADER = headers.PROCESS_HEADER.lower()
MAX_BODY_BYTES = 1024 * 1024  # a message's parts may hold 256 KiB; JSON escaping may double it


WORKER_THREADS = 40  # as many as anyio's default: blocking work of that many requests at once
_workers = ThreadPoolExecutor(max_workers=WORKER_THREADS, thread_name_prefix="callboard-hub")


async def blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on one of the hub's worker threads, awaited on the loop with one
    callback and one loop wake-up (``settled``): every request makes such a hop, and anyio's
    ``to_thread.run_sync`` costs twice the CPU of this one (82 against 44 µs, uvloop, 2 cores)."""
    outcome: Pending[T] = Pending()
    outcome.set_running_or_notify_cancel()

    def work() -> None:
        try:
            outcome.set_result(fn(*args, **kwargs))
        except BaseException as error:  # handed to the awaiting request, raised there
            outcome.set_exception(error)

    _workers.submit(work)
    return await settled(outcome)


async def settled(future: Pending[T]) -> T:
    """A ``Pending`` (a send's commit) awaited on the loop, whichever thread completes it.

    ``asyncio.wrap_future`` less what the hub does not use — handing a cancellation back to
    work already queued — at about half its cost: one callback and one loop wake-up."""
    if not future.done():
        loop = asyncio.get_running_loop()
        woken = loop.create_future()
        here = threading.get_ident()

        def wake(_: Pending[T]) -> None:
            # On the loop's own thread (a group commit settling), at once: setting the future
            # schedules the waiting task itself. From another thread, through the loop's wake-up.
            if threading.get_ident() == here:
                _wake(woken)
            else:
                loop.call_soon_threadsafe(_wake, woken)

        future.add_done_callback(wake)
        await woken
    return future.result()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # its request may have been cancelled meanwhile (a stop timing out)
        waiter.set_result(None)


class HubContext:
    """The hub's shared parts, handed to every endpoint through its ``Call``."""

    def __init__(
        self,
        service: Service,
        credentials: Credentials,
        limiter: RateLimiter,
        replica: str | None = None,
        max_streams: int = DEFAULT_MAX_STREAMS,
    ) -> None:
        self.service = service
        self.replica = replica  # this hub's id among the replicas of one PostgreSQL store
        self.store_kind = service.store_kind
        self.credentials = credentials
        self.limiter = limiter
        self.bad_tokens = bad_token_limiter()  # per client address
        self.streams = OpenStreams(max_streams)  # each credential's open streams and reads
        self.public_url: str | None = None  # the hub as A2A callers reach it (``up --public-url``)
        self.a2a_compat_0_3 = False  # A2A 0.3 clients are answered too (``up --a2a-compat-0-3``)
        # (token id, agent asked for, workspace asked for) -> the caller those names make
        self._callers: dict[tuple[str, str | None, str | None], Caller] = {}

    def stop(self) -> None:
        """Shutting down: streams and long-polls end now, so in-flight sends can finish and drain."""
        self.service.subscriptions.close()

    @property
    def stopping(self) -> bool:
        """stop() was called: every wait for mail ends (the service's own, for MCP calls, too)."""
        return self.service.subscriptions.closed

    async def credential_of(self, headers: Headers, client: str | None = None) -> Credential:
        """The request's bearer token checked (401 if it is missing, unknown or revoked), and
        rate-limited; a ``client`` address that sent too many unknown tokens gets 429 before the
        store is asked about one more."""
        token = bearer_token(headers)
        credential = self.credentials.cached(token)
        if credential is None:
            if token and client is not None:
                self.bad_tokens.check_room(client)
            try:
                credential = await blocking(self.credentials.authenticate, token)
            except Unauthorized as error:
                if client is not None and error.details.get("reason") == "unknown":
                    self.bad_tokens.spend(client)
                raise
        self.limiter.check(credential.token_id)
        return credential

    async def identify_by(self, headers: Headers, client: str | None = None) -> tuple[Credential, Caller]:
        """``acting`` (an agent named), then in the session the request's headers name (on a
        worker thread)."""
        credential, caller = await self.acting(headers, client)
        if headers.get(SESSION_HEADER) or headers.get(PROCESS_HEADER):
            caller = await blocking(self.in_session, caller, headers)
        return credential, caller

    async def acting(
        self, headers: Headers, client: str | None = None, *, agent_needed: bool = True
    ) -> tuple[Credential, Caller]:
        """Authenticate, rate-limit, and name the agent this request acts as, not yet in the
        session its headers may name (``in_session``); ``client``: the address it comes from.

        Nothing is created here: an operation that acts as the agent creates it in its own step
        (the service's rule), so a request that only looks, or fails, writes nothing. Without
        ``agent_needed``, a person's credential that names no agent acts as none (it may look)."""
        credential = await self.credential_of(headers, client)
        asked = (credential.token_id, headers.get(AGENT_HEADER), headers.get(WORKSPACE_HEADER))
        caller = self._callers.get(asked)
        if caller is None:  # first request of this credential as this agent: check the names
            caller = credential.caller(asked[1], asked[2], agent_needed=False)
            if len(self._callers) < 100_000:
                self._callers[asked] = caller
        if caller.agent is None and agent_needed:
            raise UnknownAgent(NAME_THE_AGENT)
        return credential, caller

    def in_session(self, caller: Caller, headers: Headers) -> Caller:
        """The caller acting in the session its request names (by id, or by its process's
        lineage); unchanged when it names none. Blocking: it may read the store."""
        session_id, process = headers.get(SESSION_HEADER), headers.get(PROCESS_HEADER)
        if session_id:
            return self.service.directory.in_session(caller, session_id=session_id.strip())
        named = parse_process_header(process) if process else None
        if named is None:
            return caller
        try:
            return self.service.directory.in_session(caller, machine=named[0], lineage=named[1])
        except BadName:  # not a machine name: the header is a hint, never a reason to refuse
            return caller


def bearer_token(headers: Headers) -> str | None:
    scheme, _, secret = headers.get("authorization", "").partition(" ")
    return secret.strip() if scheme.lower() == "bearer" else None


def secret_hash_of(headers: Headers) -> str:
    """The hash of the request's bearer token (as the store keeps it), for an open stream's recheck."""
    return hash_secret(bearer_token(headers) or "")


class NoBody(BaseModel):
    """The body of an endpoint that takes none: nothing, or ``{}``."""

    model_config = ConfigDict(extra="forbid")


def check_declared_length(headers: Headers) -> None:
    declared = headers.get("content-length")
    # isascii: isdigit() also takes '²', which int() refuses; the server checked its form already.
    if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise TooLarge(f"the request body is {declared} bytes; the limit is {MAX_BODY_BYTES}.")


def parse_body(raw: bytes, model: type[M]) -> M:
    try:  # pydantic parses and checks the JSON in one pass
        return model.model_validate_json(raw if raw.strip() else b"{}")
    except ValidationError as error:
        # Text or a list past its bound is too large, as the service says of it (content.py).
        raise refusal(error) from None
