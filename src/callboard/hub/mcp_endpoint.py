"""``/mcp``: the agents' tool set (``callboard.mcp.tools``) served by the hub over Streamable HTTP.

The official SDK's app serves both protocol eras on the one path. Every request is
authenticated here first, as every other hub request is: a bearer token, and with a workspace
user token the agent header (an agent token acts as its agent only). A tool call then acts as
the agent its own request's credential names, and runs its store calls on a worker thread, as
the REST endpoints do. An MCP session belongs to the credential (token and agent) that opened
it: the SDK answers a request naming it with any other "Session not found", a DELETE too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from callboard.client.base import Client
from callboard.client.local import LocalClient
from callboard.errors import CallboardError, Unauthorized
from callboard.hub.asgi import Receive, Reply, Scope, Send, client_of, headers_of
from callboard.hub.context import HubContext, bearer_token
from callboard.hub.errors import encoded, error_document, error_headers, http_status
from callboard.mcp.tools import call_in_thread, mailbox_server
from callboard.model import Caller, ReadResult
from callboard.requests import ReadQuery
from callboard.service.credentials import Credential
from callboard.service.door import Service

MCP_PATH = "/mcp"
CALLER_KEY = "callboard.caller"  # in the ASGI scope: who the request acts as, once authenticated
REVOCATION_CHECK_SECONDS = 1.0  # a waiting read_messages looks at its token this often


class McpEndpoint:
    """The SDK's Streamable HTTP app behind the hub's own authentication."""

    def __init__(self, hub: HubContext, host: str) -> None:
        self._hub = hub

        async def client_of(ctx: Context) -> Client:
            # The caller the door identified for this very request (see __call__).
            request = ctx.request_context.request
            caller = getattr(request, "scope", {}).get(CALLER_KEY)
            if caller is None or request is None:  # never over HTTP: only a request that passed the door gets here
                raise Unauthorized("no credential came with this call.")
            secret = bearer_token(headers_of(request.scope))
            return CredentialBound(hub.service, caller, lambda: hub.credentials.authenticate(secret))

        server = mailbox_server(client_of, run=call_in_thread)
        # On a loopback address the SDK refuses any Host but a loopback one (DNS rebinding);
        # elsewhere every request still needs a bearer token.
        self._app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
        self.session_manager: StreamableHTTPSessionManager = server.session_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            # A field value's surrounding blanks are not part of it (RFC 9110 §5.5), but httptools
            # keeps trailing ones, and the SDK compares Mcp-Name and Mcp-Method exactly.
            scope = {**scope, "headers": [(name, value.strip(b" \t")) for name, value in scope["headers"]]}
            try:
                credential, caller = await self._hub.identify_by(headers_of(scope), client_of(scope))
            except CallboardError as error:
                headers: dict[str, Any] = error_headers(error)
                status = http_status(error)
                if status == 401:
                    headers["WWW-Authenticate"] = 'Bearer realm="callboard"'
                await Reply(send).json(status, encoded(error_document(error.code, error.message)), headers)
                return
            scope[CALLER_KEY] = caller
            scope["user"] = _principal(credential, caller)
        await self._app(scope, receive, send)


class CredentialBound(LocalClient):
    """A tool call's client: a read that waits for mail ends once its token is revoked (looked at
    every REVOCATION_CHECK_SECONDS; on another replica, within the credentials' recheck), and
    takes nothing after the revocation, as the REST long-poll does."""

    def __init__(self, service: Service, caller: Caller, still_valid: Callable[[], object]) -> None:
        super().__init__(service, caller, "the token")
        self._still_valid = still_valid  # raises Unauthorized once the token is revoked

    def read(self, query: ReadQuery = ReadQuery()) -> ReadResult:
        after = query.after
        self.service.mailbox.check_read_options(limit=query.limit, after=after, wait=query.wait)
        deadline = time.monotonic() + query.wait
        while (left := deadline - time.monotonic()) > 0 and not self.service.subscriptions.closed:
            self._still_valid()
            look = super().read(ReadQuery(peek=True, after=after, limit=1, wait=min(left, REVOCATION_CHECK_SECONDS)))
            if look.items:
                break
        self._still_valid()
        return super().read(query.model_copy(update={"wait": 0.0}))


def _principal(credential: Credential, caller: Caller) -> AuthenticatedUser:
    """Who the request comes from, as the SDK's session manager compares it with whoever opened
    the session it names: the token (by id, never its secret) and the agent it acts as."""
    return AuthenticatedUser(
        AccessToken(
            token=credential.token_id,
            client_id=credential.token_id,
            scopes=[],
            subject=f"{caller.workspace}/{caller.agent}",
        )
    )
