"""``callboard mcp`` registers the agent CLI that started it as a live session of its agent,
and ends that session when it stops serving or when that parent dies (then it exits too).

The "agent CLI" here is a small Python parent process that starts the server as its child,
as Claude Code or Codex does, and keeps the pipes open.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from callboard.integrations.agent_clis import runtime_of
from tests.support.cli_runner import CLI
from tests.support.mcp_sessions import live_sessions, sessions
from tests.support.processes import process_gone
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

DEADLINE = 30.0
# Starts the server as its child, says both pids, then waits: for ever, or (with "close") until
# told on stdin to close the server's stdin and wait for it to exit.
PARENT = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-m", "callboard", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
print(child.pid, flush=True)
sys.stdin.readline()
child.stdin.close()
sys.exit(child.wait(timeout=30))
"""


@pytest.fixture
def machine(tmp_path: Path) -> CLI:
    return CLI(tmp_path)


def start_parent(machine: CLI, **extra: str) -> tuple[subprocess.Popen[str], int]:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT],
        env={**machine.env("alice"), **extra},
        cwd=machine.workdir,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    return parent, int(parent.stdout.readline())


def test_the_parent_is_a_live_session_while_the_server_runs_and_it_ends_when_the_server_stops(machine: CLI):
    parent, server_pid = start_parent(machine)
    try:
        assert wait_until(lambda: live_sessions(machine), timeout=DEADLINE), "no live session appeared"
        (session,) = live_sessions(machine)
        assert (session["pid"], session["agent"]) == (parent.pid, "alice")
        assert parent.stdin is not None
        parent.stdin.write("close\n")
        parent.stdin.flush()
        assert parent.wait(timeout=DEADLINE) == 0  # the server exited on its own when its stdin closed
    finally:
        parent.kill()
    assert live_sessions(machine) == []
    assert [(s.pid, s.ended_at is not None) for s in sessions(machine)] == [(parent.pid, True)]
    assert process_gone(server_pid)


def test_under_a_runner_the_server_registers_no_session_of_its_own(machine: CLI):
    # The runner's session is the agent's (CALLBOARD_RUNNER marks its CLI): the server serves
    # tools and adds none; it got past its start when it exits on its stdin's end.
    parent, _ = start_parent(machine, CALLBOARD_RUNNER="alice")
    try:
        assert parent.stdin is not None
        parent.stdin.write("close\n")
        parent.stdin.flush()
        assert parent.wait(timeout=DEADLINE) == 0
    finally:
        parent.kill()
    assert sessions(machine) == []


def test_when_the_parent_dies_its_session_ends_and_the_server_exits(machine: CLI):
    parent, server_pid = start_parent(machine)
    try:
        assert wait_until(lambda: live_sessions(machine), timeout=DEADLINE), "no live session appeared"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=DEADLINE)
        assert wait_until(lambda: process_gone(server_pid), timeout=DEADLINE), "the server outlived its parent"
    finally:
        parent.kill()
    assert live_sessions(machine) == []
    assert [(s.pid, s.ended_at is not None) for s in sessions(machine)] == [(parent.pid, True)]


def test_the_runtime_is_named_after_the_agent_cli_that_started_the_server(tmp_path: Path):
    script = tmp_path / "claude"
    script.write_text("import time\ntime.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, str(script)])
    try:
        assert wait_until(lambda: Path(f"/proc/{proc.pid}/cmdline").read_bytes().count(b"claude") > 0, timeout=10)
        assert runtime_of(proc.pid) == "claude-code"
        assert runtime_of(os.getpid()) == "mcp-client"
    finally:
        proc.kill()
        proc.wait()
    assert json.dumps(runtime_of(2**22 + 1)) == '"mcp-client"'  # no such process
