"""The one way to write a hub endpoint: ``async def name(call: Call) -> answer``.

An endpoint reads what its request brings through its ``Call`` (the credential and the agent
it acts as, path and query values, the JSON body), runs its service operation with
``call.run`` and returns what to answer: a model, a list of models, a dict, or an ``Answer``
with another status. ``served`` makes it the ASGI app a route serves, so every endpoint
answers the same way:

- its blocking work runs on a worker thread (``call.run``), never on the event loop;
- an error is answered as ``hub/errors.py`` maps it;
- a request that acted as an agent carries that agent's unread count in
  ``X-Callboard-Unread``, counted by ``call.run`` in the same worker call as the operation
  (a hop of its own cost the hub some 40% of its send rate). So an agent's client knows its
  count from any answer, and asks for it with no request of its own.

No Starlette Request or Response: a send, the busiest request, costs little more than its
store work.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from callboard.errors import BadRequest, CallboardError
from callboard.headers import UNREAD_HEADER
from callboard.hub.asgi import (
    Disconnected,
    Receive,
    Reply,
    Scope,
    Send,
    client_of,
    headers_of,
    query_of,
    receive_body,
)
from callboard.hub.context import MAX_BODY_BYTES, HubContext, NoBody, blocking, check_declared_length, parse_body
from callboard.hub.errors import INTERNAL_MESSAGE, encoded, error_document, error_headers, http_status
from callboard.hub.query_numbers import decimal_number, whole_number
from callboard.model import Caller, ReadResult
from callboard.service.credentials import Credential
from callboard.service.from_memory import NotInMemory, from_memory

log = logging.getLogger("callboard.hub")

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Answer:
    """What an endpoint answers with a status other than 200 (a model, list, dict, or JSON bytes)."""

    value: Any
    status: int = 200


class Call:
    """One request to an endpoint: who makes it, what it brings, and how its work runs."""

    __slots__ = ("hub", "scope", "receive", "reply", "headers", "_query", "caller", "_in_session", "unread")

    def __init__(self, hub: HubContext, scope: Scope, receive: Receive, reply: Reply) -> None:
        self.hub = hub
        self.scope = scope
        self.receive = receive
        self.reply = reply
        self.headers = headers_of(scope)
        self._query: dict[str, str] | None = None
        self.caller: Caller | None = None  # the agent the request acts as, once identified
        self._in_session = False  # whether ``caller`` is in the session the request names yet
        self.unread: int | None = None  # that agent's unread count, once counted

    # --- who calls ----------------------------------------------------------------------

    async def credential(self) -> Credential:
        """The request's credential (401 without a valid one), rate-limited."""
        return await self.hub.credential_of(self.headers, client_of(self.scope))

    async def identify(self) -> tuple[Credential, Caller]:
        """The credential and the agent the request acts as: its answer carries that agent's
        unread count from now on. A person's credential may name no agent: the service then
        lets it only look (no_identity for anything else). The session the request names is
        looked up by ``run_as``, in its worker call (a lookup may read the store: a hop of its
        own would cost as much)."""
        credential, self.caller = await self.hub.acting(self.headers, client_of(self.scope), agent_needed=False)
        return credential, self.caller

    # --- what it brings -----------------------------------------------------------------

    def path(self, name: str) -> str:
        return self.scope["path_params"][name]

    def query(self, name: str) -> str | None:
        if self._query is None:
            self._query = query_of(self.scope)
        return self._query.get(name)

    def query_int(self, name: str, default: int | None, least: int, most: int) -> int | None:
        """The whole-number query parameter ``name`` (ASCII digits, ``least..most``), or ``default``."""
        raw = self.query(name)
        return default if raw is None or raw == "" else whole_number(raw, name, least, most)

    def query_float(self, name: str, default: float, least: float, most: float) -> float:
        """The number query parameter ``name`` (finite, ``least..most``), or ``default``."""
        raw = self.query(name)
        return default if raw is None or raw == "" else decimal_number(raw, name, least, most)

    def query_bool(self, name: str) -> bool:
        raw = (self.query(name) or "").lower()
        if raw in ("", "0", "false", "no"):
            return False
        if raw in ("1", "true", "yes"):
            return True
        raise BadRequest(f"query parameter {name}={raw!r} is not true or false.")

    async def body(self, model: type[M]) -> M:
        """The JSON body as ``model``: too_large past the limit, bad_request for bad JSON or fields."""
        check_declared_length(self.headers)
        return parse_body(await receive_body(self.receive, MAX_BODY_BYTES), model)

    async def no_body(self) -> None:
        """An endpoint that takes no body refuses one, rather than ignoring what the client meant."""
        await self.body(NoBody)

    # --- its work -----------------------------------------------------------------------

    async def run(self, operation: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``operation(*args, **kwargs)`` on a worker thread (for a credential's own business)."""
        return await blocking(operation, *args, **kwargs)

    async def run_as(self, operation: Callable[..., T], *args: Any, memory_first: bool = False, **kwargs: Any) -> T:
        """``operation(caller, *args, **kwargs)`` on a worker thread, as the identified agent in
        the session its request names; that agent's unread count is taken in the same worker
        call, after it (a read's answer has it already).

        ``memory_first``: first try it on the loop, decided from what the service keeps in
        memory (``service/from_memory``), and the count too: a send then costs no hop. An
        operation that needs the store stops there before it changed anything, and runs on a
        worker thread as above."""
        hub, caller, in_session = self.hub, self.caller, self._in_session
        assert caller is not None, "identify() first"
        if memory_first:
            try:
                with from_memory():
                    acting = caller if in_session else hub.in_session(caller, self.headers)
                    result = operation(acting, *args, **kwargs)
            except NotInMemory:
                pass
            else:
                self.caller, self._in_session = acting, True
                await self.recount()
                return result

        def work() -> tuple[Caller, T, int | None]:
            acting = caller if in_session else hub.in_session(caller, self.headers)
            result = operation(acting, *args, **kwargs)
            if isinstance(result, ReadResult):
                return acting, result, result.unread
            # A person who names no agent has no mailbox to count.
            return acting, result, None if acting.agent is None else hub.service.mailbox.unread_count(acting)

        self.caller, result, self.unread = await blocking(work)
        self._in_session = True
        return result

    async def recount(self) -> None:
        """Count the agent's unread mail again (after a send to itself has committed): the count
        the service keeps in memory, else on a worker thread."""
        caller = self.caller
        if caller is None or caller.agent is None:
            return
        try:
            with from_memory():
                self.unread = self.hub.service.mailbox.unread_count(caller)
        except NotInMemory:
            self.unread = await blocking(self.hub.service.mailbox.unread_count, caller)

    def answer_headers(self) -> dict[str, str]:
        """The headers every answer to this request carries: the one place the unread count is set."""
        return {} if self.unread is None else {UNREAD_HEADER: str(self.unread)}

    async def start_stream(self, content_type: bytes, headers: dict[str, str]) -> None:
        """Begin a streamed answer (200), with the headers every answer carries."""
        await self.reply.start(200, content_type, {**headers, **self.answer_headers()})


Endpoint = Callable[[Call], Awaitable[Any]]


def served(hub: HubContext, endpoint: Endpoint) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """``endpoint`` as an ASGI app: JSON answers, errors as the hub maps them, and once its
    answer has begun (a stream), an error ends it."""

    @functools.wraps(endpoint)
    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        reply = Reply(send)
        call = Call(hub, scope, receive, reply)
        try:
            answer = await endpoint(call)
            if answer is not None:  # None: the endpoint answered itself (a stream)
                answer = answer if isinstance(answer, Answer) else Answer(answer)
                await reply.json(answer.status, _json(answer.value), call.answer_headers())
        except Disconnected:
            return
        except CallboardError as error:
            if not reply.started:
                document = encoded(error_document(error.code, error.message))
                await reply.json(http_status(error), document, error_headers(error))
                return
            await reply.body(b"")
        except Exception:
            log.exception("unexpected error on %s %s", scope["method"], scope["path"])
            if not reply.started:
                await reply.json(500, encoded(error_document("internal", INTERNAL_MESSAGE)))
                return
            await reply.body(b"")

    return serve


def _json(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json().encode()
    if isinstance(value, list):
        return ("[" + ",".join(v.model_dump_json() for v in value) + "]").encode()
    return json.dumps(value).encode()  # a dict of the hub's own (/health), as it always was
