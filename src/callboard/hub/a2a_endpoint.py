"""The hub's A2A door: ``/a2a/{workspace}/{agent}/…``, every agent an A2A agent.

- ``GET …/.well-known/agent-card.json``: the agent's card, public (A2A discovery), with an
  ETag, Last-Modified and Cache-Control;
- ``…/jsonrpc`` (and ``…/jsonrpc/``: the TCK's client posts with a trailing slash): JSON-RPC;
- ``…/rest/…``: HTTP+JSON;

both served by the SDK's own route factories over ``CallboardRequestHandler``. Every endpoint
but the card needs a Callboard bearer token (401 with ``WWW-Authenticate: Bearer`` otherwise),
as every hub request does; a token of another workspace, or an agent that does not exist, gets
404, never a hint of what another workspace holds. A path that is no endpoint at all (a card
path a segment short, a typo) is a 404 at once, with no token asked for. A request in an A2A
version the hub does not speak gets VersionNotSupported saying what it speaks (a2a/server/versions.py).
Bodies are limited as the REST API's are.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any

from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import ContentTypeNotSupportedError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match, Mount

from callboard.a2a.server.cards import build_card, card_document, card_etag
from callboard.a2a.server.context import CALLER_SCOPE, CallboardContextBuilder
from callboard.a2a.server.handler import CallboardRequestHandler
from callboard.a2a.server.versions import VERSION_HEADER, version_refusal
from callboard.errors import CallboardError, NotFound, UnknownAgent
from callboard.hub.asgi import Disconnected, Receive, Reply, Scope, Send, client_of, headers_of, receive_body
from callboard.hub.context import AGENT_HEADER, MAX_BODY_BYTES, HubContext, blocking, check_declared_length
from callboard.hub.errors import encoded, error_document, error_headers, http_status, on_http_error, on_unexpected
from callboard.model import Agent, Caller

log = logging.getLogger("callboard.hub")

A2A_PREFIX = "/a2a/"
AGENT_ROOT = "/a2a/{workspace}/{agent}"
CARD_PATH = (".well-known", "agent-card.json")
CARD_CACHE_CONTROL = "public, max-age=60"
JSON_MEDIA_TYPES = frozenset({"application/json", "application/a2a+json"})
JSON_ONLY = "A2A's JSON-RPC binding takes a JSON body: send it as Content-Type application/json."
REST_JSON_ONLY = "A2A's HTTP+JSON binding takes a JSON body: send it as Content-Type application/json."
UNSUPPORTED_MEDIA_TYPE = 415  # what A2A 1.0 §5.4 maps ContentTypeNotSupported to over HTTP+JSON


class A2ADoor:
    """The ASGI app the hub hands every ``/a2a/`` request to."""

    def __init__(
        self,
        hub: HubContext,
        *,
        public_url: str | None = None,
        compat_0_3: bool = False,
    ) -> None:
        self._hub = hub
        self._public_url = public_url.rstrip("/") if public_url else None
        self._compat_0_3 = compat_0_3
        self.handler = CallboardRequestHandler(hub.service, blocking)
        builder = CallboardContextBuilder()
        routes: list[BaseRoute] = [
            *create_jsonrpc_routes(self.handler, f"{AGENT_ROOT}/jsonrpc", builder, enable_v0_3_compat=compat_0_3),
            *create_jsonrpc_routes(self.handler, f"{AGENT_ROOT}/jsonrpc/", builder, enable_v0_3_compat=compat_0_3),
            Mount(
                f"{AGENT_ROOT}/rest", routes=create_rest_routes(self.handler, builder, enable_v0_3_compat=compat_0_3)
            ),
        ]
        self._app = Starlette(
            routes=routes, exception_handlers={HTTPException: on_http_error, Exception: on_unexpected}
        )
        # (workspace, agent) -> (the card's ETag, when this hub first served that card)
        self._card_times: dict[tuple[str, str], tuple[str, datetime]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        reply = Reply(send)
        pieces = scope["path"][len(A2A_PREFIX) :].split("/")
        if len(pieces) < 3 or not pieces[0] or not pieces[1]:
            await _no_endpoint(reply, scope)
            return
        workspace, agent, rest = pieces[0], pieces[1], tuple(pieces[2:])
        if rest == CARD_PATH and scope["method"] not in ("GET", "HEAD"):
            await _card_methods(reply, scope)
            return
        if rest != CARD_PATH and _matched(self._app.routes, scope) is Match.NONE:
            # No endpoint has this path (a card path a segment short, a typo): 404, with no
            # token asked for first; only the real endpoints need one.
            await _no_endpoint(reply, scope)
            return
        try:
            if rest == CARD_PATH:
                await self._card(scope, reply, workspace, agent)
                return
            caller = await self._let_in(scope, workspace, agent)
            body = await self._body(scope, receive)
        except Disconnected:
            return
        except CallboardError as error:
            await _refuse(reply, error)
            return
        if (body or rest[:1] == ("jsonrpc",)) and not _json_content(scope):
            # A2A's ContentTypeNotSupported (JSON-RPC -32005; HTTP+JSON 415, A2A 1.0 §5.4),
            # rather than the SDK's parse error of the body.
            if rest[:1] == ("jsonrpc",):
                answer = build_error_response(None, ContentTypeNotSupportedError(message=JSON_ONLY))
                await reply.json(200, encoded(answer))
            else:
                document = build_rest_error_payload(ContentTypeNotSupportedError(message=REST_JSON_ONLY))
                document["error"]["code"] = UNSUPPORTED_MEDIA_TYPE  # the SDK's mapping says 400
                await reply.json(UNSUPPORTED_MEDIA_TYPE, encoded(document))
            return
        if await self._other_version(scope, reply, rest, body):
            return
        await self._app({**scope, CALLER_SCOPE: caller}, _replaying(body, receive), send)

    async def _other_version(self, scope: Scope, reply: Reply, rest: tuple[str, ...], body: bytes) -> bool:
        """Answer a request in an A2A version this hub does not speak (a 0.3 client, without
        ``--a2a-compat-0-3``) with VersionNotSupported, saying what it speaks; True if answered."""
        header = _header(scope, VERSION_HEADER)
        if rest[:1] == ("jsonrpc",):
            request_id, method = _rpc_call(body)
            refused = version_refusal(header, compat=self._compat_0_3, rpc_method=method)
            if refused is None:
                return False
            await reply.json(200, encoded(build_error_response(request_id, refused)))
            return True
        refused = version_refusal(header, compat=self._compat_0_3)
        if refused is None:
            return False
        document = build_rest_error_payload(refused)
        # Also as an A2A 0.3 REST client reads an error (a2a-sdk's: the error's type and message
        # at the top), so the one client most likely to be refused shows why.
        document |= {"type": type(refused).__name__, "message": refused.message}
        await reply.json(document["error"]["code"], encoded(document))
        return True

    async def _let_in(self, scope: Scope, workspace: str, agent: str) -> Caller:
        """The caller, authenticated, of the workspace in the URL, addressing an agent of it."""
        headers = headers_of(scope)
        credential = await self._hub.credential_of(headers, client_of(scope))
        if credential.workspace is not None and credential.workspace != workspace:
            raise _no_agent(workspace, agent)  # another workspace's: as if nothing were there
        caller = credential.caller(headers.get(AGENT_HEADER), workspace)
        # Nothing is created here: a call that acts (a message sent) creates the caller's agent
        # in its own step; one that only looks (a task got, listed) writes nothing.
        await self._agent(caller, workspace, agent)
        return caller

    async def _agent(self, caller: Caller, workspace: str, agent: str) -> Agent:
        try:
            return await blocking(self._hub.service.directory.describe_agent, caller, agent)
        except CallboardError:  # a bad name is no agent either
            raise _no_agent(workspace, agent) from None

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            return b""
        check_declared_length(headers_of(scope))
        return await receive_body(receive, MAX_BODY_BYTES)

    # --- the card ------------------------------------------------------------------------------

    async def _card(self, scope: Scope, reply: Reply, workspace: str, agent: str) -> None:
        """The agent's public card: no token needed, as A2A discovery expects."""
        described = await self._agent(Caller(workspace=workspace, agent=agent, person=False), workspace, agent)
        document = card_document(build_card(described, self.base_url(scope), compat_0_3=self._compat_0_3))
        etag = card_etag(document)
        modified = self._modified(workspace, agent, etag)
        headers = {
            "ETag": etag,
            "Last-Modified": format_datetime(modified, usegmt=True),
            "Cache-Control": CARD_CACHE_CONTROL,
        }
        if _not_modified(scope, etag, modified):
            await reply.start(304, b"application/json", headers)
            await reply.body(b"")
            return
        data = encoded(document)
        if scope["method"] == "HEAD":
            await reply.start(200, b"application/json", {"content-length": str(len(data)), **headers})
            await reply.body(b"")
            return
        await reply.json(200, data, headers)

    def base_url(self, scope: Scope) -> str:
        """The hub as its callers reach it: ``--public-url``, else the request's scheme and Host."""
        if self._public_url:
            return self._public_url
        return request_base_url(scope)

    def _modified(self, workspace: str, agent: str, etag: str) -> datetime:
        """When the card first looked as it does now (to this hub): a card changes with its agent."""
        known = self._card_times.get((workspace, agent))
        if known is None or known[0] != etag:
            known = (etag, datetime.now(UTC).replace(microsecond=0))
            if len(self._card_times) < 100_000:
                self._card_times[(workspace, agent)] = known
        return known[1]


def request_base_url(scope: Scope) -> str:
    """The scheme and Host the request came with (the server's own address without a Host)."""
    host = next((value.decode("latin-1") for name, value in scope["headers"] if name == b"host"), None)
    if not host:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


def _not_modified(scope: Scope, etag: str, modified: datetime) -> bool:
    """Whether the client's copy is current (If-None-Match first, else If-Modified-Since)."""
    fields = {name: value.decode("latin-1") for name, value in scope["headers"]}
    match = fields.get(b"if-none-match")
    if match is not None:
        tags = [tag.strip().removeprefix("W/") for tag in match.split(",")]
        return "*" in tags or etag.removeprefix("W/") in tags
    since = fields.get(b"if-modified-since")
    if since:
        try:
            return modified <= parsedate_to_datetime(since)
        except (TypeError, ValueError):
            return False
    return False


def _json_content(scope: Scope) -> bool:
    """Whether the request's body is declared JSON (or not declared at all)."""
    declared = next((value for name, value in scope["headers"] if name == b"content-type"), None)
    if declared is None:
        return True
    media = declared.decode("latin-1").split(";", 1)[0].strip().lower()
    return media in JSON_MEDIA_TYPES


def _matched(routes: list[BaseRoute], scope: Scope) -> Match:
    """How the A2A endpoints match the request: FULL (path and method), PARTIAL (the path, not
    the method: the SDK's app answers 405) or NONE; into mounts (the HTTP+JSON routes)."""
    best = Match.NONE
    for route in routes:
        match, child = route.matches(scope)
        if isinstance(route, Mount) and match is Match.FULL:
            match = _matched(route.routes, {**scope, **child})
        if match is Match.FULL:
            return match
        if match is Match.PARTIAL:
            best = match
    return best


def _header(scope: Scope, name: bytes) -> str | None:
    """A request header's value, stripped; None when it is missing or empty."""
    value = next((value for field, value in scope["headers"] if field == name), b"").decode("latin-1").strip()
    return value or None


def _rpc_call(body: bytes) -> tuple[str | int | None, str]:
    """A JSON-RPC request's id and method ("" when the body is not a JSON-RPC call: the SDK
    answers it with its parse or request error)."""
    try:
        call = json.loads(body)
    except ValueError:
        return None, ""
    if not isinstance(call, dict):
        return None, ""
    request_id = call.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    method = call.get("method")
    return request_id, method if isinstance(method, str) else ""


async def _no_endpoint(reply: Reply, scope: Scope) -> None:
    message = (
        f"no A2A endpoint at {scope['path']}: an agent's card is at /a2a/WORKSPACE/AGENT/.well-known/"
        "agent-card.json (public), its JSON-RPC endpoint at …/jsonrpc and its HTTP+JSON ones under …/rest/."
    )
    await reply.json(404, encoded(error_document("not_found", message)))


async def _card_methods(reply: Reply, scope: Scope) -> None:
    message = f"{scope['method']} is not allowed on {scope['path']}: an agent card is read with GET (or HEAD)."
    await reply.json(405, encoded(error_document("method_not_allowed", message)), {"Allow": "GET, HEAD"})


def _no_agent(workspace: str, agent: str) -> NotFound:
    return UnknownAgent(f"no agent {agent} in workspace {workspace} here; check the card URL you were given.")


async def _refuse(reply: Reply, error: CallboardError) -> None:
    headers: dict[str, Any] = error_headers(error)
    status = http_status(error)
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="callboard"'
    await reply.json(status, encoded(error_document(error.code, error.message)), headers)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body already read given once more (then the client's own events:
    a stream learns of a disconnect)."""
    given = False

    async def replay() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
