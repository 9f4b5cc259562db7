"""The hub's ASGI application: its mounts, the REST route table, error handlers, shared context,
and its background jobs run in one lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route as StarletteRoute

from callboard.hub.a2a_endpoint import A2A_PREFIX, A2ADoor
from callboard.hub.context import HubContext
from callboard.hub.endpoint import Call, Endpoint, served
from callboard.hub.errors import encoded, on_http_error, on_unexpected
from callboard.hub.jobs import hub_jobs
from callboard.hub.jobs import running as running_jobs
from callboard.hub.mcp_endpoint import MCP_PATH, McpEndpoint
from callboard.hub.mounts import Mount, Mounts
from callboard.hub.openapi import build_openapi
from callboard.hub.options import DEFAULT_MAX_STREAMS, DEFAULT_RATE_LIMIT
from callboard.hub.ratelimit import RateLimiter
from callboard.hub.replicas import SHARED_STORE_RECHECK_SECONDS
from callboard.hub.routes import ROUTES
from callboard.service.door import Service


def create_app(
    service: Service,
    *,
    rate_limit: float = DEFAULT_RATE_LIMIT,
    running: Callable[[], AbstractAsyncContextManager[None]] | None = None,
    host: str = "127.0.0.1",
    replica: str | None = None,
    max_streams: int = DEFAULT_MAX_STREAMS,
    a2a: A2AOptions | None = None,
    pump_remotes: bool = False,
) -> HubApp:
    """The hub on ``service``, served on ``host``; ``running()`` is entered on the server's event
    loop when it starts and left when it stops, after the last request (the store's group commit).
    ``max_streams``: the SSE streams and waiting reads one credential may hold open at once.
    ``a2a``: how the A2A face serves (its public URL, 0.3 compatibility); ``pump_remotes``: send
    mail to outside A2A agents (``up`` does; an app made for a test leaves it to the test)."""
    a2a = a2a or A2AOptions()
    # Replicas share their (PostgreSQL) store: a token revoked through another one is refused
    # within seconds.
    recheck = SHARED_STORE_RECHECK_SECONDS if service.store_kind == "postgresql" else None
    credentials = service.credentials(recheck_seconds=recheck)
    hub = HubContext(service, credentials, RateLimiter(rate_limit), replica, max_streams)
    hub.public_url, hub.a2a_compat_0_3 = a2a.public_url, a2a.compat_0_3
    document = encoded(build_openapi())
    mcp = McpEndpoint(hub, host)
    jobs = hub_jobs(hub, recheck, pump_remotes=pump_remotes)

    async def openapi(call: Call) -> bytes:
        return document

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with running() if running is not None else nullcontext(), mcp.session_manager.run():
            async with running_jobs(jobs):  # ended before the store closes
                yield
            hub.stop()

    table: list[tuple[str, str, Endpoint]] = [(r.method, r.path, r.endpoint) for r in ROUTES]
    table.append(("GET", "/openapi.json", openapi))
    apps = {(method, path): _Served(hub, endpoint) for method, path, endpoint in table}
    starlette = Starlette(
        routes=[StarletteRoute(path, apps[method, path], methods=[method]) for method, path, _ in table],
        lifespan=lifespan,
        exception_handlers={HTTPException: on_http_error, Exception: on_unexpected},
    )
    starlette.state.hub = hub
    rest = _Rest(starlette, {key: served_app for key, served_app in apps.items() if "{" not in key[1]})
    mounts = [
        Mount(MCP_PATH, mcp),  # the MCP tool set over streamable HTTP
        Mount(A2A_PREFIX, A2ADoor(hub, public_url=a2a.public_url, compat_0_3=a2a.compat_0_3), under=True),
    ]
    return HubApp(Mounts(mounts, rest), starlette)


@dataclass(frozen=True)
class A2AOptions:
    """How the hub serves A2A (``up --public-url``, ``--a2a-compat-0-3``); private webhooks are the
    Service's to allow (``up --allow-private-webhooks``)."""

    public_url: str | None = None  # the hub as A2A callers reach it (cards' URLs); else each request's Host
    compat_0_3: bool = False  # also answer A2A 0.3 clients on the same endpoints


class HubApp:
    """The hub's ASGI application: its mounts (``hub/mounts.py``), the REST API answering the rest."""

    def __init__(self, mounts: Mounts, starlette: Starlette) -> None:
        self.starlette = starlette
        self.state = starlette.state
        self._mounts = mounts

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self._mounts(scope, receive, send)


class _Rest:
    """The REST API: routes without path parameters by exact method and path, Starlette's
    routing for the rest (path parameters, 404, 405) and the lifespan."""

    def __init__(self, starlette: Starlette, exact: dict[tuple[str, str], _Served]) -> None:
        self._starlette = starlette
        self._exact = exact

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            endpoint = self._exact.get((scope["method"], scope["path"]))
            if endpoint is not None:
                await endpoint(scope, receive, send)
                return
        await self._starlette(scope, receive, send)


class _Served:
    """An endpoint served (``endpoint.served``) as an ASGI app: an instance, so that Starlette
    routes to it as an app rather than wrapping it as a request handler."""

    def __init__(self, hub: HubContext, endpoint: Endpoint) -> None:
        self._serve = served(hub, endpoint)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self._serve(scope, receive, send)
