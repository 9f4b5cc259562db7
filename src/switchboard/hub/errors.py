"""Every error the hub answers is JSON: ``{"error": {"code": …, "message": …}}``, never a 500 for bad input."""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match

from switchboard.errors import RateLimited, SwitchboardError

log = logging.getLogger("switchboard.hub")

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}


INTERNAL_MESSAGE = "the hub failed on this request; its log has the details."


def error_document(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message}}


def error_headers(error: SwitchboardError) -> dict[str, str]:
    """429 says when to come back."""
    if isinstance(error, RateLimited):
        return {"Retry-After": str(error.details.get("retry_after", 1))}
    return {}


def error_response(code: str, message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_document(code, message), status_code=status, headers=headers)


async def on_switchboard_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, SwitchboardError)
    return error_response(error.code, error.message, error.http_status, error_headers(error))


async def on_http_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, HTTPException)
    code = _HTTP_CODES.get(error.status_code, "bad_request")
    headers = dict(error.headers or {})
    if error.status_code == 405:  # every method the path takes, not only one route's (RFC 9110 15.5.6)
        headers["Allow"] = ", ".join(allowed_methods(request))
    message = {
        404: f"no such endpoint: {request.url.path}; GET /openapi.json lists them.",
        405: f"{request.method} is not allowed on {request.url.path}; it takes {headers.get('Allow')}.",
    }.get(error.status_code, str(error.detail))
    return error_response(code, message, error.status_code, headers)


def allowed_methods(request: Request) -> list[str]:
    """The methods the routes matching the request's path take (GET brings HEAD)."""
    methods: set[str] = set()
    for route in request.app.routes:
        matched, _ = route.matches(request.scope)
        if matched != Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


async def on_client_gone(request: Request, error: Exception) -> Response:
    """The client went away while still sending its request (a process stopped mid-call):
    nothing was done, nobody is there to answer, and it is no error of the hub's."""
    return Response(status_code=499)  # "client closed request"; never reaches the client


async def on_unexpected(request: Request, error: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response("internal", INTERNAL_MESSAGE, 500)
