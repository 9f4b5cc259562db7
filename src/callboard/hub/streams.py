"""Reading mail over HTTP without polling: a long-poll read and an SSE stream.

Both subscribe to the mailbox's signal before they look, so mail committed between the look
and the wait still wakes them. The SSE stream resumes from ``Last-Event-ID`` (a delivery's
sequence number), so a reconnecting client gets every delivery once, in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from callboard.hub.asgi import Receive, Reply
from callboard.hub.context import HubContext, blocking, secret_hash_of
from callboard.hub.endpoint import Call
from callboard.hub.long_poll import long_poll
from callboard.hub.open_streams import OpenStream
from callboard.hub.query_numbers import resume_point
from callboard.limits import READ_LIMIT_DEFAULT, READ_LIMIT_MAX, SEQ_MAX, WAIT_SECONDS_MAX
from callboard.model import Caller, ReadResult
from callboard.requests import ReadQuery, SurfaceQuery
from callboard.service.credentials import Credential
from callboard.service.events import AsyncSubscription, PushedDelivery
from callboard.service.identity_gate import AgentCaller, as_agent

KEEPALIVE_SECONDS = 15.0
STREAM_BATCH = 100
_NONE: frozenset[str | None] = frozenset()


async def read(call: Call) -> ReadResult:
    """POST /v1/read?wait=&peek=&after=&limit= — drain (or peek) the caller's mail, waiting up to ``wait``."""
    service = call.hub.service
    credential, caller = await call.identify()
    caller = as_agent(caller)  # a mailbox is an agent's: no_identity before any wait
    await call.no_body()
    peek, wait = call.query_bool("peek"), call.query_float("wait", 0.0, 0.0, WAIT_SECONDS_MAX)
    after = call.query_int("after", None, 0, SEQ_MAX)
    limit = call.query_int("limit", READ_LIMIT_DEFAULT, 1, READ_LIMIT_MAX)
    assert limit is not None
    service.mailbox.check_read_options(limit=limit, after=after, wait=wait)
    query = ReadQuery(peek=peek, after=after, limit=limit)  # each take looks now: the hub waits between
    return await _long_poll(call, credential, caller, wait, lambda acting: service.mailbox.read(acting, query))


async def surface(call: Call) -> ReadResult:
    """POST /v1/surface?via=&urgent=&wait=&limit=&peek= — take the caller's mail not yet read nor
    put before the agent, marked surfaced by ``via`` (see Service.surface), waiting up to ``wait``."""
    service = call.hub.service
    credential, caller = await call.identify()
    caller = as_agent(caller)  # a mailbox is an agent's: no_identity before any wait
    await call.no_body()
    via, urgent, peek = call.query("via") or "", call.query_bool("urgent"), call.query_bool("peek")
    wait = call.query_float("wait", 0.0, 0.0, WAIT_SECONDS_MAX)
    limit = call.query_int("limit", READ_LIMIT_DEFAULT, 1, READ_LIMIT_MAX)
    assert limit is not None
    service.mailbox.check_read_options(limit=limit, after=None, wait=wait)
    query = SurfaceQuery(via=via, urgent_only=urgent, limit=limit, peek=peek)  # the hub waits between takes
    return await _long_poll(
        call,
        credential,
        caller,
        wait,
        lambda acting: service.surface(acting, query),
    )


async def _long_poll(
    call: Call, credential: Credential, caller: AgentCaller, wait: float, take: Callable[[Caller], ReadResult]
) -> ReadResult:
    """``take(caller)``, again at each signal of the caller's mailbox, until it finds mail or
    ``wait`` seconds pass (``long_poll``)."""
    subscribed = call.hub.service.subscriptions.subscribe_async(caller.workspace, caller.agent)
    return await long_poll(call, credential, subscribed, wait, take, lambda result: bool(result.items))


def _resume_point(headers: dict[str, str], after: str | None) -> int | None:
    raw = after or headers.get("last-event-id")
    return None if raw is None or raw.strip() == "" else resume_point(raw.strip())


async def events(call: Call) -> None:
    """GET /v1/events — the caller's deliveries as Server-Sent Events (id = sequence number).

    Starts after ``Last-Event-ID`` (or ``?after=``); without one, with deliveries from now on.
    Streaming marks nothing read: acknowledge with POST /v1/ack. A channel post wakes every
    member's stream, and each event should cost little."""
    hub, reply = call.hub, call.reply
    credential, caller = await call.identify()
    as_agent(caller)  # a mailbox is an agent's: no_identity before the stream begins
    after = _resume_point(call.headers, call.query("after"))
    # One worker call at the start, which also counts the agent's unread mail for the header.
    cursor = await call.run_as(
        lambda acting: after if after is not None else hub.service.mailbox.mailbox_position(acting)
    )
    in_session = call.caller  # the caller in the session the request names, now
    assert in_session is not None and in_session.agent is not None, "identified, as an agent"
    with (
        hub.service.subscriptions.subscribe_async(in_session.workspace, in_session.agent) as subscription,
        hub.streams.opened(credential, secret_hash_of(call.headers), lambda: subscription.receive(None)) as stream,
    ):
        gone = asyncio.get_running_loop().create_task(_disconnect(call.receive, subscription))
        try:
            await call.start_stream(b"text/event-stream", {"cache-control": "no-cache", "x-accel-buffering": "no"})
            await _stream(hub, in_session, cursor, subscription, gone, reply, stream)
            if stream.revoked:  # a comment, for whoever reads the stream by hand; clients see its end
                await reply.body(b": this token was revoked\n\n", more=True)
            await reply.body(b"")
        finally:
            gone.cancel()


async def _disconnect(receive: Receive, subscription: AsyncSubscription) -> None:
    """Wait for the client to go, then wake the stream so that it ends."""
    while (await receive())["type"] != "http.disconnect":
        pass
    subscription.receive(None)


async def _stream(
    hub: HubContext,
    caller: Caller,
    cursor: int,
    subscription: AsyncSubscription,
    gone: asyncio.Task[None],
    reply: Reply,
    stream: OpenStream,
) -> None:
    """Write the caller's deliveries after ``cursor`` as they come, until the hub stops, the client
    goes or the token is revoked (checked before every write: no event goes out after it)."""
    await reply.body(f"retry: 1000\n: stream of {caller.agent}, after {cursor}\n\n".encode(), more=True)
    direct = _Direct(reply, cursor, stream)
    look = True
    while not hub.stopping and not gone.done() and not stream.revoked:
        # A stream of one session skips what is pushed to its agent's other live sessions (as the
        # store's reads do): which those are is asked once per wake-up, for the look and the wait.
        hidden = tuple(await blocking(hub.service.directory.hidden_targets, caller)) if caller.session_id else ()
        if look:
            items = await blocking(hub.service.mailbox.deliveries_since, caller, cursor, STREAM_BATCH, hidden)
            for item in items:
                if stream.revoked:
                    return
                await reply.body(_event(item.seq, item.model_dump_json()), more=True)
                cursor = item.seq
            subscription.take_pushed()  # what was pushed meanwhile was just read, or comes next read
            if len(items) == STREAM_BATCH:
                continue  # more may be waiting
        # An idle subscriber costs nothing but this wait: it looks again only when signalled.
        # Meanwhile deliveries pushed in order go straight out (see _Direct).
        direct.hidden = frozenset(hidden) if hidden else _NONE
        direct.cursor = cursor
        subscription.direct = direct
        try:
            signalled = await subscription.wait(KEEPALIVE_SECONDS)
        finally:
            subscription.direct = None
        cursor = direct.cursor
        if direct.in_flight is not None:  # a write the client was slow to take: let it finish first
            await direct.in_flight
            direct.in_flight = None
        if stream.revoked:
            return
        if not signalled:
            await reply.body(b": keepalive\n\n", more=True)
            look = False
            continue
        # Deliveries pushed in order right after the cursor go out as they are; any gap (a
        # backlog overflow, another process's send) means reading the store instead.
        pushed = [p for p in subscription.take_pushed() if p.seq > cursor]
        look = not pushed or pushed[0].seq != cursor + 1 or pushed[-1].seq != cursor + len(pushed)
        if not look:
            for delivery in pushed:
                if stream.revoked:
                    return
                if delivery.target_session not in direct.hidden:
                    await reply.body(_event(delivery.seq, delivery.mail_item_json()), more=True)
            cursor = pushed[-1].seq


class _Direct:
    """Writes a delivery to the client from within the publisher's call, while the stream waits
    with nothing left to write: a channel post then costs its members' streams no wake-up each
    (the event goes out in order, right after the stream's cursor, or not at all)."""

    __slots__ = ("reply", "cursor", "in_flight", "hidden", "stream")

    def __init__(self, reply: Reply, cursor: int, stream: OpenStream) -> None:
        self.reply = reply
        self.cursor = cursor
        self.in_flight: asyncio.Future[None] | None = None
        self.hidden: frozenset[str | None] = _NONE  # sessions whose deliveries this stream skips
        self.stream = stream

    def __call__(self, delivery: PushedDelivery) -> bool:
        if self.in_flight is not None or delivery.seq != self.cursor + 1 or self.stream.revoked:
            return False  # the stream wakes and sorts it out
        if delivery.target_session in self.hidden:
            self.cursor = delivery.seq
            return True
        try:
            self.in_flight = self.reply.body_now(_event(delivery.seq, delivery.mail_item_json()))
        except Exception:
            return False  # the stream writes it itself, and meets the error there
        self.cursor = delivery.seq
        return True


def _event(seq: int, data: str) -> bytes:
    return f"id: {seq}\nevent: message\ndata: {data}\n\n".encode()
