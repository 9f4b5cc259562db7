"""``callboard mcp`` ends promptly — well within an agent CLI's grace before its SIGKILL —
however its end comes: its stdin closes (also while a tool call is waiting for mail), SIGTERM,
SIGINT, SIGHUP, or its parent dies; and each time the agent session it kept has an end time.

The "agent CLI" is a small Python parent that starts the server as its child (as Claude Code
does), speaks to it on the parent's command, and can close the server's stdin.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli_runner import CLI
from tests.support.mcp_sessions import live_sessions, sessions
from tests.support.processes import process_gone
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

START_DEADLINE = 30.0
# Claude Code gives a server a few seconds between closing its stdin and SIGTERM, and between
# SIGTERM and SIGKILL; the server must be gone well before.
ENDS_WITHIN = 5.0
# Starts the server; then, per line on its stdin: "say <json>" writes a JSON-RPC line to the
# server, "close" closes the server's stdin. It prints the server's pid and each line the server
# answers (with the server's stdout on a thread).
PARENT = """
import subprocess, sys, threading
child = subprocess.Popen([sys.executable, "-m", "callboard", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
print(child.pid, flush=True)
threading.Thread(target=lambda: [print(line.decode().strip(), flush=True) for line in child.stdout], daemon=True).start()
for command in sys.stdin:
    if command.startswith("say "):
        child.stdin.write(command[4:].encode()); child.stdin.flush()
    elif command.strip() == "close":
        child.stdin.close()
child.wait()
"""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
WAITING_READ = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "read_messages", "arguments": {"wait_seconds": 600}},
}


class Parent:
    def __init__(self, machine: CLI) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", PARENT],
            env=machine.env("alice"),
            cwd=machine.workdir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.server = int(self.process.stdout.readline())

    def tell(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def say(self, message: dict) -> None:
        self.tell("say " + json.dumps(message))

    def answer(self) -> dict:
        assert self.process.stdout is not None
        return json.loads(self.process.stdout.readline())


@pytest.fixture
def machine(tmp_path: Path) -> CLI:
    return CLI(tmp_path)


def serving(machine: CLI) -> Parent:
    parent = Parent(machine)
    assert wait_until(lambda: live_sessions(machine), timeout=START_DEADLINE), "no live session appeared"
    return parent


def ended_cleanly(machine: CLI, parent: Parent) -> None:
    assert wait_until(lambda: process_gone(parent.server), timeout=ENDS_WITHIN, what="the server to exit")
    assert live_sessions(machine) == []
    assert [(s.pid, s.ended_at is not None) for s in sessions(machine)] == [(parent.process.pid, True)]


@pytest.mark.parametrize("how", ["stdin", "SIGTERM", "SIGINT", "SIGHUP"])
def test_the_server_ends_and_ends_its_session_when_its_stdin_closes_or_on_a_signal(machine: CLI, how: str):
    parent = serving(machine)
    try:
        if how == "stdin":
            parent.tell("close")
        else:
            os.kill(parent.server, getattr(signal, how))
        ended_cleanly(machine, parent)
    finally:
        parent.process.kill()
        parent.process.wait()


def test_the_server_ends_when_its_stdin_closes_while_a_tool_call_waits_for_mail(machine: CLI):
    parent = serving(machine)
    try:
        parent.say(INITIALIZE)
        assert parent.answer()["id"] == 1
        parent.say({"jsonrpc": "2.0", "method": "notifications/initialized"})
        parent.say(WAITING_READ)  # blocks in the store for up to 600 s
        parent.tell("close")
        ended_cleanly(machine, parent)
    finally:
        parent.process.kill()
        parent.process.wait()


def test_the_server_ends_when_its_parent_is_killed(machine: CLI):
    parent = serving(machine)
    try:
        os.kill(parent.process.pid, signal.SIGKILL)
        parent.process.wait()
        ended_cleanly(machine, parent)
    finally:
        parent.process.kill()
