"""The JSON each agent CLI writes to a hook's stdin, per event, as observed or documented
(/work/shared/reference/coding-clis.md: A2 Claude Code, B Codex, C Copilot CLI, E Gemini CLI),
and the event names each reads back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CLIENTS = ("claude", "codex", "copilot", "gemini")
CONTEXT_EVENTS = ("session-start", "prompt", "post-tool")

# hookSpecificOutput.hookEventName each client expects back, per context event.
EVENT_NAMES = {
    "claude": {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "post-tool": "PostToolUse"},
    "codex": {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "post-tool": "PostToolUse"},
    "gemini": {"session-start": "SessionStart", "prompt": "BeforeAgent", "post-tool": "AfterTool"},
}


def stdin_for(client: str, event: str, cwd: Path, session_id: str, *, stop_hook_active: bool = False) -> dict[str, Any]:
    return {"claude": _claude, "codex": _codex, "copilot": _copilot, "gemini": _gemini}[client](
        event, str(cwd), session_id, stop_hook_active
    )


def _claude(event: str, cwd: str, sid: str, active: bool) -> dict[str, Any]:
    base = {"session_id": sid, "transcript_path": f"/home/u/.claude/projects/p/{sid}.jsonl", "cwd": cwd}
    if event == "session-start":
        return {**base, "hook_event_name": "SessionStart", "source": "startup", "model": "claude-opus-4-5"}
    base["permission_mode"] = "default"
    if event == "prompt":
        return {**base, "hook_event_name": "UserPromptSubmit", "prompt": "fix the tests", "prompt_id": "p-1"}
    if event == "post-tool":
        return {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls", "description": "list"},
            "tool_response": {"stdout": "a\nb", "stderr": "", "interrupted": False},
            "tool_use_id": "toolu_01",
            "duration_ms": 12,
        }
    return {
        **base,
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        "last_assistant_message": "Done.",
        "background_tasks": [],
        "session_crons": [],
    }


def _codex(event: str, cwd: str, sid: str, active: bool) -> dict[str, Any]:
    base = {
        "session_id": sid,
        "turn_id": "turn-1",
        "transcript_path": f"/home/u/.codex/sessions/2026/11/30/rollout-{sid}.jsonl",
        "cwd": cwd,
        "model": "gpt-5-codex",
        "permission_mode": "default",
    }
    if event == "session-start":
        return {**base, "hook_event_name": "SessionStart", "source": "startup"}
    if event == "prompt":
        return {**base, "hook_event_name": "UserPromptSubmit", "prompt": "fix the tests"}
    if event == "post-tool":
        return {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_response": "a\nb",
            "tool_use_id": "call_1",
        }
    return {**base, "hook_event_name": "Stop", "stop_hook_active": active, "last_assistant_message": "Done."}


def _copilot(event: str, cwd: str, sid: str, active: bool) -> dict[str, Any]:
    base = {"sessionId": sid, "timestamp": 1796018339519, "cwd": cwd}
    if event == "session-start":
        return {**base, "source": "new", "initialPrompt": "fix the tests"}
    if event == "prompt":
        return {**base, "prompt": "fix the tests"}
    if event == "post-tool":
        return {
            **base,
            "toolName": "bash",
            "toolArgs": {"command": "ls"},
            "toolResult": {"resultType": "success", "textResultForLlm": "a\nb"},
        }
    return {
        **base,
        "transcriptPath": f"/home/u/.copilot/session-state/{sid}/events.jsonl",
        "stopReason": "end_turn",
        "stop_hook_active": active,
    }


def _gemini(event: str, cwd: str, sid: str, active: bool) -> dict[str, Any]:
    base = {
        "session_id": sid,
        "transcript_path": f"/home/u/.gemini/tmp/p/chats/session-{sid[:8]}.json",
        "cwd": cwd,
        "timestamp": "2026-11-30T06:00:00.000Z",
    }
    if event == "session-start":
        return {**base, "hook_event_name": "SessionStart", "source": "startup"}
    if event == "prompt":
        return {**base, "hook_event_name": "BeforeAgent", "prompt": "fix the tests"}
    if event == "post-tool":
        return {
            **base,
            "hook_event_name": "AfterTool",
            "tool_name": "run_shell_command",
            "tool_input": {"command": "ls"},
            "tool_response": {"llmContent": "a\nb", "returnDisplay": "a\nb"},
        }
    return {
        **base,
        "hook_event_name": "AfterAgent",
        "prompt": "fix the tests",
        "prompt_response": "Done.",
        "stop_hook_active": active,
    }
