"""What each agent CLI reads back from a hook on stdout (reference: coding-clis.md A2, B, C, E).

- Context: Claude Code, Codex and Gemini CLI take ``hookSpecificOutput.additionalContext``,
  named with their own event name; Copilot CLI takes a top-level ``additionalContext`` on
  ``sessionStart`` and ``userPromptSubmitted`` and reads nothing back from ``postToolUse``
  command hooks (so urgent mail waits there for the next prompt or stop).
- Keep going: all four take ``{"decision": "block", "reason": …}`` from their stop hook
  (Stop / Stop / agentStop / AfterAgent) and give the reason to the model as its next input.
"""

from __future__ import annotations

from typing import Any

# The hook events that can put text into context, by client: the event name it expects back.
_CONTEXT_EVENTS: dict[str, dict[str, str]] = {
    "claude": {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "post-tool": "PostToolUse"},
    "codex": {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "post-tool": "PostToolUse"},
    "gemini": {"session-start": "SessionStart", "prompt": "BeforeAgent", "post-tool": "AfterTool"},
    "copilot": {"session-start": "sessionStart", "prompt": "userPromptSubmitted"},
}


def takes_context(client: str, event: str) -> bool:
    """Whether ``client`` reads context back from this event's hook (else: surface nothing)."""
    return event in _CONTEXT_EVENTS[client]


def context(client: str, event: str, text: str) -> dict[str, Any]:
    """The output that adds ``text`` to the model's context."""
    if client == "copilot":
        return {"additionalContext": text}
    return {"hookSpecificOutput": {"hookEventName": _CONTEXT_EVENTS[client][event], "additionalContext": text}}


def block(reason: str) -> dict[str, Any]:
    """The stop hook's output that keeps the agent going with ``reason`` as its next input."""
    return {"decision": "block", "reason": reason}
