"""POST /v1/messages, the hub's busiest endpoint, served as bare ASGI (see ``hub.asgi``).

It behaves as the Starlette endpoints do: the same checks in the same order (token, rate,
body size, JSON, fields), the same JSON answers and errors.
"""

from __future__ import annotations

from switchboard.hub.asgi import Receive, Reply, Scope, bare_endpoint, headers_of, receive_body
from switchboard.hub.context import MAX_BODY_BYTES, HubContext, check_declared_length, parse_body, settled
from switchboard.hub.schemas import SendRequest


@bare_endpoint
async def send_message(hub: HubContext, scope: Scope, receive: Receive, reply: Reply) -> None:
    headers = headers_of(scope)
    caller = (await hub.identify_by(headers))[1]
    check_declared_length(headers)
    body = parse_body(await receive_body(receive, MAX_BODY_BYTES), SendRequest)
    # Deciding takes a few quick reads, done here on the loop; the commit is awaited, so no
    # thread is held per send and concurrent sends share the store's group commit.
    pending = hub.service.submit_send(
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
    result = await settled(pending)
    await reply.json(200 if result.duplicate else 201, result.model_dump_json())
