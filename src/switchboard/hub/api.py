"""The REST endpoints of /v1: each authenticates, parses, calls the service, answers JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from switchboard import __version__
from switchboard.address import AUDIT_LIMIT_DEFAULT, INBOX_LIMIT_DEFAULT, READ_LIMIT_MAX
from switchboard.credentials import Credentials
from switchboard.errors import BadRequest
from switchboard.hub.context import (
    WORKSPACE_HEADER,
    HubContext,
    blocking,
    json_response,
    query_bool,
    query_int,
    read_body,
    refuse_body,
)
from switchboard.hub.schemas import (
    AckRequest,
    AgentRequest,
    AgentUpdate,
    ChannelRequest,
    ConfirmSurfacedRequest,
    HeartbeatRequest,
    InviteRequest,
    MarkReadRequest,
    ReceiptRequest,
    SessionRequest,
    TokenRequest,
)
from switchboard.service import Service


def _hub(request: Request) -> HubContext:
    return request.app.state.hub


async def _as_caller(request: Request, operation: Callable[..., Any], *path: str, no_body: bool = False) -> Response:
    """The plain endpoint: authenticate, call ``operation(service, caller, *path values)``, answer JSON."""
    hub = _hub(request)
    caller = await hub.caller(request)
    if no_body:
        await refuse_body(request)
    return json_response(await blocking(operation, hub.service, caller, *(request.path_params[p] for p in path)))


async def health(request: Request) -> Response:
    hub = _hub(request)
    return json_response({"status": "ok", "version": __version__, "replica": hub.replica, "store": hub.store_kind})


async def whoami(request: Request) -> Response:
    hub = _hub(request)
    credential, caller = await hub.identify(request)
    me = await blocking(hub.service.whoami, caller, f"{credential.kind} token", str(request.base_url).rstrip("/"))
    return json_response(me)


async def message_status(request: Request) -> Response:
    return await _as_caller(request, Service.message_status, "message_id")


async def inbox(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    items = await blocking(
        hub.service.inbox,
        caller,
        include_acked=query_bool(request, "all"),
        limit=query_int(request, "limit", INBOX_LIMIT_DEFAULT, 1, READ_LIMIT_MAX),
    )
    return json_response(items)


async def mark_read(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    body = await read_body(request, MarkReadRequest)
    return json_response(await blocking(hub.service.mark_read, caller, body.message_ids))


async def confirm_surfaced(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    body = await read_body(request, ConfirmSurfacedRequest)
    return json_response(await blocking(hub.service.confirm_surfaced, caller, body.message_ids, body.evidence))


async def record_receipt(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    body = await read_body(request, ReceiptRequest)
    return json_response(await blocking(hub.service.record_receipt, caller, body.message_ids, body.status, body.reason))


async def ack(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    body = await read_body(request, AckRequest)
    return json_response(await blocking(hub.service.ack, caller, body.message_ids))


async def who(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    report = await blocking(hub.service.who, caller)
    return json_response(report.model_copy(update={"replica": hub.replica}))


async def register_session(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    body = await read_body(request, SessionRequest)
    session = await blocking(
        hub.service.register_session,
        caller,
        pid=body.pid,
        runtime=body.runtime,
        machine=body.machine,
        proc_start=body.proc_start,
        terminal=body.terminal,
    )
    return json_response(session, 201)


async def heartbeat(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    body = await read_body(request, HeartbeatRequest)
    return json_response(
        await blocking(hub.service.heartbeat, caller, request.path_params["session_id"], body.delivery_error)
    )


async def reach(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    address = request.query_params.get("address", "")
    if not address.strip():
        raise BadRequest("name the address to look up: ?address=name, name@machine or name@machine#pid.")
    return json_response(await blocking(hub.service.reach, caller, address))


async def end_session(request: Request) -> Response:
    return await _as_caller(request, Service.end_session, "session_id")


async def list_agents(request: Request) -> Response:
    return await _as_caller(request, Service.list_agents)


async def create_agent(request: Request) -> Response:
    hub = _hub(request)
    credential, caller = await hub.identify(request)
    body = await read_body(request, AgentRequest)
    credential.check_manages(body.name)
    agent = await blocking(hub.service.create_agent, caller, body.name, body.description, body.skills)
    return json_response(agent, 201)


async def describe_agent(request: Request) -> Response:
    return await _as_caller(request, Service.describe_agent, "name")


async def update_agent(request: Request) -> Response:
    hub = _hub(request)
    name = request.path_params["name"]
    caller = await hub.caller_managing(request, name)
    body = await read_body(request, AgentUpdate)
    return json_response(await blocking(hub.service.update_agent, caller, name, body.description, body.skills))


async def delete_agent(request: Request) -> Response:
    hub = _hub(request)
    name = request.path_params["name"]
    caller = await hub.caller_managing(request, name)
    force = query_bool(request, "force")
    return json_response(await blocking(hub.service.delete_agent, caller, name, force=force))


async def list_channels(request: Request) -> Response:
    return await _as_caller(request, Service.list_channels)


async def create_channel(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    body = await read_body(request, ChannelRequest)
    channel = await blocking(
        hub.service.create_channel, caller, body.name, body.description, invite_only=body.invite_only
    )
    return json_response(channel, 201)


async def join_channel(request: Request) -> Response:
    return await _as_caller(request, Service.join_channel, "name", no_body=True)


async def leave_channel(request: Request) -> Response:
    return await _as_caller(request, Service.leave_channel, "name", no_body=True)


async def channel_members(request: Request) -> Response:
    return await _as_caller(request, Service.channel_members, "name")


async def invite_to_channel(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    body = await read_body(request, InviteRequest)
    return json_response(
        await blocking(hub.service.invite_to_channel, caller, request.path_params["name"], body.agents)
    )


async def remove_from_channel(request: Request) -> Response:
    return await _as_caller(request, Service.remove_from_channel, "name", "agent", no_body=True)


async def audit_trail(request: Request) -> Response:
    hub = _hub(request)
    caller = await hub.caller(request)
    return json_response(
        await blocking(
            hub.service.audit_trail, caller, query_int(request, "limit", AUDIT_LIMIT_DEFAULT, 1, READ_LIMIT_MAX)
        )
    )


async def _as_credential(request: Request, operation: Callable[..., Any], *path: str) -> Response:
    """The plain credentials endpoint: authenticate, call ``operation(credentials, credential,
    *path values, workspace named)``: it acts in the workspace the request names, as every route does."""
    hub = _hub(request)
    credential = await hub.credential(request)
    named = request.headers.get(WORKSPACE_HEADER)
    return json_response(
        await blocking(operation, hub.credentials, credential, *(request.path_params[p] for p in path), named)
    )


async def list_workspaces(request: Request) -> Response:
    return await _as_credential(request, Credentials.workspaces)


async def create_token(request: Request) -> Response:
    hub = _hub(request)
    credential = await hub.credential(request)
    body = await read_body(request, TokenRequest)
    kind = body.kind or ("agent" if body.agent else "user")
    named = request.headers.get(WORKSPACE_HEADER)
    issued = await blocking(
        hub.credentials.issue, credential, kind, body.workspace, body.agent, body.label, named=named
    )
    return json_response(issued, 201)


async def list_tokens(request: Request) -> Response:
    return await _as_credential(request, Credentials.list)


async def revoke_token(request: Request) -> Response:
    hub = _hub(request)
    credential = await hub.credential(request)
    named = request.headers.get(WORKSPACE_HEADER)
    token = await blocking(hub.credentials.revoke, credential, request.path_params["token_id"], named)
    await hub.streams.revoke(token.id)  # its streams and waiting reads end before this answers
    return json_response(token)
