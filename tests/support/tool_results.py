"""What a test reads from an MCP tool call's result: the tool set's names, the text of a result,
its structured content when it succeeded (``ok``), its text when it failed with a code
(``failed``), and the sender's words inside a message's fence."""

from __future__ import annotations

from mcp.types import CallToolResult

TOOLS = {
    "send_message",
    "read_messages",
    "list_agents",
    "list_channels",
    "message_status",
    "who",
    "update_task",
    "list_tasks",
}


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def words(mail: dict) -> str:
    """The sender's words inside a structured message's fence (its subject line left out)."""
    lines = mail["message"].splitlines()
    assert lines[0].startswith("----- BEGIN MESSAGE ") and lines[-1].startswith("----- END MESSAGE "), lines
    inside = lines[1:-1]
    return "\n".join(inside[1:] if inside and inside[0].startswith("subject: ") else inside)


def ok(result: CallToolResult) -> dict:
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content


def failed(result: CallToolResult, code: str) -> str:
    assert result.is_error, result
    text = text_of(result)
    assert f"{code}: " in text, text
    return text
