"""A real Claude Code session that runs no Callboard at all, reached by a sender's injection.

Claude Code (the current version, installed from npm) runs headless with stream-json input and
its stdin left open, against a local mock model, WITHOUT our MCP server or hooks, in a project
whose agent file names alice. ``callboard send`` from bob, another process, finds the session
in Claude Code's registry and writes alice's mail into its messaging socket: the idle session
starts a turn by itself, and the model's next request carries the message, fenced.

The mail is handed to a session of alice registered for that Claude Code process, so it comes
back to the mailbox when the process dies before its model took it; ``callboard status``
first reads the session's transcript, so mail its model did take shows surfaced instead.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, WAKE_TIMEOUT, Machine, claude_code_env
from tests.support.cli_runner import CALL_TIMEOUT, isolated_env
from tests.support.mock_model import MockModel

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


HEADLESS = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]


def callboard_send(machine: Machine, *args: str) -> dict:
    """``callboard send … --json`` as bob on the machine (its HOME: Claude Code's registry there)."""
    return callboard(machine, "bob", "send", *args)


def callboard(machine: Machine, agent: str, command: str, *args: str) -> dict:
    """``callboard <command> … --json`` as ``agent`` on the machine, as an agent's Bash runs it."""
    env = isolated_env(machine.home, machine.callboard_home, {"CALLBOARD_AGENT": agent, "CLAUDE_CONFIG_DIR": None})
    proc = subprocess.run(
        [sys.executable, "-m", "callboard", command, *args, "--json"],
        env=env,
        cwd=machine.root,
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0 and proc.stderr == "", f"{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout)


def test_a_session_without_callboard_is_woken_by_a_send_to_its_agent(
    claude_code_current: Path, machine: Machine, model: MockModel, socket_tmp: Path
):
    (machine.workdir / ".callboard-agent").write_text("alice\n")
    session = machine.start(
        [claude_code_current, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
        claude_code_env(machine, model, {"TMPDIR": str(socket_tmp)}),
    )
    session.say("Hello. Nothing to do yet.")
    session.wait_for(lambda: len(session.results()) == 1, "the first turn to finish")
    turns = len(model.model_requests())

    sent = callboard_send(machine, "alice", "Please rebase PR 12 onto main.", "--subject", "rebase")

    (injected,) = sent["injected_into_claude_code"]
    assert (injected["agent"], injected["pid"], injected["messages"]) == ("alice", session.pid, [sent["message_id"]])
    # Nothing is written on stdin: the session wakes because the mail came through its socket.
    (request,) = session.wait_for(
        lambda: model.requests_saying("Please rebase PR 12 onto main."), "the model request with the mail", WAKE_TIMEOUT
    )
    text = request.last_user_text()
    assert "from: bob" in text and "subject: rebase" in text and f"id: {sent['message_id']}" in text
    assert "BEGIN MESSAGE" in text and "not your user's" in text  # fenced: another agent's words
    assert model.model_requests().index(request) == turns  # the very next request
    session.wait_for(lambda: len(session.results()) == 2, "the woken turn to finish")

    # Handed by the frame to the session registered for that process; no Callboard process
    # runs in it, so the status reads its transcript first: the turn carried it, surfaced.
    alice = alice_row(callboard(machine, "bob", "status", sent["message_id"]))
    assert (alice["state"], alice["via"], alice["read_at"]) == ("surfaced", "socket", None)
    handed = [e for e in alice["history"] if e["event"] == "handed"]
    assert [e["session"].rsplit("#", 1)[-1] for e in handed] == [str(session.pid)], alice["history"]
    assert (alice["history"][-1]["event"], alice["history"][-1]["detail"]) == ("surfaced", "transcript")

    assert session.close() == 0
    # Its process gone, the mail its model took stays surfaced: nothing comes back.
    after = alice_row(callboard(machine, "bob", "status", sent["message_id"]))
    assert after["state"] == "surfaced" and "returned" not in [e["event"] for e in after["history"]]
    assert callboard(machine, "alice", "read")["items"] != []  # surfaced, still unread: a reader gets it
    assert model.proxied() == [], session.transcript()


def alice_row(report: dict) -> dict:
    (alice,) = [r for r in report["recipients"] if r["agent"] == "alice"]
    return alice


def test_mail_injected_into_a_session_without_callboard_that_dies_mid_tool_returns_and_is_read_once(
    claude_code_current: Path, machine: Machine, socket_tmp: Path
):
    (machine.workdir / ".callboard-agent").write_text("alice\n")
    marks = machine.root / "marks"
    marks.mkdir()
    with MockModel(tool_input=None) as model:
        argv = [claude_code_current, *HEADLESS, "--allowedTools", "Bash"]
        session = machine.start(argv, claude_code_env(machine, model, {"TMPDIR": str(socket_tmp)}))
        started = marks / "started"
        wait = f"for i in $(seq 1200); do [ -e {shlex.quote(str(marks / 'go'))} ] && break; sleep 0.1; done"
        session.say(f"RUN_BASH: touch {shlex.quote(str(started))} && {wait}")
        session.wait_for(started.exists, "the Bash call to start")  # busy: a frame waits for the tool's end

        body = "Stop the deploy; the schema changed."
        sent = callboard_send(machine, "alice", body)
        (injected,) = sent["injected_into_claude_code"]
        assert injected["pid"] == session.pid
        handed = alice_row(callboard(machine, "bob", "status", sent["message_id"]))
        assert handed["state"] == "handed" and handed["handed_to"].endswith(f"#{session.pid}"), handed

        os.killpg(session.pid, signal.SIGKILL)  # stopped in the middle of its tool call
        session.process.wait()
        assert not model.requests_mentioning(body)

        returned = alice_row(callboard(machine, "bob", "status", sent["message_id"]))
        assert (returned["state"], returned["handed_to"]) == ("queued", None), returned
        events = [e["event"] for e in returned["history"]]
        assert events[-2:] == ["handed", "returned"], returned["history"]
        assert returned["history"][-1]["session"] == handed["handed_to"]

        # The next reader gets it, once.
        first = callboard(machine, "alice", "read")
        assert [i["message"]["id"] for i in first["items"]] == [sent["message_id"]]
        assert callboard(machine, "alice", "read")["items"] == []
        assert alice_row(callboard(machine, "bob", "status", sent["message_id"]))["state"] == "read"
