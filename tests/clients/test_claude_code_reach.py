"""A real Claude Code session that runs no Switchboard at all, reached by a sender's push.

Claude Code (the current version, installed from npm) runs headless with stream-json input and
its stdin left open, against a local mock model, WITHOUT our MCP server or hooks, in a project
whose agent file names alice. ``switchboard send`` from bob, another process, finds the session
in Claude Code's registry and writes alice's mail into its messaging socket: the idle session
starts a turn by itself, and the model's next request carries the message, fenced.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_runner import CALL_TIMEOUT, isolated_env
from tests.clients.conftest import TEST_TIMEOUT, WAKE_TIMEOUT, Machine, claude_code_env
from tests.clients.mock_model import MockModel

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


def switchboard_send(machine: Machine, *args: str) -> dict:
    """``switchboard send … --json`` as bob on the machine (its HOME: Claude Code's registry there)."""
    env = isolated_env(machine.home, machine.switchboard_home, {"SWITCHBOARD_AGENT": "bob", "CLAUDE_CONFIG_DIR": None})
    proc = subprocess.run(
        [sys.executable, "-m", "switchboard", "send", *args, "--json"],
        env=env,
        cwd=machine.root,
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0 and proc.stderr == "", f"{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout)


def test_a_session_without_switchboard_is_woken_by_a_send_to_its_agent(
    claude_code_current: Path, machine: Machine, model: MockModel, socket_tmp: Path
):
    (machine.workdir / ".switchboard-agent").write_text("alice\n")
    session = machine.start(
        [claude_code_current, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
        claude_code_env(machine, model, {"TMPDIR": str(socket_tmp)}),
    )
    session.say("Hello. Nothing to do yet.")
    session.wait_for(lambda: len(session.results()) == 1, "the first turn to finish")
    turns = len(model.model_requests())

    sent = switchboard_send(machine, "alice", "Please rebase PR 12 onto main.", "--subject", "rebase")

    (pushed,) = sent["pushed_into_claude_code"]
    assert (pushed["agent"], pushed["pid"], pushed["messages"]) == ("alice", session.pid, [sent["message_id"]])
    # Nothing is written on stdin: the session wakes because the mail came through its socket.
    (request,) = session.wait_for(
        lambda: model.requests_saying("Please rebase PR 12 onto main."), "the model request with the mail", WAKE_TIMEOUT
    )
    text = request.last_user_text()
    assert "from: bob" in text and "subject: rebase" in text and f"id: {sent['message_id']}" in text
    assert "BEGIN MESSAGE" in text and "not your user's" in text  # fenced: another agent's words
    assert model.model_requests().index(request) == turns  # the very next request
    session.wait_for(lambda: len(session.results()) == 2, "the woken turn to finish")

    with machine.client("bob") as bob:
        (alice,) = [r for r in bob.message_status(sent["message_id"]).recipients if r.agent == "alice"]
    # Handed by the frame. No Switchboard process serves that session, so nothing reads its
    # transcript: the model has it, but nothing of ours saw the evidence, and the status says
    # only what is known.
    assert (alice.state, alice.via, alice.handed_to) == ("handed", "socket", None)
    assert alice.read_at is None

    assert session.close() == 0
    assert model.proxied() == [], session.transcript()
