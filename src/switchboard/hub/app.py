"""The hub's ASGI application: the route table, error handlers, shared context."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route as StarletteRoute

from switchboard.credentials import Credentials
from switchboard.errors import SwitchboardError
from switchboard.hub.context import HubContext
from switchboard.hub.errors import on_http_error, on_switchboard_error, on_unexpected
from switchboard.hub.openapi import build_openapi
from switchboard.hub.ratelimit import RateLimiter
from switchboard.hub.routes import ROUTES
from switchboard.service import Service

DEFAULT_RATE_LIMIT = 2000.0  # requests per second per credential


def create_app(service: Service, *, rate_limit: float = DEFAULT_RATE_LIMIT) -> Starlette:
    hub = HubContext(service, Credentials(service.store, service.clock), RateLimiter(rate_limit))
    document = build_openapi()

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        hub.stop()

    routes = [StarletteRoute(r.path, r.endpoint, methods=[r.method]) for r in ROUTES]
    routes.append(StarletteRoute("/openapi.json", openapi, methods=["GET"]))
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            SwitchboardError: on_switchboard_error,
            HTTPException: on_http_error,
            Exception: on_unexpected,
        },
    )
    app.state.hub = hub
    return app
