"""The mailbox as MCP tools: one tool set, defined once, bound to any Client.

The names and meanings are those of the widely used hosted agent-messaging tools, so prompts
written for them work unchanged: ``send_message``, ``read_messages``, ``list_agents``,
``list_channels``, ``message_status``, plus ``who`` (who is live where). Each result is typed
(an output schema and structured content) and also reads well as text; each carries the caller's
unread count, so a model notices new mail whatever it called. Mail is shown fenced as another
agent's words (``fence``). A failure is a tool error a model can act on: the stable code, the
sentence, and what to call next.

Every word here reaches the model's context on every turn: descriptions are short and exact.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from callboard import __version__
from callboard.client.base import Client
from callboard.errors import CallboardError
from callboard.fence import fenced_mail, fenced_words, one_line
from callboard.handoff import Packet, handoff_request
from callboard.mcp.replies import acted, tool_result, unread_line, unread_of
from callboard.mcp.results import (
    AgentInfo,
    Agents,
    ChannelInfo,
    Channels,
    Delivery,
    HeldInfo,
    Inbox,
    MachineInfo,
    Mail,
    PresenceInfo,
    Recipient,
    Sent,
    Status,
    Who,
)
from callboard.mcp.task_tools import add_task_tools
from callboard.model import DeliveryEvent, HeldMail, MailItem, utcnow
from callboard.requests import ReadQuery, SendRequest, TaskRequest
from callboard.tasks import TaskSent

log = logging.getLogger("callboard.inject")

INSTRUCTIONS = (
    "A mailbox shared with other AI agents. send_message to reach them; read_messages to get "
    "what they sent (wait_seconds blocks until mail arrives). Every result has your unread count."
)
DEFAULT_READ_LIMIT = 100  # the service's own default: a read drains what a model can take in one go

# --- the tools ----------------------------------------------------------------------------------

T = TypeVar("T")
ClientOf = Callable[[Context], Awaitable[Client]]  # the Client a tool call acts through
Run = Callable[[Callable[[], T]], Awaitable[T]]  # how a tool's (blocking) client calls are run
PacketOf = Callable[[str, str, str], Packet]  # (from, to, summary): a hand-off's packet, built where the work is


async def call_in_place(work: Callable[[], T]) -> T:
    """Run a tool's client calls on the server's own loop: a send or a look takes a millisecond
    or two, less than a hop to a worker thread and back (the stdio server's way)."""
    return work()


async def call_in_thread(work: Callable[[], T]) -> T:
    """Run a tool's client calls on a worker thread (the hub's way: its loop must not block)."""
    return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)


def one_client(client: Client) -> ClientOf:
    """Every call acts through ``client`` (a stdio server serves one agent session)."""

    async def client_of(ctx: Context) -> Client:
        return client

    return client_of


def mailbox_server(
    client_of: ClientOf,
    *,
    run: Run = call_in_place,
    name: str = "callboard",
    packet_of: PacketOf | None = None,
) -> MCPServer:
    """An MCP server whose tools act through ``await client_of(ctx)``: the one agent of a stdio
    session, or the agent a hub request's credential names. A read that may wait for mail always
    runs on a worker thread, so other calls go on meanwhile. What a send did besides (mail the
    client injected into local sessions) is the client's to tell, in its result. ``packet_of``:
    how a hand-off's packet is built where the session works (a stdio server's; without it, as
    on the hub, a packet carries the summary alone)."""
    server = MCPServer(name, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    async def acting(ctx: Context) -> Client:
        try:
            return await client_of(ctx)
        except CallboardError as error:  # the credential was revoked since the request began
            raise ToolError(f"{error.code}: {error.message}") from None

    @server.tool()
    async def send_message(
        to: Annotated[str, Field(description="name, name@machine, name@machine#pid, or #channel")],
        message: str,
        ctx: Context,
        subject: str | None = None,
        reply_to: Annotated[str | None, Field(description="id of the message this answers")] = None,
        require_live: Annotated[bool, Field(description="fail unless a live session can read it now")] = False,
        urgent: Annotated[bool, Field(description="may interrupt a busy agent between tool calls")] = False,
        as_task: Annotated[
            bool,
            Field(
                description="ask it as a task (one agent): it answers with a state and files; follow with list_tasks"
            ),
        ] = False,
        handoff: Annotated[
            bool,
            Field(description="hand your work to this agent: message is your summary; your repository's diff goes too"),
        ] = False,
    ) -> Annotated[CallToolResult, Sent]:
        """Send to an agent or a #channel; as_task delegates work; handoff hands it over."""
        client = await acting(ctx)
        if as_task or handoff:
            if reply_to is not None or require_live or urgent or (as_task and handoff) or (handoff and subject):
                raise ToolError(
                    "bad_request: as_task takes to, message and subject; handoff takes to and message (your "
                    "summary). Send other mail without them."
                )
            if handoff:
                return await run(lambda: _hand_off(client, to, message, packet_of))
            return await run(lambda: _delegate(client, to, message, subject))
        return await run(lambda: _send(client, to, message, subject, reply_to, require_live, urgent))

    @server.tool()
    async def read_messages(
        ctx: Context,
        wait_seconds: Annotated[float, Field(description="block up to this long until mail arrives")] = 0.0,
        limit: int = DEFAULT_READ_LIMIT,
    ) -> Annotated[CallToolResult, Inbox]:
        """Take your unread messages (oldest first); they are marked read."""
        client = await acting(ctx)
        return await (call_in_thread if wait_seconds > 0 else run)(lambda: _read(client, wait_seconds, limit))

    @server.tool()
    async def list_agents(
        ctx: Context,
        search: Annotated[str | None, Field(description="only names or descriptions containing this")] = None,
        skill: Annotated[str | None, Field(description="only agents offering this skill, e.g. review")] = None,
    ) -> Annotated[CallToolResult, Agents]:
        """Agents of your workspace, whether each is live; skill finds who can do a job."""
        client = await acting(ctx)
        return await run(lambda: _agents(client, search, skill))

    @server.tool()
    async def list_channels(ctx: Context) -> Annotated[CallToolResult, Channels]:
        """The #channels of your workspace: members, and whether you joined."""
        client = await acting(ctx)
        return await run(lambda: _channels(client))

    @server.tool()
    async def message_status(message_id: str, ctx: Context) -> Annotated[CallToolResult, Status]:
        """Who got a message you sent, and who read it."""
        client = await acting(ctx)
        return await run(lambda: _status(client, message_id))

    @server.tool()
    async def who(
        ctx: Context,
        address: Annotated[
            str | None,
            Field(
                description="an agent address (name, name@machine, name@machine#pid) to check: can it be reached now, or why not"
            ),
        ] = None,
    ) -> Annotated[CallToolResult, Who]:
        """Live sessions per agent; machines up or down; why an address is unreachable."""
        client = await acting(ctx)
        return await run(lambda: _who(client, address))

    add_task_tools(server, acting, run, call_in_thread)
    return server


def _send(
    client: Client,
    to: str,
    message: str,
    subject: str | None,
    reply_to: str | None,
    require_live: bool,
    urgent: bool,
) -> CallToolResult:
    sent = acted(
        lambda: client.send(
            SendRequest(
                to=to, text=message, subject=subject, reply_to=reply_to, require_live=require_live, urgent=urgent
            )
        )
    )
    if sent.inject_problem:
        log.warning("%s", sent.inject_problem)
    recipients = [Recipient(address=r.address, state=r.state, agent=r.agent, note=r.reason) for r in sent.recipients]
    result = Sent(message_id=sent.message_id, thread_id=sent.thread_id, recipients=recipients, unread=unread_of(client))
    lines = [f"sent {sent.message_id} (thread {sent.thread_id})"]
    lines += [f"- {r.address}: {r.state}" + (f" — {r.note}" if r.note else "") for r in recipients]
    lines += [f"- injected into {p.agent}'s Claude Code session {p.pid}" for p in sent.injected]
    return tool_result(result, "\n".join([*lines, unread_line(result.unread)]))


def _delegate(client: Client, to: str, message: str, subject: str | None) -> CallToolResult:
    sent = acted(lambda: client.open_task(TaskRequest(to=to, text=message, subject=subject)))
    follow = f"list_tasks(task_id={sent.task.id!r}, after_generation={sent.task.generation}, wait_seconds=60)"
    return _task_sent(
        client, sent, [f"task {sent.task.id} asked of {sent.task.worker}: {sent.task.state}", f"follow it: {follow}"]
    )


def _hand_off(client: Client, to: str, summary: str, packet_of: PacketOf | None) -> CallToolResult:
    me = acted(client.whoami).agent or ""
    if packet_of is not None:
        packet = packet_of(me, to, summary)
    else:
        packet = Packet(from_agent=me, to_agent=to, created_at=utcnow(), summary=summary)
    sent = acted(lambda: client.open_task(handoff_request(packet)))
    carried = "summary" + (", repository and diff" if packet.repository is not None else "")
    return _task_sent(client, sent, [f"handed over to {sent.task.worker} as task {sent.task.id} ({carried})"])


def _task_sent(client: Client, sent: TaskSent, lines: list[str]) -> CallToolResult:
    """A task opened by send_message (as_task, handoff): what the send did, and the task's id."""
    mail = sent.send
    recipients = [Recipient(address=r.address, state=r.state, agent=r.agent, note=r.reason) for r in mail.recipients]
    result = Sent(
        message_id=mail.message_id,
        thread_id=mail.thread_id,
        recipients=recipients,
        task_id=sent.task.id,
        unread=unread_of(client),
    )
    return tool_result(result, "\n".join([*lines, unread_line(result.unread)]))


def _read(client: Client, wait_seconds: float, limit: int) -> CallToolResult:
    got = acted(lambda: client.read(ReadQuery(limit=limit, wait=wait_seconds)))
    held = [_held(h) for h in got.held]
    result = Inbox(messages=[_mail(item) for item in got.items], unread=got.unread, held=held)
    text = fenced_mail(got.items) if got.items else "no new messages"
    return tool_result(result, "\n\n".join([text, *_held_lines(held), unread_line(got.unread)]))


def _agents(client: Client, search: str | None, skill: str | None = None) -> CallToolResult:
    # The skill filter is the service's (one rule for every face); who() then tells who is live.
    offering = None if skill is None else {a.name for a in acted(lambda: client.list_agents(skill=skill))}
    agents = acted(client.who).agents  # one call: every agent's card, and whether it is live
    if offering is not None:
        agents = [a for a in agents if a.name in offering]
    wanted = (search or "").lower()
    listed = [
        AgentInfo(
            name=a.name,
            description=_shown(a.description),
            skills=[one_line(s) for s in a.skills],
            live=a.live,
            held=len(a.held),
            remote=a.remote,
        )
        for a in agents
        if wanted in a.name.lower() or wanted in (a.description or "").lower()
    ]
    result = Agents(agents=listed, unread=unread_of(client))
    lines = [
        f"- {a.name}{' (live)' if a.live else ''}{f' ({a.held} held by a guard)' if a.held else ''}"
        + (f": {a.description}" if a.description else "")
        + (f" [skills: {', '.join(a.skills)}]" if a.skills else "")
        for a in listed
    ]
    return tool_result(result, "\n".join([*(lines or ["no agents match"]), unread_line(result.unread)]))


def _channels(client: Client) -> CallToolResult:
    channels = [
        ChannelInfo(
            name=c.name,
            description=_shown(c.description),
            members=c.members,
            joined=c.joined,
            invite_only=c.invite_only,
        )
        for c in acted(client.list_channels)
    ]
    result = Channels(channels=channels, unread=unread_of(client))
    lines = [
        f"- #{c.name}: {c.members} member{'' if c.members == 1 else 's'}{', joined' if c.joined else ''}{', invite-only' if c.invite_only else ''}"
        + (f" — {c.description}" if c.description else "")
        for c in channels
    ]
    return tool_result(result, "\n".join([*(lines or ["no channels"]), unread_line(result.unread)]))


def _step(event: DeliveryEvent) -> str:
    """One step of a delivery's history, in one line."""
    word = {"handed": "to", "returned": "from"}.get(event.event, "in")
    where = f" {word} {one_line(event.session)}" if event.session else ""
    how = f" by {event.via}" if event.via else ""
    why = f" ({one_line(event.detail)})" if event.detail else ""
    return f"{event.at.isoformat(timespec='seconds').replace('+00:00', 'Z')} {event.event}{where}{how}{why}"


def _status(client: Client, message_id: str) -> CallToolResult:
    status = acted(lambda: client.message_status(message_id))
    recipients = [
        Delivery(
            address=r.address,
            agent=r.agent,
            state=str(getattr(r.state, "value", r.state)),
            handed_to=r.handed_to,
            held_until=r.held.until if r.held and r.state == "held" else None,
            held_reason=f"{r.held.reason}: {r.held.why}" if r.held and r.state == "held" else None,
            delivered_at=r.delivered_at,
            handed_at=r.handed_at,
            surfaced_at=r.surfaced_at,
            read_at=r.read_at,
            acked_at=r.acked_at,
            reachable=r.reach.state if r.reach else None,
            why=one_line(r.reach.reason) if r.reach else None,
            history=[_step(e) for e in r.history],
        )
        for r in status.recipients
    ]
    read_by = [r.agent for r in recipients if r.agent and r.read_at is not None]
    result = Status(
        message_id=status.message_id,
        subject=_shown(status.subject),
        thread_id=status.thread_id,
        sent_at=status.created_at,
        read_by=read_by,
        recipients=recipients,
        unread=unread_of(client),
    )
    lines = [f"{status.message_id}: read by {', '.join(read_by) or 'nobody yet'}"]
    lines += [
        f"- {r.address}: {r.state}"
        + (f" to {r.handed_to}, waiting for its turn" if r.handed_to else "")
        + (f" until {r.held_until:%H:%M:%S}Z — {r.held_reason}" if r.held_until else "")
        + (f" ({r.why})" if r.why and r.reachable != "live" else "")
        + (f"; history: {'; '.join(r.history)}" if r.history else "")
        for r in recipients
    ]
    return tool_result(result, "\n".join([*lines, unread_line(result.unread)]))


def _who(client: Client, address: str | None = None) -> CallToolResult:
    report = acted(client.who)
    found = acted(lambda: client.reach(address)) if address else None
    if found is not None:
        found = found.model_copy(update={"reason": one_line(found.reason)})
    result = Who(
        machines=[MachineInfo(name=m.name, up=m.up, last_seen=m.last_seen) for m in report.machines],
        agents=[
            PresenceInfo(
                name=a.name,
                live=a.live,
                sessions=[s.address for s in a.sessions if s.live],
                held=[_held(h) for h in a.held],
            )
            for a in report.agents
        ],
        liveness_seconds=report.liveness_seconds,
        unread=unread_of(client),
        reach=found,
    )
    lines = [] if found is None else [f"{found.address}: {found.state.replace('_', ' ')} — {found.reason}"]
    lines += [
        f"machine {m.name}: {'up' if m.up else 'down'} (last seen {m.last_seen:%Y-%m-%d %H:%M:%S}Z)"
        for m in result.machines
    ]
    lines += [f"- {a.name}: {', '.join(a.sessions) if a.sessions else 'no live session'}" for a in result.agents]
    lines += [line for a in result.agents for line in _held_lines(a.held)]
    return tool_result(result, "\n".join([*lines, unread_line(result.unread)]))


# --- pieces the tools share -----------------------------------------------------------------------


def _shown(text: str | None) -> str | None:
    """A field another agent wrote, as one line (``fence.one_line``): it cannot forge a header."""
    return None if text is None else one_line(text)


def _held(held: HeldMail) -> HeldInfo:
    return HeldInfo(
        message_id=held.message_id,
        sender=held.sender,
        recipient=held.recipient,
        reason=held.reason,
        until=held.until,
        why=one_line(held.why),
    )


def _held_lines(held: list[HeldInfo]) -> list[str]:
    return [f"held: {h.message_id} from {h.sender} to {h.recipient} until {h.until:%H:%M:%S}Z — {h.why}" for h in held]


def _mail(item: MailItem) -> Mail:
    """A delivered message for the structured result. Clients show a model that rather than the
    text (Claude Code and Codex do): the sender's words are fenced there too, never a bare field."""
    message = item.message
    return Mail(
        id=message.id,
        sender=message.sender,
        sender_session=message.sender_session,
        sender_address=message.sender_address,
        sender_terminal=_shown(message.sender_terminal),
        to=message.recipients,
        channel=message.channel,
        thread_id=message.thread_id,
        reply_to=message.reply_to,
        sent_at=message.created_at,
        message=fenced_words(message),
    )
