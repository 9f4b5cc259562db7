"""Errors at the hub's edge: which HTTP status each answers with, and the JSON it writes.

Every error the hub answers is JSON: ``{"error": {"code": …, "message": …}}``, never a 500 for
bad input. The errors themselves know nothing of HTTP (``callboard.errors``): their family says
what happened, and this table alone says what status that is here.
"""

from __future__ import annotations

import json
import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Match

from callboard.errors import (
    CallboardError,
    Forbidden,
    HeadersTooLarge,
    Invalid,
    NotFound,
    NotMember,
    RateLimited,
    Refused,
    RequestTimeout,
    TooLarge,
    Unauthorized,
    Unavailable,
)

log = logging.getLogger("callboard.hub")

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}

INTERNAL_MESSAGE = "the hub failed on this request; its log has the details."

# An error's status: the nearest class in its ancestry named here (a family, or one of its
# members whose status HTTP has its own word for). A code the hub does not know is a 400.
_STATUS: dict[type[CallboardError], int] = {
    NotFound: 404,
    Refused: 409,
    Unauthorized: 401,
    Forbidden: 403,
    NotMember: 403,
    RateLimited: 429,
    Invalid: 400,
    TooLarge: 413,
    HeadersTooLarge: 431,
    RequestTimeout: 408,
    Unavailable: 503,
}


def http_status(error: CallboardError) -> int:
    """The HTTP status the hub answers ``error`` with."""
    for cls in type(error).__mro__:
        status = _STATUS.get(cls)
        if status is not None:
            return status
    return 400


def error_document(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message}}


def error_headers(error: CallboardError) -> dict[str, str]:
    """429 says when to come back."""
    if isinstance(error, RateLimited):
        return {"Retry-After": str(error.details.get("retry_after", 1))}
    return {}


def encoded(document: object) -> bytes:
    """A JSON document as the hub writes an error or a document of its own (as Starlette's
    JSONResponse encodes: compact, UTF-8)."""
    return json.dumps(document, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


def error_response(code: str, message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_document(code, message), status_code=status, headers=headers)


async def on_http_error(request: Request, error: Exception) -> JSONResponse:
    """Starlette's own refusals (no such path, a method the path does not take) in our shape."""
    assert isinstance(error, HTTPException)
    code = _HTTP_CODES.get(error.status_code, "bad_request")
    headers = dict(error.headers or {})
    if error.status_code == 405:  # every method the path takes, not only one route's (RFC 9110 15.5.6)
        headers["Allow"] = ", ".join(allowed_methods(request))
    message = {
        404: _no_endpoint(request.url.path),
        405: f"{request.method} is not allowed on {request.url.path}; it takes {headers.get('Allow')}.",
    }.get(error.status_code, str(error.detail))
    return error_response(code, message, error.status_code, headers)


def _no_endpoint(path: str) -> str:
    if path.startswith("/.well-known/agent"):  # an A2A client given the hub's own address
        return (
            f"no agent card at {path}: this hub serves many agents, each with a card of its own at "
            "/a2a/WORKSPACE/AGENT/.well-known/agent-card.json ('callboard agent card NAME' prints one)."
        )
    return f"no such endpoint: {path}; GET /openapi.json lists them."


def allowed_methods(request: Request) -> list[str]:
    """The methods the routes matching the request's path take (GET brings HEAD)."""
    methods: set[str] = set()
    for route in request.app.routes:
        matched, _ = route.matches(request.scope)
        if matched != Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


async def on_unexpected(request: Request, error: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response("internal", INTERNAL_MESSAGE, 500)
