"""A stand-in for an agent CLI that runs ``callboard hook wake`` (the waiter) as its child, as
Claude Code runs an asyncRewake hook; and whether the hooks registered its session."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

from tests.support.waiting import scaled

if TYPE_CHECKING:
    from tests.integrations.hooks.conftest import Hooks

WAKE_TIMEOUT = scaled(60.0)  # for a waiter to start, arm and fire: seconds at most, even on a loaded machine

# Stands for the agent CLI: `python -c AGENT_CLI [its own args…] -- <waiter argv>` starts the
# waiter as its child with $HOOK_STDIN on its stdin, prints the waiter's pid and exit status
# (when it ends), then idles.
AGENT_CLI = """
import os, subprocess, sys, time
argv = sys.argv[sys.argv.index("--") + 1:]
child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
child.stdin.write(os.environ["HOOK_STDIN"].encode())
child.stdin.close()
print(child.pid, flush=True)
print(child.wait(), flush=True)
time.sleep(300)
"""


def registered(hooks: Hooks, pid: int) -> bool:
    return any(s["pid"] == pid and s["live"] for s in hooks.sessions())


def start_agent_cli(hooks: Hooks, python: str = sys.executable, *args: str) -> subprocess.Popen[str]:
    argv = [*hooks.cli.argv("hook", "wake"), "--client", "claude"]
    return subprocess.Popen(
        [python, "-c", AGENT_CLI, *args, "--", *argv],
        env=hooks.cli.env(env={"HOOK_STDIN": hooks.stdin("session-start")}),
        cwd=hooks.cli.workdir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
