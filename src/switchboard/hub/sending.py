"""POST /v1/messages, the hub's busiest endpoint, served as bare ASGI.

Every other endpoint goes through Starlette (routing, middleware, Request and Response
objects); a send is answered before all that, which is about a quarter of the hub's work per
send. It behaves as the Starlette endpoints do: the same checks in the same order (token, rate,
body size, JSON, fields), the same JSON errors, and a 500 logged, never a traceback to the
client.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from switchboard.errors import SwitchboardError, TooLarge
from switchboard.hub.context import MAX_BODY_BYTES, HubContext, check_declared_length, parse_body, settled
from switchboard.hub.errors import INTERNAL_MESSAGE, error_document, error_headers
from switchboard.hub.schemas import SendRequest

log = logging.getLogger("switchboard.hub")

Scope = dict[str, Any]


class _Disconnected(Exception):
    """The client went away before its body arrived: nobody is left to answer."""


async def send_message(hub: HubContext, scope: Scope, receive: Any, send: Any) -> None:
    try:
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        caller = (await hub.identify_by(headers))[1]
        check_declared_length(headers)
        body = parse_body(await _receive_body(receive), SendRequest)
        # Deciding takes a few quick reads, done here on the loop; the commit is awaited, so no
        # thread is held per send and concurrent sends share the writer's group commit.
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
        )
        result = await settled(pending)
    except _Disconnected:
        return
    except SwitchboardError as error:
        await _answer(send, error.http_status, error_document(error.code, error.message), error_headers(error))
        return
    except Exception:
        log.exception("unexpected error on POST /v1/messages")
        await _answer(send, 500, error_document("internal", INTERNAL_MESSAGE))
        return
    await _answer(send, 200 if result.duplicate else 201, result.model_dump_json())


async def _receive_body(receive: Any) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise TooLarge(f"the request body is over {MAX_BODY_BYTES} bytes.")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _answer(send: Any, status: int, body: str | dict[str, Any], headers: dict[str, str] | None = None) -> None:
    raw = (body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))).encode()
    fields = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    fields += [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": raw})
