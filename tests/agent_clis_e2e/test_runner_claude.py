"""A Claude Code runner: ``callboard run --cli claude`` as a real process, its Claude Code (the
current version, from npm) against the mock model.

The runner says ready (its log, `run`'s ready line, its idle report) only after its Claude Code
answered the control requests it sends at the start, with our MCP server connected; the first
mail then reaches the model through that same process. Woken by bob's message (nothing typed,
no polling), the runner hands the mail to its CLI; the model's next request carries it, and the
model answers through our MCP server's send_message. The status says surfaced via the runner.
SIGKILL of the Claude Code under the runner: the runner starts it again (waiting for it to
answer as at the start) resuming the same session (the next request carries the earlier
conversation), and the mail sent meanwhile is not lost. The report carries the CLI's usage and cost. Three
messages sent while a turn is held open wait (delivered) and go in as one batch after it; the
agent's `callboard runner clear` gives its next task a fresh context.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from callboard.requests import SendRequest
from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, TEST_TIMEOUT, WAKE_TIMEOUT, Machine, claude_code_env
from tests.support.live_claude_code import SERVER
from tests.support.mock_model import MockModel
from tests.support.runner_process import RunnerProcess, status_of
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


@contextmanager
def claude_runner(claude_code: Path, machine: Machine, model: MockModel) -> Iterator[RunnerProcess]:
    """alice's Claude Code runner against ``model``, idle; stopped on the way out."""
    env = claude_code_env(machine, model, {"CALLBOARD_CLAUDE_BIN": str(claude_code)})
    runner = RunnerProcess(machine, "alice", "claude", env)
    try:
        runner.wait_state("idle", "the runner to be idle")
        yield runner
    finally:
        runner.stop()


@pytest.fixture
def runner(claude_code_current: Path, machine: Machine, model: MockModel) -> Iterator[RunnerProcess]:
    with claude_runner(claude_code_current, machine, model) as runner:
        yield runner


def test_a_claude_code_runner_takes_mail_in_its_next_model_request_and_answers_through_our_tools(
    machine: Machine, model: MockModel, runner: RunnerProcess
):
    assert model.model_requests() == []  # an idle runner asks the model nothing
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text="Please say hello back.", subject="hello"))
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


def test_a_claude_code_runner_says_ready_after_its_cli_answered_and_its_first_mail_needs_no_second_start(
    machine: Machine, model: MockModel, runner: RunnerProcess
):
    (cli,) = runner.cli_pids()
    answered = (f"claude ready (pid {cli}): answered initialize", f"and mcp_status ({SERVER} connected)")
    assert runner.said_before_ready(*answered), runner.output()  # it answered, then the runner said ready
    assert "running alice as alice@" in runner.out.read_text(), runner.output()  # `run`'s ready line
    with machine.client("bob") as bob:
        bob.send(SendRequest(to="alice", text="The first mail since the start."))
    wait_until(lambda: model.requests_mentioning("The first mail since the start."), what="the first mail's request")
    report = runner.wait_state("idle", "the first turn to end", turns=1)
    assert runner.cli_pids() == [cli] and report.restarts == 0, report  # the CLI it started: no second start
    assert sum("claude started" in line for line in runner.log().splitlines()) == 1, runner.output()


def test_a_killed_claude_code_is_respawned_on_its_session_and_loses_no_mail(
    machine: Machine, model: MockModel, runner: RunnerProcess
):
    with machine.client("bob") as bob:
        bob.send(SendRequest(to="alice", text="First: remember PELICAN."))
        first = runner.wait_state("idle", "the first turn to end", turns=1)
        (cli,) = runner.cli_pids()
        os.kill(cli, signal.SIGKILL)
        sent = bob.send(SendRequest(to="alice", text="Second: what was the word?"))
    (request, *_) = wait_until(
        lambda: model.requests_mentioning("Second: what was the word?"), timeout=RUN_TIMEOUT, what="the second mail"
    )
    assert request.mentions("First: remember PELICAN."), model.summary()  # the resumed conversation
    report = runner.wait_state("idle", "the second turn to end", turns=2)
    assert report.restarts == 1 and report.cli_session_id == first.cli_session_id, report
    assert runner.cli_pids() != [cli]
    assert status_of(machine, "bob", sent.message_id, "alice").via == "runner"
    (respawned,) = runner.cli_pids()  # the respawn, too, waited for its CLI to answer
    assert f"claude ready (pid {respawned}): answered initialize" in runner.log(), runner.output()


def test_a_busy_claude_code_runner_takes_three_messages_in_one_batch_and_clears_between_tasks(
    claude_code_current: Path, machine: Machine
):
    release = machine.root / "release"
    callboard = Path(sys.executable).with_name("callboard")
    # The model runs the Bash lines it is given, nothing else.
    with MockModel(tool_input=None) as model, claude_runner(claude_code_current, machine, model) as runner:
        with machine.client("bob") as bob:
            bob.send(SendRequest(to="alice", text=f"RUN_BASH: while [ ! -e {release} ]; do sleep 0.05; done"))
            runner.wait_state("working", "the held turn")
            sent = [bob.send(SendRequest(to="alice", text=f"Batch item BATCH-{n}.")).message_id for n in (1, 2, 3)]
        assert [status_of(machine, "bob", m, "alice").state for m in sent] == ["delivered"] * 3
        release.touch()
        (request, *_) = wait_until(
            lambda: model.requests_mentioning("BATCH-1"), timeout=RUN_TIMEOUT, what="the batch's request"
        )
        assert request.mentions("BATCH-2") and request.mentions("BATCH-3"), model.summary()  # one turn
        before = runner.wait_state("idle", "the batch's turn to end", turns=2)

        with machine.client("bob") as bob:  # the agent says it finished its unit of work
            bob.send(SendRequest(to="alice", text=f"RUN_BASH: {callboard} runner clear"))
            runner.wait_state("idle", "the clearing turn to end", turns=3)
            bob.send(SendRequest(to="alice", text="A new task: FRESH-1."))
        (fresh, *_) = wait_until(
            lambda: model.requests_mentioning("FRESH-1"), timeout=RUN_TIMEOUT, what="the new task's request"
        )
        assert not fresh.mentions("BATCH-1"), model.summary()  # a fresh context
        after = runner.wait_state("idle", "the new task's turn to end", turns=4)
        assert after.cli_session_id not in (None, before.cli_session_id), after
