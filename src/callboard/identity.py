"""Who am I: the agent name, workspace and machine that a process acts as.

The agent name, first match wins:
  1. ``CALLBOARD_AGENT``;
  2. a ``.callboard-agent`` (or ``.agent-id``) file in this folder or a parent, up to the git root;
  3. the git root's folder name, turned into a valid name;
  4. the user default (``agent`` in the config file);
  5. otherwise a clear ``no_identity`` error.

Pure: reads environment, files and (through ``procs``) /proc only; imports only the other pure
modules.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from callboard.address import NAME_MAX, parse_machine, parse_name
from callboard.errors import BadName, NoIdentity
from callboard.procs import parent_of, process_lineage, process_stdin

AGENT_FILES = (".callboard-agent", ".agent-id")
DEFAULT_WORKSPACE = "default"


@dataclass(frozen=True, slots=True)
class Identity:
    name: str
    source: str


def find_git_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _agent_file(start: Path, stop: Path | None) -> Path | None:
    for folder in (start, *start.parents):
        for filename in AGENT_FILES:
            candidate = folder / filename
            if candidate.is_file():
                return candidate
        if stop is not None and folder == stop:
            return None
    return None


def slug(text: str) -> str | None:
    """Turn a folder name into a valid agent name ('My Project' -> 'my-project'), or None."""
    lowered = re.sub(r"[^a-z0-9._-]+", "-", text.lower())
    trimmed = re.sub(r"^[^a-z0-9]+|[^a-z0-9]+$", "", lowered[:NAME_MAX])
    return trimmed or None


def resolve_agent(env: Mapping[str, str], cwd: Path, user_default: str | None = None) -> Identity:
    """Apply the identity rule; raise NoIdentity or BadName with the source named."""
    if raw := env.get("CALLBOARD_AGENT", "").strip():
        return Identity(_valid(raw, "CALLBOARD_AGENT"), "env:CALLBOARD_AGENT")
    git_root = find_git_root(cwd)
    if agent_file := _agent_file(cwd, git_root):
        lines = [line.strip() for line in agent_file.read_text(errors="replace").splitlines()]
        first = next((line for line in lines if line and not line.startswith("#")), "")
        return Identity(_valid(first, str(agent_file)), f"file:{agent_file}")
    if git_root is not None and (name := slug(git_root.name)):
        return Identity(name, f"git:{git_root}")
    if user_default:
        return Identity(_valid(user_default, "the config file's 'agent'"), "config:agent")
    raise NoIdentity(
        "cannot tell which agent you are: set CALLBOARD_AGENT=name, put the name in a "
        ".callboard-agent file in the project, or run inside a git repository."
    )


def _valid(raw: str, source: str) -> str:
    try:
        return parse_name(raw, f"agent name from {source}")
    except BadName as error:
        raise BadName(error.message, source=source) from None


def machine_name(env: Mapping[str, str]) -> str:
    """This host's name as sessions report it (``CALLBOARD_MACHINE`` overrides)."""
    raw = env.get("CALLBOARD_MACHINE", "").strip() or socket.gethostname()
    try:
        return parse_machine(raw)
    except BadName:
        return slug(raw) or "localhost"


# The process a command acts for. Normally this one; a command the warm server runs for a thin
# client (cli/warm_server.py) acts for the client's process: its lineage finds the agent CLI's
# session, its life bounds a session a waiting read registers.
_acting_pid: int | None = None


def acting_pid() -> int:
    """The process this command acts for (see ``act_for``)."""
    return _acting_pid if _acting_pid is not None else os.getpid()


def acting_parent() -> int:
    """The parent of the process this command acts for: the shell or agent CLI that ran it."""
    if _acting_pid is None:
        return os.getppid()
    try:
        return parent_of(_acting_pid)
    except (OSError, ValueError, IndexError):
        return os.getppid()


def act_for(pid: int) -> None:
    """Make ``pid`` the process this command acts for (the warm server's forked command)."""
    global _acting_pid
    _acting_pid = pid


# Terminals and multiplexers that name their window or pane in the environment, most specific first.
_TERMINAL_VARIABLES = (
    ("TMUX_PANE", "tmux"),
    ("ZELLIJ_PANE_ID", "zellij"),
    ("WEZTERM_PANE", "wezterm"),
    ("KITTY_WINDOW_ID", "kitty"),
    ("ITERM_SESSION_ID", "iterm"),
    ("TERM_SESSION_ID", "terminal"),
    ("WT_SESSION", "windows-terminal"),
    ("STY", "screen"),
    ("WINDOWID", "x11"),
)


def terminal_of(env: Mapping[str, str], pid: int | None = None) -> str | None:
    """The terminal window or pane a session runs in, where it can be told: a multiplexer's or
    terminal's pane id from the environment, else the controlling tty of ``pid`` (its stdin)."""
    for variable, kind in _TERMINAL_VARIABLES:
        if value := env.get(variable, "").strip():
            return f"{kind}:{value}"[:200]
    tty = process_stdin(pid if pid is not None else acting_pid())
    if tty is None:
        return None
    return f"tty:{tty}" if tty.startswith("/dev/pts/") or tty.startswith("/dev/tty") else None


@dataclass(frozen=True, slots=True)
class SessionHint:
    """Which session a client's calls act in: ``CALLBOARD_SESSION`` (an id) when set, else
    the calling process's lineage, which finds the session of the agent CLI that ran it."""

    session_id: str | None = None
    lineage: tuple[tuple[int, int | None], ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SessionHint:
        if session_id := env.get("CALLBOARD_SESSION", "").strip():
            return cls(session_id=session_id)
        return cls(lineage=tuple(process_lineage(acting_pid())))
