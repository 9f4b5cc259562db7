"""``/mcp``: the agents' tool set (``switchboard.mcp``) served by the hub over Streamable HTTP.

The official SDK's app serves both protocol eras on the one path. Every request is
authenticated here first, as every other hub request is: a bearer token, and with a workspace
user token the agent header (an agent token acts as its agent only). A tool call then acts as
the agent its own request's credential names, and runs its store calls on a worker thread, as
the REST endpoints do. An MCP session belongs to the credential (token and agent) that opened
it: the SDK answers a request naming it with any other "Session not found", a DELETE too.
"""

from __future__ import annotations

from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from switchboard.client import Client, LocalClient
from switchboard.credentials import Credential
from switchboard.errors import SwitchboardError, Unauthorized
from switchboard.hub.asgi import Receive, Reply, Scope, Send, client_of, headers_of
from switchboard.hub.context import HubContext
from switchboard.hub.errors import error_document, error_headers
from switchboard.mcp import call_in_thread, mailbox_server
from switchboard.model import Caller

MCP_PATH = "/mcp"
CALLER_KEY = "switchboard.caller"  # in the ASGI scope: who the request acts as, once authenticated


class McpEndpoint:
    """The SDK's Streamable HTTP app behind the hub's own authentication."""

    def __init__(self, hub: HubContext, host: str) -> None:
        self._hub = hub

        async def client_of(ctx: Context) -> Client:
            # The caller the door identified for this very request (see __call__).
            request = ctx.request_context.request
            caller = getattr(request, "scope", {}).get(CALLER_KEY)
            if caller is None:  # never over HTTP: only a request that passed the door gets here
                raise Unauthorized("no credential came with this call.")
            return LocalClient(hub.service, caller, "the token")

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
            except SwitchboardError as error:
                headers: dict[str, Any] = error_headers(error)
                if error.http_status == 401:
                    headers["WWW-Authenticate"] = 'Bearer realm="switchboard"'
                await Reply(send).json(error.http_status, error_document(error.code, error.message), headers)
                return
            scope[CALLER_KEY] = caller
            scope["user"] = _principal(credential, caller)
        await self._app(scope, receive, send)


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
