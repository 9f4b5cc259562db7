"""Whether a Claude Code session can be woken for its mail: the rule its waiter and its
session-start hook share.

Every Claude Code session can be woken but a one-shot ``claude -p "prompt"`` (text input): an
interactive one and a ``-p --input-format stream-json`` one wait for their next input, and a
wake (the waiter's exit 2, a frame in the session's messaging socket) starts a turn in them. A
one-shot run has no idle moment to wake, and runs a SessionStart ``asyncRewake`` hook in the
foreground, waiting on it for ever (claude-code-messaging-socket.md §6).
"""

from __future__ import annotations

from callboard.integrations.agent_clis import CLAUDE_CODE, runtime_of
from callboard.procs import process_command_line


def wakeable(pid: int) -> bool:
    """Whether the agent CLI ``pid`` can be woken: not a Claude Code one-shot print run with text
    input (another agent CLI, or one not recognised, is not refused here)."""
    if runtime_of(pid) != CLAUDE_CODE.runtime:
        return True
    args = process_command_line(pid)
    if args is None:
        return True
    if not any(a in ("-p", "--print") for a in args):
        return True
    return "--input-format=stream-json" in args or any(
        a == "--input-format" and b == "stream-json" for a, b in zip(args, args[1:], strict=False)
    )


def woken_for_mail(pid: int) -> bool:
    """Whether ``pid`` is a Claude Code session that mail waiting in its mailbox wakes: its
    waiter, or its own ``callboard mcp`` through its messaging socket, starts a turn that carries
    the mail (the prompt hook or the socket frame puts it before the model)."""
    return runtime_of(pid) == CLAUDE_CODE.runtime and wakeable(pid)
