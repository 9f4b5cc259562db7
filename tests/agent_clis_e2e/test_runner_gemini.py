"""A Gemini CLI runner: ``switchboard run --cli gemini`` as a real process, one ``gemini -p`` per
turn (from npm) against the mock Gemini API. Woken by bob's message, its model answers through our
MCP server (in a settings copy of the runner's own: the user's ~/.gemini/settings.json stays as it
was); the status says surfaced via the runner; the second turn resumes the same session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, TEST_TIMEOUT, WAKE_TIMEOUT, Machine
from tests.agent_clis_e2e.runner_support import RunnerProcess, status_of
from tests.support.mock_model import MockModel
from tests.support.waiting import wait_until

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
            "SWITCHBOARD_GEMINI_BIN": str(gemini),
            **model.proxy_env(),
        }
    )


def test_a_gemini_runner_answers_mail_and_resumes_its_session(gemini: Path, machine: Machine, model: MockModel):
    runner = RunnerProcess(machine, "alice", "gemini", gemini_env(machine, model, gemini))
    try:
        runner.wait_state("idle", "the runner to be idle")
        assert model.model_requests() == [] and runner.cli_pids() == []  # idle: no Gemini process at all
        with machine.client("bob") as bob:
            sent = bob.send("alice", "Please say hello back.")
        wait_until(
            lambda: model.requests_mentioning("Please say hello back."), timeout=WAKE_TIMEOUT, what="the request"
        )
        (answer,) = wait_until(lambda: machine.mailbox("bob"), timeout=RUN_TIMEOUT, what="alice's answer")
        assert answer.message.sender == "alice" and answer.message.text == model.tool_input["message"]
        assert model.offered_tool() == "mcp_switchboard_send_message"
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
        assert json.loads((machine.home / ".gemini" / "settings.json").read_text()) == USER_SETTINGS
    finally:
        assert runner.stop() == 0, runner.output()
