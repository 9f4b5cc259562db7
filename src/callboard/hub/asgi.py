"""The ASGI pieces every hub endpoint stands on (``hub/endpoint.py``): the request's headers
and query, and its answer, without Starlette's Request and Response objects."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from callboard import headers
from callboard.errors import TooLarge

log = logging.getLogger("callboard.hub")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
# ASGI's send takes any mutable mapping (Starlette's apps are handed ours). A server's send is a
# coroutine function (uvicorn's, Starlette's test client's): run_now steps the coroutine it returns.
Send = Callable[[MutableMapping[str, Any]], Coroutine[Any, Any, None]]


class Disconnected(Exception):
    """The client went away: nobody is left to answer."""


class Reply:
    """The answer to one request, sent through ASGI; remembers whether it has begun."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False

    async def start(self, status: int, content_type: bytes, headers: dict[str, str] | None = None) -> None:
        fields = [(b"content-type", content_type)]
        fields += [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in (headers or {}).items()]
        self.started = True
        await self._send({"type": "http.response.start", "status": status, "headers": fields})

    async def body(self, data: bytes, *, more: bool = False) -> None:
        await self._send({"type": "http.response.body", "body": data, "more_body": more})

    def body_now(self, data: bytes) -> asyncio.Future[None] | None:
        """``body(data, more=True)`` begun at once, outside any task: None when it is done (the
        server had room to write it, the usual case), else a task that finishes it."""
        return run_now(self._send({"type": "http.response.body", "body": data, "more_body": True}))

    async def json(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        await self.start(status, b"application/json", {"content-length": str(len(data)), **(headers or {})})
        await self.body(data)


def run_now(coroutine: Coroutine[Any, Any, None]) -> asyncio.Future[None] | None:
    """Run ``coroutine`` on the spot, as far as it goes without waiting: None if it finished.

    If it waits for something (a future), a task carries it on from there — stepping it as
    asyncio's own Task would, but skipping the task (and a loop turn) when nothing is awaited."""
    try:
        awaited = coroutine.send(None)
    except StopIteration:
        return None

    async def carry_on(awaited: Any) -> None:
        while True:
            try:
                if awaited is None:  # a bare yield: give the loop one turn
                    await asyncio.sleep(0)
                else:
                    # The coroutine yielded this future marked "a task waits on me"; asyncio's
                    # Task clears that mark before it waits on it, and so must we.
                    awaited._asyncio_future_blocking = False
                    await awaited
            except BaseException as error:  # hand what the awaited thing raised to the coroutine
                try:
                    awaited = coroutine.throw(error)
                except StopIteration:
                    return
                continue
            try:
                awaited = coroutine.send(None)
            except StopIteration:
                return

    return asyncio.ensure_future(carry_on(awaited))


# The only headers an endpoint reads (ASGI gives names in lower case).
_READ_HEADERS = frozenset(
    name.lower().encode()
    for name in (
        "authorization",
        headers.AGENT_HEADER,
        headers.WORKSPACE_HEADER,
        headers.SESSION_HEADER,
        headers.PROCESS_HEADER,
        "content-length",
        "last-event-id",
    )
)


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers that the hub reads, by lower-case name."""
    return {
        name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"] if name in _READ_HEADERS
    }


def client_of(scope: Scope) -> str | None:
    """The address the request comes from (the peer's: the hub trusts no forwarding proxy)."""
    client = scope.get("client")
    return client[0] if client else None


def query_of(scope: Scope) -> dict[str, str]:
    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))


async def receive_body(receive: Receive, limit: int) -> bytes:
    """The whole request body, or TooLarge past ``limit`` bytes, or Disconnected."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"the request body is over {limit} bytes.")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
