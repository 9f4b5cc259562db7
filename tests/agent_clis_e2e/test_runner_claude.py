"""A Claude Code runner: ``callboard run --cli claude`` as a real process, its Claude Code (the
current version, from npm) against the mock model.

The runner says ready (its log, `run`'s ready line, its idle report) only after its Claude Code
answered the control requests it sends at the start, with our MCP server connected; the first
mail then reaches the model through that same process. Woken by bob's message (nothing typed,
no polling), the runner hands the mail to its CLI; the model's next request carries it, and the
model answers through our MCP server's send_message. The status says surfaced via the runner.
SIGKILL of the Claude Code under the runner: the runner starts it again (waiting for it to
answer as at the start) resuming the same session (the next request carries the earlier
conversation), and the mail sent meanwhile is not lost. Killed in a turn whose mail its
transcript holds, it goes on with that turn after the respawn: the model reads the mail once, and
answers it; killed before the mail reached the transcript, it is given the mail again. The report
carries the CLI's usage and cost. Three
messages sent while a turn is held open wait (delivered) and go in as one batch after it; the
agent's `callboard runner clear` gives its next task a fresh context.
"""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest

from callboard.integrations.claude_code.transcript_watch import ids_in_tail
from callboard.model import RecipientStatus
from callboard.requests import SendRequest
from callboard.runner import prompts
from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, TEST_TIMEOUT, WAKE_TIMEOUT, Machine
from tests.support.live_claude_code import SERVER
from tests.support.mock_model import MockModel, Recorded
from tests.support.processes import process_gone
from tests.support.runner_process import RunnerProcess, claude_runner, status_of
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


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


def in_transcript(machine: Machine, message_id: str) -> bool:
    """Whether a Claude Code transcript on ``machine`` holds a record that carried the message to
    the model (what ``--resume`` loads)."""
    return any(message_id in ids_in_tail(p) for p in (machine.home / ".claude" / "projects").glob("*/*.jsonl"))


def unread_input(pid: int) -> int:
    """How many bytes wait unread in the stdin pipe of process ``pid``."""
    fd = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
    finally:
        os.close(fd)


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: process_gone(pid), timeout=RUN_TIMEOUT, what=f"pid {pid} to end")


def read_once(machine: Machine, message_id: str) -> RecipientStatus:
    """The message's status once the turn that answered it is done: surfaced once, via the runner."""
    status = wait_until(
        lambda: (s := status_of(machine, "bob", message_id, "alice")).state == "read" and s,
        timeout=RUN_TIMEOUT,
        what="the mail read at the end of its turn",
    )
    surfaced = [e for e in status.history if e.event == "surfaced"]
    assert status.via == "runner" and len(surfaced) == 1, status
    return status


def times_given(request: Recorded, *texts: str) -> list[int]:
    """How often each of ``texts`` is in the request's conversation."""
    return [request.conversation_text().count(text) for text in texts]


def test_a_claude_code_killed_with_its_mail_in_the_transcript_goes_on_with_that_turn_and_reads_it_once(
    machine: Machine, model: MockModel, runner: RunnerProcess
):
    text = "Please answer once: HELD-IN-TRANSCRIPT."
    model.hold(text)  # the model takes its time: the turn is open, its mail not yet taken
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text=text))
    wait_until(lambda: model.requests_mentioning(text), timeout=WAKE_TIMEOUT, what="the held request")
    wait_until(lambda: in_transcript(machine, sent.message_id), timeout=RUN_TIMEOUT, what="the mail in the transcript")
    (cli,) = runner.cli_pids()
    before = len(model.model_requests())
    kill(cli)
    model.release()
    (answer,) = wait_until(lambda: machine.mailbox("bob"), timeout=RUN_TIMEOUT, what="alice's answer")
    assert answer.message.sender == "alice"
    resumed = [r for r in model.model_requests()[before:] if r.mentions(text)]
    assert resumed, model.summary()
    # The resumed conversation carries the mail; the turn after the respawn goes on with it.
    counts = [times_given(r, text, f"id: {sent.message_id}") for r in resumed]
    assert counts == [[1, 1]] * len(resumed), (counts, resumed[0].conversation_text())
    assert prompts.INTERRUPTED_TEXT in resumed[0].last_user_text()
    status = read_once(machine, sent.message_id)
    assert [e.detail for e in status.history if e.event == "surfaced"] == ["transcript"], status
    report = runner.wait_state("idle", "the turn after the respawn to end")
    assert report.restarts == 1 and runner.cli_pids() != [cli], report


def test_a_claude_code_killed_before_its_mail_reached_the_transcript_is_given_it_again(
    machine: Machine, model: MockModel, runner: RunnerProcess
):
    with machine.client("bob") as bob:
        bob.send(SendRequest(to="alice", text="First: remember PELICAN."))
        runner.wait_state("idle", "the first turn to end", turns=1)
        (cli,) = runner.cli_pids()
        os.kill(cli, signal.SIGSTOP)  # it reads no more: the next turn's input waits in its stdin
        text = "Second: NOT-YET-IN-TRANSCRIPT, please answer."
        sent = bob.send(SendRequest(to="alice", text=text))
    wait_until(lambda: unread_input(cli) > 0, timeout=WAKE_TIMEOUT, what="the turn's input in the CLI's stdin")
    assert not in_transcript(machine, sent.message_id)
    kill(cli)
    report = runner.wait_state("idle", "the mail's turn after the respawn to end", turns=2)
    assert report.restarts == 1, report
    given = model.requests_mentioning(text)
    assert given, f"the mail never reached the model:\n{model.summary()}"
    request = given[0]
    assert request.mentions("First: remember PELICAN."), model.summary()  # the resumed session
    assert text in request.last_user_text() and prompts.INTERRUPTED_TEXT not in request.last_user_text()
    assert all(times_given(r, text, f"id: {sent.message_id}") == [1, 1] for r in given)
    status = read_once(machine, sent.message_id)
    assert [e.detail for e in status.history if e.event == "surfaced"] == ["turn"], status


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
