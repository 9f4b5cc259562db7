"""A Copilot CLI runner: ``callboard run --cli copilot`` as a real process, one ``copilot -p``
per turn (from npm, BYOK against the Anthropic mock). Woken by bob's message, its model answers
through our MCP server (``--additional-mcp-config``: no file of the user's is written); the status
says surfaced via the runner; the second turn resumes the same Copilot session; the report
carries the tokens Copilot wrote at its exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, Machine
from tests.support.mock_model import MockModel
from tests.support.runner_process import RunnerProcess, answers_then_resumes

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
