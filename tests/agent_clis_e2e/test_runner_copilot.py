"""A Copilot CLI runner: ``callboard run --cli copilot`` as a real process, one ``copilot -p``
per turn (from npm, BYOK against the Anthropic mock). Woken by bob's message, its model answers
through our MCP server (``--additional-mcp-config``: no file of the user's is written); the status
says surfaced via the runner; the second turn resumes the same Copilot session; the report
carries the tokens Copilot wrote at its exit. Killed mid-turn in a session it named, with its mail
in the session's events, the next turn goes on with the session: the model reads the mail once."""

from __future__ import annotations

from pathlib import Path

import pytest

from callboard.requests import SendRequest
from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, Machine
from tests.support.mock_model import MockModel
from tests.support.runner_process import RunnerProcess, answers_then_resumes, goes_on_after_a_kill, in_records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


def copilot_env(machine: Machine, model: MockModel, copilot: Path) -> dict[str, str]:
    return machine.env(
        {
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_BASE_URL": model.url,
            "COPILOT_PROVIDER_API_KEY": "mock-key",
            "COPILOT_MODEL": "claude-sonnet-4",
            "CALLBOARD_COPILOT_BIN": str(copilot),
            **model.proxy_env(),
        }
    )


def test_a_copilot_runner_answers_mail_and_resumes_its_session(copilot: Path, machine: Machine, model: MockModel):
    runner = RunnerProcess(machine, "alice", "copilot", copilot_env(machine, model, copilot))
    try:
        answers_then_resumes(runner, machine, model)
    finally:
        assert runner.stop() == 0, runner.output()


def test_a_copilot_killed_mid_turn_goes_on_with_that_turn_and_its_model_reads_the_mail_once(
    copilot: Path, machine: Machine, model: MockModel
):
    runner = RunnerProcess(machine, "alice", "copilot", copilot_env(machine, model, copilot))
    sessions = machine.home / ".copilot" / "session-state"
    try:
        runner.wait_state("idle", "the runner to be idle")
        # Copilot names its session only at a turn's end: a first turn has made one to resume.
        with machine.client("bob") as bob:
            bob.send(SendRequest(to="alice", text="First: remember PELICAN."))
        runner.wait_state("idle", "the first turn to end", turns=1)
        goes_on_after_a_kill(
            runner,
            machine,
            model,
            lambda message_id: in_records(
                sessions.glob("*/events.jsonl"), message_id, lambda r: r.get("type") == "user.message"
            ),
        )
    finally:
        runner.stop()
