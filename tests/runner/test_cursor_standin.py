"""The Cursor adapter through a real ``callboard run --cli cursor``, driving a stand-in for
``cursor-agent`` (tests/support/cursor_standin.py speaks Cursor's documented stream-json): woken
by mail, it answers by running ``callboard send`` in the runner's session; the next turn
resumes the same chat."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from callboard.requests import SendRequest
from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, Machine
from tests.support.runner_process import RunnerProcess, status_of
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

STANDIN = Path(__file__).resolve().parents[1] / "support" / "cursor_standin.py"


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


def test_a_cursor_runner_answers_by_command_and_resumes_its_chat(machine: Machine) -> None:
    log = machine.root / "standin.jsonl"
    bin_folder = machine.root / "bin"
    bin_folder.mkdir()
    launcher = bin_folder / "cursor-agent"  # as the CLI is found: on PATH, by its own name
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} "$@"\n')
    launcher.chmod(0o755)
    path = f"{bin_folder}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = machine.env({"PATH": path, "CURSOR_STANDIN_LOG": str(log)})
    runner = RunnerProcess(machine, "alice", "cursor", env)

    def runs() -> list[dict]:
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    try:
        runner.wait_state("idle", "the runner to be idle")
        with machine.client("bob") as bob:
            sent = bob.send(SendRequest(to="alice", text="REPLY bob: hello from cursor"))
        (answer,) = wait_until(lambda: machine.mailbox("bob"), timeout=RUN_TIMEOUT, what="alice's answer")
        assert (answer.message.sender, answer.message.text) == ("alice", "hello from cursor")
        first = runner.wait_state("idle", "the first turn to end", turns=1)
        assert first.cli_session_id == runs()[0]["chat"] and not runs()[0]["resumed"]
        status = status_of(machine, "bob", sent.message_id, "alice")
        assert status.via == "runner" and status.state in ("surfaced", "read", "acked"), status

        with machine.client("bob") as bob:
            bob.send(SendRequest(to="alice", text="REPLY bob: second"))
        wait_until(lambda: len(runs()) == 2, timeout=RUN_TIMEOUT, what="the second run")
        second = runs()[1]
        assert second["resumed"] and second["chat"] == first.cli_session_id
        assert "hello from cursor" in second["earlier"]  # the chat carried the first turn
        runner.wait_state("idle", "the second turn to end", turns=2)
    finally:
        assert runner.stop() == 0, runner.output()
