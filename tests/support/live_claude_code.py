"""A real Claude Code session for the end-to-end tests, started headless (stream-json in and
out, stdin left open as a long-lived session's is) against a mock model: with alice's
``callboard mcp`` as its server (``start_session``), or with no messaging socket and the
installed waiter as the only way in (``start_waiting_session``); what its first event says,
and which waiters run."""

from __future__ import annotations

import json
import os
from pathlib import Path

from callboard.integrations.claude_code import sessions as claude_sessions
from tests.agent_clis_e2e.conftest import LiveCli, Machine, claude_code_env
from tests.support.mock_model import MockModel

SERVER = "callboard"  # the name Claude Code knows alice's MCP server by
HEADLESS = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]


def start_session(
    claude: Path,
    machine: Machine,
    model: MockModel,
    tmp: Path,
    extra: dict[str, str] | None = None,
    *,
    server_env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> LiveCli:
    """Claude Code headless with alice's server (``server_env`` added to its environment: a hub to
    log in to, say), after its first turn: idle, stdin open."""
    server = machine.mcp_server("alice")
    server["env"] = {**server["env"], **(server_env or {})}  # type: ignore[dict-item]
    config = {"mcpServers": {SERVER: {"type": "stdio", **server}}}
    session = machine.start(
        [
            claude,
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--mcp-config",
            json.dumps(config),
            "--strict-mcp-config",
            *args,
        ],
        claude_code_env(machine, model, {"TMPDIR": str(tmp), **(extra or {})}),
    )
    session.say("Hello. Nothing to do yet.")
    session.wait_for(lambda: len(session.results()) == 1, "the first turn to finish")
    return session


def init_event(session: LiveCli) -> dict:
    return next(e for e in session.events() if e.get("type") == "system" and e.get("subtype") == "init")


def waiters(machine: Machine) -> set[int]:
    """The running ``callboard hook wake`` hooks of this machine's sessions, by process group:
    Claude Code runs each hook (its shell, and our process under it) in a group of its own."""
    groups = set()
    for pid in machine.processes("callboard hook wake"):
        try:
            groups.add(os.getpgid(pid))
        except ProcessLookupError:
            continue
    return groups


def registry_says_idle(session_pid: int, env: dict[str, str]) -> bool:
    entry = claude_sessions.session_of(session_pid, env)
    return entry is not None and entry.status == "idle"


def start_waiting_session(
    claude: Path, machine: Machine, model: MockModel, tmp: Path, args: tuple[str, ...] = ()
) -> tuple[LiveCli, int]:
    """Claude Code headless, with no messaging socket, in a project where the real ``callboard
    install claude --scope project`` ran; after its first turn: idle, its waiter running. The
    session and its waiter's process group."""
    machine.install("claude")  # hooks, the waiter, .mcp.json, permissions
    settings = json.loads((machine.workdir / ".claude" / "settings.json").read_text())
    assert [h["asyncRewake"] for g in settings["hooks"]["Stop"] for h in g["hooks"] if "asyncRewake" in h] == [True]

    extra = {"TMPDIR": str(tmp), "CLAUDE_CODE_HARBOR_KITE": "0", **machine.agent_env("alice")}
    # Claude Code's default. With MCP_CONNECTION_NONBLOCKING=false (the harness's, for tool tests)
    # and any MCP server configured, 2.1.332 runs a SessionStart asyncRewake hook in the
    # foreground: the first turn would wait on the waiter.
    extra["MCP_CONNECTION_NONBLOCKING"] = "true"
    env = claude_code_env(machine, model, extra)
    session = machine.start([claude, *HEADLESS, *args], env)
    session.say("Hello. Nothing to do yet.")
    session.wait_for(lambda: len(session.results()) == 1, "the first turn to finish")
    init = init_event(session)
    assert init.get("messaging_socket_path") is None, session.transcript()  # the waiter is the only way in
    assert [s["name"] for s in init["mcp_servers"]] == [SERVER], session.transcript()  # from .mcp.json
    session.wait_for(lambda: registry_says_idle(session.pid, env), "the registry to say idle")
    # One waiter, though SessionStart and Stop each started one (the second exits at once).
    (waiter,) = session.wait_for(lambda: len(w := waiters(machine)) == 1 and w, "the session's one waiter")
    return session, waiter
