"""What an agent CLI tells a hook on stdin, read the same way for every CLI.

Claude Code, Codex and Gemini CLI send snake_case fields (``session_id``, ``cwd``,
``stop_hook_active``); Copilot CLI sends camelCase (``sessionId``) for its camelCase events and
snake_case for its PascalCase ones. Both spellings are read for every client.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from callboard.errors import BadRequest

MAX_INPUT_BYTES = 4 * 1024 * 1024  # a hook's input is a few hundred bytes; a transcript is never inlined


@dataclass(frozen=True, slots=True)
class HookInput:
    session_id: str | None  # the agent CLI's own id for its session (conversation)
    cwd: Path  # the session's working folder: the identity rule names the agent from it
    stop_hook_active: bool  # this stop follows one a stop hook blocked
    transcript_path: Path | None = None  # the session's transcript (Claude Code, Codex, Gemini)


def parse(raw: bytes) -> HookInput:
    """The fields a hook needs from its stdin; BadRequest when it is not a JSON object."""
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadRequest(f"the hook input on stdin is not JSON ({error}); an agent CLI sends a JSON object.") from None
    if not isinstance(data, dict):
        raise BadRequest("the hook input on stdin is not a JSON object; an agent CLI sends one.")
    session_id = _first(data, "session_id", "sessionId")
    cwd = _first(data, "cwd")
    active = _first(data, "stop_hook_active", "stopHookActive")
    transcript = _first(data, "transcript_path", "transcriptPath")
    return HookInput(
        session_id=str(session_id) if isinstance(session_id, str | int) and str(session_id) else None,
        cwd=Path(cwd) if isinstance(cwd, str) and cwd else Path(os.getcwd()),
        stop_hook_active=active is True,
        transcript_path=Path(transcript) if isinstance(transcript, str) and transcript else None,
    )


def read_stdin(stdin: TextIO) -> bytes:
    """The hook's input: all of stdin (an agent CLI writes it and closes the pipe)."""
    buffer = getattr(stdin, "buffer", None)
    if buffer is None or stdin.isatty():
        raise BadRequest("no hook input on stdin; an agent CLI runs this command and passes its hook JSON.")
    raw = buffer.read(MAX_INPUT_BYTES + 1)
    if len(raw) > MAX_INPUT_BYTES:
        raise BadRequest(f"the hook input on stdin is over {MAX_INPUT_BYTES // (1024 * 1024)} MB.")
    return raw


def _first(data: dict, *keys: str) -> object:
    for key in keys:
        if key in data:
            return data[key]
    return None
