"""The environment a runner gives its CLI: who it acts as, and the marker that a runner feeds it.

Kept free of heavy imports: ``callboard hook`` and ``callboard mcp`` read the marker on
every call.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

RUNNER_ENV = "CALLBOARD_RUNNER"  # set (to the agent) in a runner's CLI: hooks and mcp stand down
RESUME_ENV = "CALLBOARD_RUNNER_RESUME"  # a respawned generic program's own session id
# What `callboard mcp` needs besides the identity to reach the same mailbox (no token: a
# CLI may show its MCP config; a machine's login is kept under the home).
_PASSED_ON = ("CALLBOARD_HOME", "CALLBOARD_WORKSPACE", "CALLBOARD_DB", "CALLBOARD_HUB", "CALLBOARD_CA_CERT")


def under_runner(env: Mapping[str, str] = os.environ) -> bool:
    """Whether this process runs inside a runner's CLI."""
    return bool(env.get(RUNNER_ENV, "").strip())


def cli_env(base: Mapping[str, str], agent: str, session_id: str) -> dict[str, str]:
    """The CLI's whole environment: the runner's, acting as ``agent`` in the runner's session."""
    env = dict(base)
    env.update({"CALLBOARD_AGENT": agent, "CALLBOARD_SESSION": session_id, RUNNER_ENV: agent})
    env.pop(RESUME_ENV, None)
    return env


def mcp_server(env: Mapping[str, str]) -> dict[str, object]:
    """How to start `callboard mcp` as the agent of the CLI environment ``env``."""
    passed = {"CALLBOARD_AGENT", "CALLBOARD_SESSION", RUNNER_ENV, *_PASSED_ON}
    return {
        "command": sys.executable,
        "args": ["-m", "callboard", "mcp"],
        "env": {name: env[name] for name in sorted(passed) if env.get(name)},
    }
