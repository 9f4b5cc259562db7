"""Reading mail over HTTP without polling: a long-poll read and an SSE stream.

Both subscribe to the mailbox's signal before they look, so mail committed between the look
and the wait still wakes them. The SSE stream resumes from ``Last-Event-ID`` (a delivery's
sequence number), so a reconnecting client gets every delivery once, in order.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from switchboard.errors import BadRequest
from switchboard.hub.context import (
    HubContext,
    blocking,
    json_response,
    query_bool,
    query_float,
    query_int,
    refuse_body,
)
from switchboard.model import Caller, ReadResult

KEEPALIVE_SECONDS = 15.0
STREAM_BATCH = 100


def _hub(request: Request) -> HubContext:
    return request.app.state.hub


async def read(request: Request) -> Response:
    """POST /v1/read?wait=&peek=&after=&limit= — drain (or peek) the caller's mail, waiting up to ``wait``."""
    hub = _hub(request)
    caller = await hub.caller(request)
    await refuse_body(request)
    peek, wait = query_bool(request, "peek"), query_float(request, "wait", 0.0)
    after, limit = query_int(request, "after"), query_int(request, "limit", 100)
    assert limit is not None
    hub.service.check_read_options(limit=limit, after=after, wait=wait)
    deadline = time.monotonic() + wait
    with hub.service.events.subscribe_async(caller.workspace, caller.agent) as subscription:
        while True:
            result: ReadResult = await blocking(hub.service.read, caller, peek=peek, after=after, limit=limit)
            remaining = deadline - time.monotonic()
            if result.items or remaining <= 0 or hub.stopping.is_set():
                return json_response(result)
            await subscription.wait(remaining)  # shutdown wakes every waiter too


def _resume_point(request: Request) -> int | None:
    raw = request.query_params.get("after") or request.headers.get("last-event-id")
    if raw is None or raw == "":
        return None
    if not raw.isdigit():
        raise BadRequest(f"resume point {raw!r} is not a sequence number (use the id of the last event received).")
    return int(raw)


async def events(request: Request) -> Response:
    """GET /v1/events — the caller's deliveries as Server-Sent Events (id = sequence number).

    Starts after ``Last-Event-ID`` (or ``?after=``); without one, with deliveries from now on.
    Streaming marks nothing read: acknowledge with POST /v1/ack."""
    hub = _hub(request)
    caller = await hub.caller(request)
    after = _resume_point(request)
    cursor = after if after is not None else await blocking(hub.service.mailbox_position, caller)
    return StreamingResponse(
        _event_stream(hub, caller, cursor),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _event_stream(hub: HubContext, caller: Caller, cursor: int) -> AsyncIterator[str]:
    with hub.service.events.subscribe_async(caller.workspace, caller.agent) as subscription:
        yield f"retry: 1000\n: stream of {caller.agent}, after {cursor}\n\n"
        look = True
        while not hub.stopping.is_set():
            if look:
                items = await blocking(hub.service.deliveries_since, caller, cursor, STREAM_BATCH)
                for item in items:
                    yield _event(item.seq, item.model_dump_json())
                    cursor = item.seq
                subscription.take_pushed()  # what was pushed meanwhile was just read, or comes next read
                if len(items) == STREAM_BATCH:
                    continue  # more may be waiting
            # An idle subscriber costs nothing but this wait: it looks again only when signalled.
            if not await subscription.wait(KEEPALIVE_SECONDS):
                yield ": keepalive\n\n"
                look = False
                continue
            # Deliveries pushed in order right after the cursor go out as they are; any gap (a
            # backlog overflow, another process's send) means reading the store instead.
            pushed = [p for p in subscription.take_pushed() if p.seq > cursor]
            look = not pushed or [p.seq for p in pushed] != list(range(cursor + 1, cursor + 1 + len(pushed)))
            if not look:
                for delivery in pushed:
                    yield _event(delivery.seq, delivery.mail_item_json())
                cursor = pushed[-1].seq


def _event(seq: int, data: str) -> str:
    return f"id: {seq}\nevent: message\ndata: {data}\n\n"
