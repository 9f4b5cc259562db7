"""A coding CLI's transcript file as the conversation it records, for a hand-off to read.

The CLIs keep their sessions as one JSON record a line, most of them bookkeeping (system
prompts, skill listings, attachments, snapshots) that would fill a bounded excerpt with nothing
a reader needs. This keeps what was said: the person's and the mail's words, the model's
answers, and the tools it called with their results, each cut short, in order. Known shapes:
Claude Code's (``type`` user/assistant with a ``message``) and Codex's rollout
(``response_item`` payloads). A file of another shape gives None (its end is then excerpted as
it is). Only the file's last ``READ_BYTES`` are read: a transcript grows without bound.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

READ_BYTES = 4 * 1024 * 1024  # the end of the file read, at most
ENTRY_CHARS = 2000  # one entry (a message, a tool call, a result) at most, cut in its middle


def conversation_of(path: Path) -> str | None:
    """The conversation the transcript at ``path`` records (its end), one entry a paragraph; None
    when it cannot be read or holds no record of a known shape."""
    try:
        with path.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - READ_BYTES))
            data = file.read()
    except OSError:
        return None
    lines = data.split(b"\n")
    if size > READ_BYTES:
        lines = lines[1:]  # the first line read is cut: not a record
    entries: list[str] = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a half-written last line, or not JSON at all
        if isinstance(record, dict):
            entries.extend(_cut(entry) for entry in _entries(record))
    return "\n\n".join(entries) if entries else None


def _entries(record: dict[str, Any]) -> Iterator[str]:
    kind = record.get("type")
    if kind in ("user", "assistant") and isinstance(record.get("message"), dict):
        yield from _claude_message(kind, record["message"])
    elif kind == "response_item" and isinstance(record.get("payload"), dict):
        yield from _codex_item(record["payload"])


def _claude_message(role: str, message: dict[str, Any]) -> Iterator[str]:
    content = message.get("content")
    if isinstance(content, str):
        yield f"{role}: {content}"
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            yield f"{role}: {block['text']}"
        elif kind == "tool_use":
            yield f"tool call {block.get('name')}: {_compact(block.get('input'))}"
        elif kind == "tool_result":
            yield f"tool result: {_result_text(block.get('content'))}"


def _codex_item(item: dict[str, Any]) -> Iterator[str]:
    kind = item.get("type")
    if kind == "message" and item.get("role") in ("user", "assistant"):
        texts = [part.get("text") for part in item.get("content") or [] if isinstance(part, dict)]
        text = "\n".join(t for t in texts if isinstance(t, str))
        if text:
            yield f"{item['role']}: {text}"
    elif kind in ("function_call", "custom_tool_call"):
        yield f"tool call {item.get('name')}: {item.get('arguments') or item.get('input') or ''}"
    elif kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        yield f"tool result: {output if isinstance(output, str) else _compact(output)}"


def _result_text(content: object) -> str:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else _compact(content)


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _cut(entry: str) -> str:
    """An entry past ``ENTRY_CHARS`` keeps its start and its end, and says what was left out."""
    if len(entry) <= ENTRY_CHARS:
        return entry
    half = ENTRY_CHARS // 2
    return f"{entry[:half]} […{len(entry) - 2 * half} characters left out…] {entry[-half:]}"
