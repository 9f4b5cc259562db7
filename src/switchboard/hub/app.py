"""The hub's ASGI application: the route table served, error handlers, shared context."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route as StarletteRoute

from switchboard.hub.context import HubContext, blocking
from switchboard.hub.endpoint import Call, Endpoint, served
from switchboard.hub.errors import encoded, on_http_error, on_unexpected
from switchboard.hub.mcp_endpoint import MCP_PATH, McpEndpoint
from switchboard.hub.open_streams import DEFAULT_MAX_STREAMS
from switchboard.hub.openapi import build_openapi
from switchboard.hub.ratelimit import RateLimiter
from switchboard.hub.replicas import SHARED_STORE_RECHECK_SECONDS
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
    # Replicas share their (PostgreSQL) store: a token revoked through another one is refused
    # within seconds.
    recheck = SHARED_STORE_RECHECK_SECONDS if service.store_kind == "postgresql" else None
    credentials = service.credentials(recheck_seconds=recheck)
    hub = HubContext(service, credentials, RateLimiter(rate_limit), replica, max_streams)
    document = encoded(build_openapi())
    mcp = McpEndpoint(hub, host)

    async def openapi(call: Call) -> bytes:
        return document

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

    table: list[tuple[str, str, Endpoint]] = [(r.method, r.path, r.endpoint) for r in ROUTES]
    table.append(("GET", "/openapi.json", openapi))
    apps = {(method, path): _Served(hub, endpoint) for method, path, endpoint in table}
    app = Starlette(
        routes=[StarletteRoute(path, apps[method, path], methods=[method]) for method, path, _ in table],
        lifespan=lifespan,
        exception_handlers={HTTPException: on_http_error, Exception: on_unexpected},
    )
    app.state.hub = hub
    exact = {key: served_app for key, served_app in apps.items() if "{" not in key[1]}
    return HubApp(app, exact, mcp)


class HubApp:
    """The hub's ASGI application: routes without path parameters by exact method and path, the
    MCP endpoint, and Starlette's routing for the rest (path parameters, 404, 405)."""

    def __init__(self, starlette: Starlette, exact: dict[tuple[str, str], _Served], mcp: McpEndpoint) -> None:
        self.starlette = starlette
        self.state = starlette.state
        self._exact = exact
        self._mcp = mcp

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            endpoint = self._exact.get((scope["method"], scope["path"]))
            if endpoint is not None:
                await endpoint(scope, receive, send)
                return
            if scope["path"] == MCP_PATH:
                await self._mcp(scope, receive, send)
                return
        await self.starlette(scope, receive, send)


class _Served:
    """An endpoint served (``endpoint.served``) as an ASGI app: an instance, so that Starlette
    routes to it as an app rather than wrapping it as a request handler."""

    def __init__(self, hub: HubContext, endpoint: Endpoint) -> None:
        self._serve = served(hub, endpoint)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self._serve(scope, receive, send)
