"""How every MCP tool answers: a typed result that also reads well as text, the caller's unread
count, and a failure as a tool error a model can act on (the stable code, the sentence, and what
to call next)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from callboard.client.base import Client
from callboard.errors import CallboardError
from callboard.fence import one_line

T = TypeVar("T")

# What to do next, by error code: the model gets the code, the sentence, then this.
NEXT_STEP = {
    "unknown_recipient": "call list_agents for the agents that exist (a message creates none), or who for live sessions.",
    "unknown_agent": "call list_agents for the agents that exist.",
    "no_live_session": "call who to see who is live, or send without require_live to leave it in the mailbox.",
    "not_member": "post only to channels you have joined (list_channels shows them; an invite-only one's creator "
    "or a person adds members), or message the agents directly.",
    "unknown_channel": "call list_channels for the channels that exist.",
    "unknown_message": "reply to an id that read_messages or send_message returned, in a thread you are part of.",
    "forbidden": "this needs a person's token or the channel's creator: ask your user, or message the agent concerned.",
    "has_unread_mail": "let the agent read its mail first, or ask your user whether to delete it anyway (force).",
    "hub_unavailable": "the hub is not answering; try again shortly.",
    "store_unavailable": "the mailbox is busy or unavailable; try again shortly.",
    "unknown_task": "call list_tasks for the tasks you asked or were asked (a task id from read_messages).",
    "task_finished": "the task is over; if more is needed, tell the one who asked with send_message.",
    "bad_task_state": "use working, input-required, completed, failed or rejected.",
    "task_busy": "the task changed meanwhile; call list_tasks with its task_id, then try again.",
}


def tool_result(model: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=model.model_dump(mode="json")
    )


def acted(call: Callable[[], T]) -> T:
    """``call()``, with a mailbox error turned into a tool error the model can act on."""
    try:
        return call()
    except CallboardError as error:
        raise ToolError(explained(error)) from None


def explained(error: CallboardError) -> str:
    step = NEXT_STEP.get(error.code)  # the message may quote what another agent reported (a delivery error)
    return f"{error.code}: {one_line(error.message)}" + (f" Next: {step}" if step else "")


def unread_of(client: Client) -> int:
    """The caller's unread count as the tool's last call left it: no call of its own."""
    return client.last_unread()


def unread_line(unread: int) -> str:
    return f"[{unread} unread message{'s' if unread != 1 else ''}{' — call read_messages' if unread else ''}]"
