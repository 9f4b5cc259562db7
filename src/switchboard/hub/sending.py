"""POST /v1/messages, the hub's busiest endpoint, served as bare ASGI (see ``hub.asgi``).

It behaves as the Starlette endpoints do: the same checks in the same order (token, rate,
body size, JSON, fields), the same JSON answers and errors.
"""

from __future__ import annotations

import functools

from switchboard.hub.asgi import Receive, Reply, Scope, bare_endpoint, client_of, headers_of, receive_body
from switchboard.hub.context import MAX_BODY_BYTES, HubContext, blocking, check_declared_length, parse_body, settled
from switchboard.hub.schemas import SendRequest


@bare_endpoint
async def send_message(hub: HubContext, scope: Scope, receive: Receive, reply: Reply) -> None:
    headers = headers_of(scope)
    caller = (await hub.identify_by(headers, client_of(scope)))[1]
    check_declared_length(headers)
    body = parse_body(await receive_body(receive, MAX_BODY_BYTES), SendRequest)
    send = functools.partial(
        hub.service.submit_send,
        caller,
        body.to,
        body.text,
        subject=body.subject,
        parts=body.parts,
        thread_id=body.thread_id,
        reply_to=body.reply_to,
        require_live=body.require_live,
        idempotency_key=body.idempotency_key,
        urgent=body.urgent,
    )
    # Deciding a send to known names takes a few quick reads: done here on the loop. One that
    # must guess new names, list a machine's sessions or re-read the workspace's open sessions
    # is decided on a worker thread, so that it holds up no other request. The commit is
    # awaited either way: no thread waits for it, and concurrent sends share a group commit.
    pending = send() if hub.service.decides_quickly(caller, body.to) else await blocking(send)
    result = await settled(pending)
    await reply.json(200 if result.duplicate else 201, result.model_dump_json())
