"""The hub's ASGI application: the route table, error handlers, shared context."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route as StarletteRoute

from switchboard.credentials import Credentials
from switchboard.errors import SwitchboardError
from switchboard.hub.context import HubContext, blocking
from switchboard.hub.errors import on_client_gone, on_http_error, on_switchboard_error, on_unexpected
from switchboard.hub.mcp_endpoint import MCP_PATH, McpEndpoint
from switchboard.hub.open_streams import DEFAULT_MAX_STREAMS
from switchboard.hub.openapi import build_openapi
from switchboard.hub.ratelimit import RateLimiter
from switchboard.hub.replicas import SHARED_STORE_RECHECK_SECONDS, Notifying
from switchboard.hub.routes import ROUTES
from switchboard.service import Service

DEFAULT_RATE_LIMIT = 2000.0  # requests per second per credential


def create_app(
    service: Service,
    *,
    rate_limit: float = DEFAULT_RATE_LIMIT,
    running: Callable[[], AbstractAsyncContextManager[None]] | None = None,
    host: str = "127.0.0.1",
    replica: str | None = None,
    max_streams: int = DEFAULT_MAX_STREAMS,
) -> HubApp:
    """The hub on ``service``, served on ``host``; ``running()`` is entered on the server's event
    loop when it starts and left when it stops, after the last request (the store's group commit).
    ``max_streams``: the SSE streams and waiting reads one credential may hold open at once."""
    # Replicas share their store: a token revoked through another one is refused within seconds.
    recheck = SHARED_STORE_RECHECK_SECONDS if isinstance(service.store, Notifying) else None
    credentials = Credentials(service.store, service.clock, recheck_seconds=recheck)
    hub = HubContext(service, credentials, RateLimiter(rate_limit), replica, max_streams)
    document = build_openapi()
    mcp = McpEndpoint(hub, host)

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with running() if running is not None else nullcontext(), mcp.session_manager.run():
            # Open streams end within the recheck time when another replica revokes their token.
            rechecking = (
                asyncio.get_running_loop().create_task(hub.streams.recheck(credentials, recheck, blocking))
                if recheck is not None
                else None
            )
            try:
                yield
            finally:
                if rechecking is not None:
                    rechecking.cancel()
            hub.stop()

    routes = [
        StarletteRoute(r.path, _AsgiRoute(hub, r.endpoint) if r.asgi else r.endpoint, methods=[r.method])
        for r in ROUTES
    ]
    routes.append(StarletteRoute("/openapi.json", openapi, methods=["GET"]))
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            SwitchboardError: on_switchboard_error,
            HTTPException: on_http_error,
            ClientDisconnect: on_client_gone,
            Exception: on_unexpected,
        },
    )
    app.state.hub = hub
    return HubApp(app, hub, {(r.method, r.path): r.endpoint for r in ROUTES if r.asgi}, mcp)


class HubApp:
    """The hub's ASGI application: bare ASGI routes by exact method and path, the MCP endpoint,
    Starlette for the rest."""

    def __init__(
        self, starlette: Starlette, hub: HubContext, asgi_routes: dict[tuple[str, str], Any], mcp: McpEndpoint
    ) -> None:
        self.starlette = starlette
        self.state = starlette.state
        self._hub = hub
        self._asgi_routes = asgi_routes
        self._mcp = mcp

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            endpoint = self._asgi_routes.get((scope["method"], scope["path"]))
            if endpoint is not None:
                await endpoint(self._hub, scope, receive, send)
                return
            if scope["path"] == MCP_PATH:
                await self._mcp(scope, receive, send)
                return
        await self.starlette(scope, receive, send)


class _AsgiRoute:
    """A bare ASGI endpoint as a Starlette route, so that its path still answers other methods
    with 405 and is listed like the rest (HubApp serves its own method before Starlette)."""

    def __init__(self, hub: HubContext, endpoint: Any) -> None:
        self._hub = hub
        self._endpoint = endpoint

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self._endpoint(self._hub, scope, receive, send)
