"""A Claude Code runner: ``switchboard run --cli claude`` as a real process, its Claude Code (the
current version, from npm) against the mock model.

Woken by bob's message (nothing typed, no polling), the runner hands the mail to its CLI; the
model's next request carries it, and the model answers through our MCP server's send_message.
The status says surfaced via the runner. SIGKILL of the Claude Code under the runner: the runner
starts it again resuming the same session (the next request carries the earlier conversation),
and the mail sent meanwhile is not lost. The report carries the CLI's usage and cost.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, TEST_TIMEOUT, WAKE_TIMEOUT, Machine, claude_code_env
from tests.agent_clis_e2e.runner_support import RunnerProcess, status_of
from tests.support.mock_model import MockModel
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


@pytest.fixture
def runner(claude_code_current: Path, machine: Machine, model: MockModel) -> Iterator[RunnerProcess]:
    env = claude_code_env(machine, model, {"SWITCHBOARD_CLAUDE_BIN": str(claude_code_current)})
    runner = RunnerProcess(machine, "alice", "claude", env)
    try:
        runner.wait_state("idle", "the runner to be idle")
        yield runner
    finally:
        runner.stop()


def test_a_claude_code_runner_takes_mail_in_its_next_model_request_and_answers_through_our_tools(
    machine: Machine, model: MockModel, runner: RunnerProcess
):
    assert model.model_requests() == []  # an idle runner asks the model nothing
    with machine.client("bob") as bob:
        sent = bob.send("alice", "Please say hello back.", subject="hello")
    (request, *_) = wait_until(
        lambda: model.requests_mentioning("Please say hello back."), timeout=WAKE_TIMEOUT, what="the model request"
    )
    assert "from: bob" in request.conversation_text() and sent.message_id in request.conversation_text()
    (answer,) = wait_until(lambda: machine.mailbox("bob"), timeout=RUN_TIMEOUT, what="alice's answer")
    assert answer.message.sender == "alice" and answer.message.text == model.tool_input["message"]
    status = wait_until(
        lambda: (s := status_of(machine, "bob", sent.message_id, "alice")).via == "runner" and s,
        timeout=RUN_TIMEOUT,
        what="the mail surfaced via the runner",
    )
    assert status.state in ("surfaced", "read", "acked"), status
    report = runner.wait_state("idle", "the turn to end", turns=1)
    assert report.cli_session_id and report.input_tokens > 0 and report.output_tokens > 0, report
    assert report.cost_usd, report


def test_a_killed_claude_code_is_respawned_on_its_session_and_loses_no_mail(
    machine: Machine, model: MockModel, runner: RunnerProcess
):
    with machine.client("bob") as bob:
        bob.send("alice", "First: remember PELICAN.")
        first = runner.wait_state("idle", "the first turn to end", turns=1)
        (cli,) = runner.cli_pids()
        os.kill(cli, signal.SIGKILL)
        sent = bob.send("alice", "Second: what was the word?")
    (request, *_) = wait_until(
        lambda: model.requests_mentioning("Second: what was the word?"), timeout=RUN_TIMEOUT, what="the second mail"
    )
    assert request.mentions("First: remember PELICAN."), model.summary()  # the resumed conversation
    report = runner.wait_state("idle", "the second turn to end", turns=2)
    assert report.restarts == 1 and report.cli_session_id == first.cli_session_id, report
    assert runner.cli_pids() != [cli]
    assert status_of(machine, "bob", sent.message_id, "alice").via == "runner"
