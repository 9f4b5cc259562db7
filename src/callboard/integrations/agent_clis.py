"""The coding CLIs Callboard knows, in one table: every other place reads its facts here.

Each row says what the CLI is called (by our commands and by people), the runtime its sessions
record, its executable's names (found on PATH by a runner's adapter, and how a session's runtime
is told from its command line) and the variable that says where it is when not on PATH,
its hook events (ours and its own names for them), which of them read text back into the
model's context and in what shape, and how an MCP server is registered with it.
Reference: shared/reference/coding-clis.md.

Only this module (and the folders of ``integrations/``, and the runner's adapters, one module
per CLI named after its row) knows a particular CLI: the client and the core take the runtime as
a plain string handed in by the face that starts a session. A new CLI is one row here and one
adapter module (``runner/adapters/<name>.py``).

Light: the standard library and ``procs`` only (the hooks load it on every prompt).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from callboard.identity import acting_parent
from callboard.procs import parent_of, process_command_line, process_name

UNKNOWN_RUNTIME = "mcp-client"  # a session whose agent CLI's command line names none of these

TOKEN_REF = "${CALLBOARD_TOKEN}"  # how most CLIs expand the hub token in an MCP entry


@dataclass(frozen=True, slots=True)
class McpRegistration:
    """How an MCP server is registered with a CLI."""

    kind: Literal["command", "file"]  # its own `<cli> mcp add` command, or an entry merged into a file
    stdio_type: str | None = None  # the "type" its JSON entry for a stdio server carries (None: none)
    token_ref: str = TOKEN_REF  # how its config names $CALLBOARD_TOKEN (expanded when it loads the entry)


@dataclass(frozen=True, slots=True)
class AgentCli:
    name: str  # as our commands name it: `install NAME`, `mcp-config NAME`, `hook … --client NAME`
    title: str  # as people name it
    runtime: str  # what its sessions record as their runtime
    # Its executable's names: looked up on PATH in this order (a runner's adapter), and how its
    # process's command line shows it (a session's runtime).
    executables: tuple[str, ...]
    bin_variable: str  # where its executable is when not on PATH (a runner's adapter reads it)
    mcp: McpRegistration
    # Our hook events → its own names for them, in the order they are installed; empty: no hooks.
    hook_events: Mapping[str, str] = field(default_factory=dict)
    # Those of our hook events whose output it reads back into the model's context.
    context_events: frozenset[str] = frozenset()
    # Context goes back in a top-level ``additionalContext`` (else in ``hookSpecificOutput``).
    context_at_top: bool = False

    @property
    def has_hooks(self) -> bool:
        return bool(self.hook_events)


CLAUDE_CODE = AgentCli(
    name="claude",
    title="Claude Code",
    runtime="claude-code",
    executables=("claude",),
    bin_variable="CALLBOARD_CLAUDE_BIN",
    mcp=McpRegistration("command", stdio_type="stdio"),
    hook_events={
        "session-start": "SessionStart",
        "prompt": "UserPromptSubmit",
        "post-tool": "PostToolUse",
        "stop": "Stop",
    },
    context_events=frozenset({"session-start", "prompt", "post-tool"}),
)
CODEX = AgentCli(
    name="codex",
    title="Codex",
    runtime="codex",
    executables=("codex",),
    bin_variable="CALLBOARD_CODEX_BIN",
    mcp=McpRegistration("file"),
    hook_events={
        "session-start": "SessionStart",
        "prompt": "UserPromptSubmit",
        "post-tool": "PostToolUse",
        "stop": "Stop",
    },
    context_events=frozenset({"session-start", "prompt", "post-tool"}),
)
COPILOT = AgentCli(
    name="copilot",
    title="Copilot CLI",
    runtime="copilot-cli",
    executables=("copilot",),
    bin_variable="CALLBOARD_COPILOT_BIN",
    mcp=McpRegistration("command", stdio_type="local"),
    hook_events={
        "session-start": "sessionStart",
        "prompt": "userPromptSubmitted",
        "post-tool": "postToolUse",
        "stop": "agentStop",
    },
    # It reads nothing back from postToolUse command hooks: urgent mail waits for the next prompt or stop.
    context_events=frozenset({"session-start", "prompt"}),
    context_at_top=True,
)
CURSOR = AgentCli(
    name="cursor",
    title="Cursor",
    runtime="cursor",
    executables=("cursor-agent", "agent"),  # its installer puts both on PATH
    bin_variable="CALLBOARD_CURSOR_BIN",
    mcp=McpRegistration("file", token_ref="${env:CALLBOARD_TOKEN}"),
)
GEMINI = AgentCli(
    name="gemini",
    title="Gemini CLI",
    runtime="gemini-cli",
    executables=("gemini",),
    bin_variable="CALLBOARD_GEMINI_BIN",
    mcp=McpRegistration("command"),
    hook_events={
        "session-start": "SessionStart",
        "prompt": "BeforeAgent",
        "post-tool": "AfterTool",
        "stop": "AfterAgent",
    },
    context_events=frozenset({"session-start", "prompt", "post-tool"}),
)

AGENT_CLIS: tuple[AgentCli, ...] = (CLAUDE_CODE, CODEX, COPILOT, CURSOR, GEMINI)
BY_NAME: Mapping[str, AgentCli] = {cli.name: cli for cli in AGENT_CLIS}
MCP_CLIENTS = tuple(cli.name for cli in AGENT_CLIS)  # every one takes an MCP server
HOOK_CLIENTS = tuple(cli.name for cli in AGENT_CLIS if cli.has_hooks)  # `hook --client` and `install`


# --- which CLI a process is ----------------------------------------------------------------------


def runtime_of(pid: int) -> str:
    """The runtime of the agent CLI running as ``pid``, from its command line (a node script
    names the CLI in an argument); ``UNKNOWN_RUNTIME`` when none is recognised."""
    argv = process_command_line(pid)
    for arg in (argv or [])[:3]:
        name = arg.rsplit("/", 1)[-1]
        for cli in AGENT_CLIS:
            if any(name == known or name.startswith((f"{known}.", f"{known}-")) for known in cli.executables):
                return cli.runtime
    return UNKNOWN_RUNTIME


# What an agent CLI may run a helper through: a hook's command goes through a shell.
_LAUNCHERS = frozenset({"sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "env", "nohup", "timeout"})
_MAX_LAUNCHERS = 8  # a chain longer than this is not a launcher chain: stop looking


def agent_process(pid: int | None = None) -> int:
    """The agent CLI process a helper serves: ``pid`` (default: the parent of the process this
    command acts for), or, when that is a shell or a similar launcher, the nearest ancestor that
    is not one.

    ``callboard mcp`` is the agent CLI's own child; a hook command runs under a shell (or two)
    under it. Without /proc the answer is ``pid`` itself.
    """
    pid = acting_parent() if pid is None else pid
    for _ in range(_MAX_LAUNCHERS):
        try:
            name = process_name(pid)
            parent = parent_of(pid)
        except (OSError, ValueError, IndexError):
            return pid
        if name not in _LAUNCHERS or parent <= 1:
            return pid
        pid = parent
    return pid
