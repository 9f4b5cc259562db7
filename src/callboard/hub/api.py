"""The REST endpoints of /v1, each written one way (``hub/endpoint.py``): identify the caller,
read what the request brings, run the service operation through ``call.run``, return the answer."""

from __future__ import annotations

from typing import Any

from starlette.requests import HTTPConnection

from callboard import __version__
from callboard.a2a.server.cards import build_card, card_document
from callboard.errors import BadRequest
from callboard.hub.a2a_endpoint import request_base_url
from callboard.hub.context import WORKSPACE_HEADER
from callboard.hub.endpoint import Answer, Call
from callboard.hub.schemas import (
    AckRequest,
    AgentRequest,
    AgentUpdate,
    ChannelRequest,
    ConfirmSurfacedRequest,
    HeartbeatRequest,
    InviteRequest,
    MarkReadRequest,
    ReceiptRequest,
    RemoteRequest,
    TokenRequest,
)
from callboard.limits import AUDIT_LIMIT_DEFAULT, INBOX_LIMIT_DEFAULT, READ_LIMIT_MAX
from callboard.model import (
    AckResult,
    Agent,
    AuditEntry,
    Channel,
    ChannelMember,
    DeletedAgent,
    MailItem,
    MarkResult,
    MessageStatus,
    Reach,
    Session,
    WhoAmI,
    WhoReport,
    Workspace,
)
from callboard.remotes import RemoteAgent
from callboard.requests import InboxQuery, SessionRequest
from callboard.tokens import TokenInfo


async def health(call: Call) -> dict[str, object]:
    hub = call.hub
    return {"status": "ok", "version": __version__, "replica": hub.replica, "store": hub.store_kind}


async def whoami(call: Call) -> WhoAmI:
    credential, _ = await call.identify()
    url = str(HTTPConnection(call.scope).base_url).rstrip("/")
    return await call.run_as(call.hub.service.whoami, f"{credential.kind} token", url)


async def message_status(call: Call) -> MessageStatus:
    await call.identify()
    return await call.run_as(call.hub.service.message_status, call.path("message_id"))


async def inbox(call: Call) -> list[MailItem]:
    await call.identify()
    limit = call.query_int("limit", INBOX_LIMIT_DEFAULT, 1, READ_LIMIT_MAX)
    query = InboxQuery(include_acked=call.query_bool("all"), limit=limit)
    return await call.run_as(call.hub.service.mailbox.inbox, query)


async def mark_read(call: Call) -> MarkResult:
    await call.identify()
    body = await call.body(MarkReadRequest)
    return await call.run_as(call.hub.service.mailbox.mark_read, body.message_ids)


async def confirm_surfaced(call: Call) -> MarkResult:
    await call.identify()
    body = await call.body(ConfirmSurfacedRequest)
    return await call.run_as(call.hub.service.confirm_surfaced, body.message_ids, body.evidence)


async def record_receipt(call: Call) -> MarkResult:
    await call.identify()
    body = await call.body(ReceiptRequest)
    return await call.run_as(call.hub.service.handover.record_receipt, body.message_ids, body.status, body.reason)


async def ack(call: Call) -> AckResult:
    await call.identify()
    body = await call.body(AckRequest)
    return await call.run_as(call.hub.service.mailbox.ack, body.message_ids)


async def who(call: Call) -> WhoReport:
    await call.identify()
    report = await call.run_as(call.hub.service.who)
    return report.model_copy(update={"replica": call.hub.replica})


async def register_session(call: Call) -> Answer:
    await call.identify()
    body = await call.body(SessionRequest)
    session = await call.run_as(call.hub.service.register_session, body)
    return Answer(session, 201)


async def heartbeat(call: Call) -> Session:
    await call.identify()
    body = await call.body(HeartbeatRequest)
    return await call.run_as(call.hub.service.directory.heartbeat, call.path("session_id"), body.delivery_error)


async def reach(call: Call) -> Reach:
    await call.identify()
    address = call.query("address") or ""
    if not address.strip():
        raise BadRequest("name the address to look up: ?address=name, name@machine or name@machine#pid.")
    return await call.run_as(call.hub.service.presence.reach, address)


async def end_session(call: Call) -> Session:
    await call.identify()
    return await call.run_as(call.hub.service.end_session, call.path("session_id"))


async def list_agents(call: Call) -> list[Agent]:
    await call.identify()
    return await call.run_as(call.hub.service.list_agents, call.query("skill"))


async def create_agent(call: Call) -> Answer:
    credential, _ = await call.identify()
    body = await call.body(AgentRequest)
    credential.check_manages(body.name)
    agent = await call.run_as(call.hub.service.directory.create_agent, body.name, body.description, body.skills)
    return Answer(agent, 201)


async def describe_agent(call: Call) -> Agent:
    await call.identify()
    return await call.run_as(call.hub.service.directory.describe_agent, call.path("name"))


async def agent_card(call: Call) -> dict[str, Any]:
    """The agent's A2A card, as its /a2a/WORKSPACE/NAME/.well-known/agent-card.json serves it."""
    await call.identify()
    agent = await call.run_as(call.hub.service.directory.describe_agent, call.path("name"))
    base = call.hub.public_url or request_base_url(call.scope)
    return card_document(build_card(agent, base, compat_0_3=call.hub.a2a_compat_0_3))


async def update_agent(call: Call) -> Agent:
    name = call.path("name")
    credential, _ = await call.identify()
    credential.check_manages(name)
    body = await call.body(AgentUpdate)
    return await call.run_as(call.hub.service.directory.update_agent, name, body.description, body.skills)


async def delete_agent(call: Call) -> DeletedAgent:
    name = call.path("name")
    credential, _ = await call.identify()
    credential.check_manages(name)
    force = call.query_bool("force")
    return await call.run_as(call.hub.service.directory.delete_agent, name, force=force)


async def list_remotes(call: Call) -> list[RemoteAgent]:
    await call.identify()
    return await call.run_as(call.hub.service.remotes.list)


async def add_remote(call: Call) -> Answer:
    credential, _ = await call.identify()
    body = await call.body(RemoteRequest)
    credential.check_manages(body.name)
    remote = await call.run_as(call.hub.service.remotes.add, body.name, body.url, token=body.token)
    return Answer(remote, 201)


async def remove_remote(call: Call) -> RemoteAgent:
    name = call.path("name")
    credential, _ = await call.identify()
    credential.check_manages(name)
    return await call.run_as(call.hub.service.remotes.remove, name)


async def list_channels(call: Call) -> list[Channel]:
    await call.identify()
    return await call.run_as(call.hub.service.directory.list_channels)


async def create_channel(call: Call) -> Answer:
    await call.identify()
    body = await call.body(ChannelRequest)
    channel = await call.run_as(
        call.hub.service.directory.create_channel, body.name, body.description, invite_only=body.invite_only
    )
    return Answer(channel, 201)


async def join_channel(call: Call) -> Channel:
    await call.identify()
    await call.no_body()
    return await call.run_as(call.hub.service.directory.join_channel, call.path("name"))


async def leave_channel(call: Call) -> Channel:
    await call.identify()
    await call.no_body()
    return await call.run_as(call.hub.service.directory.leave_channel, call.path("name"))


async def channel_members(call: Call) -> list[ChannelMember]:
    await call.identify()
    return await call.run_as(call.hub.service.directory.channel_members, call.path("name"))


async def invite_to_channel(call: Call) -> Channel:
    await call.identify()
    body = await call.body(InviteRequest)
    return await call.run_as(call.hub.service.directory.invite_to_channel, call.path("name"), body.agents)


async def remove_from_channel(call: Call) -> Channel:
    await call.identify()
    await call.no_body()
    return await call.run_as(call.hub.service.directory.remove_from_channel, call.path("name"), call.path("agent"))


async def audit_trail(call: Call) -> list[AuditEntry]:
    await call.identify()
    limit = call.query_int("limit", AUDIT_LIMIT_DEFAULT, 1, READ_LIMIT_MAX)
    return await call.run_as(call.hub.service.directory.audit_trail, limit)


# --- credentials: a token's own business, as no agent (their answers carry no unread count) ----


async def list_workspaces(call: Call) -> list[Workspace]:
    credential = await call.credential()
    return await call.run(call.hub.credentials.workspaces, credential, call.headers.get(WORKSPACE_HEADER))


async def create_token(call: Call) -> Answer:
    credential = await call.credential()
    body = await call.body(TokenRequest)
    kind = body.kind or ("agent" if body.agent else "user")
    named = call.headers.get(WORKSPACE_HEADER)
    issued = await call.run(
        call.hub.credentials.issue, credential, kind, body.workspace, body.agent, body.label, named=named
    )
    return Answer(issued, 201)


async def list_tokens(call: Call) -> list[TokenInfo]:
    credential = await call.credential()
    return await call.run(call.hub.credentials.list, credential, call.headers.get(WORKSPACE_HEADER))


async def revoke_token(call: Call) -> TokenInfo:
    credential = await call.credential()
    named = call.headers.get(WORKSPACE_HEADER)
    token = await call.run(call.hub.credentials.revoke, credential, call.path("token_id"), named)
    await call.hub.streams.revoke(token.id)  # its streams and waiting reads end before this answers
    return token
