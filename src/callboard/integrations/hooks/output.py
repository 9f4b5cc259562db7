"""What each agent CLI reads back from a hook on stdout (reference: coding-clis.md A2, B, C, E).

- Context: on the events it reads context back from (``agent_clis``' ``context_events``), a
  CLI takes ``hookSpecificOutput.additionalContext`` named with its own event name, or (Copilot
  CLI) a top-level ``additionalContext``.
- Keep going: all four take ``{"decision": "block", "reason": …}`` from their stop hook
  (Stop / Stop / agentStop / AfterAgent) and give the reason to the model as its next input.
"""

from __future__ import annotations

from typing import Any

from callboard.integrations.agent_clis import BY_NAME


def takes_context(client: str, event: str) -> bool:
    """Whether ``client`` reads context back from this event's hook (else: surface nothing)."""
    return event in BY_NAME[client].context_events


def context(client: str, event: str, text: str) -> dict[str, Any]:
    """The output that adds ``text`` to the model's context."""
    cli = BY_NAME[client]
    if cli.context_at_top:
        return {"additionalContext": text}
    return {"hookSpecificOutput": {"hookEventName": cli.hook_events[event], "additionalContext": text}}


def block(reason: str) -> dict[str, Any]:
    """The stop hook's output that keeps the agent going with ``reason`` as its next input."""
    return {"decision": "block", "reason": reason}
