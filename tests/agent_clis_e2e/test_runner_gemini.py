"""A Gemini CLI runner: ``callboard run --cli gemini`` as a real process, one ``gemini -p`` per
turn (from npm) against the mock Gemini API. Woken by bob's message, its model answers through our
MCP server (in a settings copy of the runner's own: the user's ~/.gemini/settings.json stays as it
was); the status says surfaced via the runner; the second turn resumes the same session. Killed
mid-turn with its mail in the session's chat file, the next turn goes on with the session: the
model reads the mail once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, Machine
from tests.support.mock_model import MockModel
from tests.support.runner_process import RunnerProcess, answers_then_resumes, goes_on_after_a_kill, in_records

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]

USER_SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}}, "ui": {"theme": "Default"}}


def gemini_env(machine: Machine, model: MockModel, gemini: Path) -> dict[str, str]:
    folder = machine.home / ".gemini"
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(USER_SETTINGS))
    return machine.env(
        {
            "GOOGLE_GEMINI_BASE_URL": model.url,
            "GEMINI_API_KEY": "mock-key",
            "GEMINI_MODEL": "gemini-2.5-pro",  # a named model: no routing request before the turn's
            "CALLBOARD_GEMINI_BIN": str(gemini),
            **model.proxy_env(),
        }
    )


def test_a_gemini_runner_answers_mail_and_resumes_its_session(gemini: Path, machine: Machine, model: MockModel):
    runner = RunnerProcess(machine, "alice", "gemini", gemini_env(machine, model, gemini))
    try:
        answers_then_resumes(runner, machine, model)
        assert model.offered_tool() == "mcp_callboard_send_message"
        assert json.loads((machine.home / ".gemini" / "settings.json").read_text()) == USER_SETTINGS
    finally:
        assert runner.stop() == 0, runner.output()


def test_a_gemini_killed_mid_turn_goes_on_with_that_turn_and_its_model_reads_the_mail_once(
    gemini: Path, machine: Machine, model: MockModel
):
    runner = RunnerProcess(machine, "alice", "gemini", gemini_env(machine, model, gemini))
    chats = machine.home / ".gemini" / "tmp"
    try:
        runner.wait_state("idle", "the runner to be idle")
        goes_on_after_a_kill(
            runner,
            machine,
            model,
            lambda message_id: in_records(chats.glob("*/chats/*.jsonl"), message_id, lambda r: r.get("type") == "user"),
        )
    finally:
        runner.stop()
