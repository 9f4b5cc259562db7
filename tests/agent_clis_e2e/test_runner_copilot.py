"""A Copilot CLI runner: ``switchboard run --cli copilot`` as a real process, one ``copilot -p``
per turn (from npm, BYOK against the Anthropic mock). Woken by bob's message, its model answers
through our MCP server (``--additional-mcp-config``: no file of the user's is written); the status
says surfaced via the runner; the second turn resumes the same Copilot session; the report
carries the tokens Copilot wrote at its exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, TEST_TIMEOUT, WAKE_TIMEOUT, Machine
from tests.agent_clis_e2e.runner_support import RunnerProcess, status_of
from tests.support.mock_model import MockModel
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


def copilot_env(machine: Machine, model: MockModel, copilot: Path) -> dict[str, str]:
    return machine.env(
        {
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_BASE_URL": model.url,
            "COPILOT_PROVIDER_API_KEY": "mock-key",
            "COPILOT_MODEL": "claude-sonnet-4",
            "SWITCHBOARD_COPILOT_BIN": str(copilot),
            **model.proxy_env(),
        }
    )


def test_a_copilot_runner_answers_mail_and_resumes_its_session(copilot: Path, machine: Machine, model: MockModel):
    runner = RunnerProcess(machine, "alice", "copilot", copilot_env(machine, model, copilot))
    try:
        runner.wait_state("idle", "the runner to be idle")
        assert model.model_requests() == [] and runner.cli_pids() == []  # idle: no Copilot process at all
        with machine.client("bob") as bob:
            sent = bob.send("alice", "Please say hello back.")
        wait_until(
            lambda: model.requests_mentioning("Please say hello back."), timeout=WAKE_TIMEOUT, what="the request"
        )
        (answer,) = wait_until(lambda: machine.mailbox("bob"), timeout=RUN_TIMEOUT, what="alice's answer")
        assert answer.message.sender == "alice" and answer.message.text == model.tool_input["message"]
        first = runner.wait_state("idle", "the first turn to end", turns=1)
        assert first.cli_session_id and first.input_tokens > 0, first
        status = status_of(machine, "bob", sent.message_id, "alice")
        assert status.via == "runner" and status.state in ("surfaced", "read", "acked"), status

        with machine.client("bob") as bob:
            bob.send("alice", "And a second word, please.")
        second_request = wait_until(
            lambda: model.requests_mentioning("And a second word, please."), timeout=WAKE_TIMEOUT, what="turn two"
        )
        assert second_request[0].mentions("Please say hello back."), "the second turn did not resume the session"
        second = runner.wait_state("idle", "the second turn to end", turns=2)
        assert second.cli_session_id == first.cli_session_id
    finally:
        assert runner.stop() == 0, runner.output()
