"""A Codex runner: ``callboard run --cli codex`` as a real process, one ``codex exec`` per turn
(from npm) against the mock model. Ready once its Codex answered ``--version``. Woken by bob's
message, its model answers through our MCP server (given by -c overrides: CODEX_HOME's
config.toml names only the mock provider); the status says surfaced via the runner; the report
carries the turn's tokens. Killed mid-turn with its mail in the thread's rollout, the next turn
goes on with the thread: the model reads the mail once, and answers it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callboard.requests import SendRequest
from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, TEST_TIMEOUT, WAKE_TIMEOUT, Machine
from tests.support.mock_model import MockModel
from tests.support.runner_process import codex_runner, goes_on_after_a_kill, in_records, status_of
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


def test_a_codex_runner_answers_mail_through_our_tools(codex: Path, machine: Machine, model: MockModel):
    runner = codex_runner(codex, machine, model)
    try:
        runner.wait_state("idle", "the runner to be idle")
        assert runner.said_before_ready("codex ready: codex answered --version"), runner.output()
        assert model.model_requests() == [] and runner.cli_pids() == []  # idle: no Codex process at all
        with machine.client("bob") as bob:
            sent = bob.send(SendRequest(to="alice", text="Please say hello back."))
        wait_until(
            lambda: [r for r in model.model_requests() if "Please say hello back." in str(r.body)],
            timeout=WAKE_TIMEOUT,
            what="the model request",
        )
        (answer,) = wait_until(lambda: machine.mailbox("bob"), timeout=RUN_TIMEOUT, what="alice's answer")
        assert answer.message.sender == "alice" and answer.message.text == model.tool_input["message"]
        report = runner.wait_state("idle", "the turn to end", turns=1)
        assert report.cli_session_id and report.input_tokens > 0, report
        status = status_of(machine, "bob", sent.message_id, "alice")
        assert status.via == "runner" and status.state in ("surfaced", "read", "acked"), status
    finally:
        assert runner.stop() == 0, runner.output()


def test_a_hand_off_reaches_a_codex_runners_first_model_request(
    codex: Path, machine: Machine, model: MockModel, tmp_path: Path
):
    """The packet a Claude Code session hands over (its summary, its repository's diff) is in the
    first model request Codex makes for the receiving runner."""
    import subprocess
    from datetime import UTC, datetime

    from callboard.coord.handoff_packet import build_packet
    from callboard.handoff import handoff_request

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "queue.py").write_text("LIMIT = 'DIFF-MARKER-7'\n")
    subprocess.run(["git", "-C", str(repo), "add", "queue.py"], check=True)
    runner = codex_runner(codex, machine, model)
    try:
        runner.wait_state("idle", "the runner to be idle")
        packet = build_packet(
            "claude-dev", "alice", "SUMMARY-MARKER: the queue limit is half done.", ["finish it"], repo,
            datetime.now(UTC), cli="claude",
        )  # fmt: skip
        with machine.client("claude-dev") as giver:
            giver.open_task(handoff_request(packet))
        wait_until(model.model_requests, timeout=WAKE_TIMEOUT, what="Codex's first model request")
        first = json.dumps(model.model_requests()[0].body)
        assert "SUMMARY-MARKER" in first and "DIFF-MARKER-7" in first and "1. finish it" in first, first[:2000]
    finally:
        runner.stop()


def in_rollout(machine: Machine, message_id: str) -> bool:
    """Whether a Codex rollout on ``machine`` holds the message as a user message of its thread
    (what ``exec resume`` rebuilds the conversation from)."""
    return in_records(
        (machine.home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"),
        message_id,
        lambda r: r.get("type") == "response_item" and (r.get("payload") or {}).get("role") == "user",
    )


def test_a_codex_killed_mid_turn_goes_on_with_that_turn_and_its_model_reads_the_mail_once(
    codex: Path, machine: Machine, model: MockModel
):
    runner = codex_runner(codex, machine, model)
    try:
        runner.wait_state("idle", "the runner to be idle")
        goes_on_after_a_kill(runner, machine, model, lambda message_id: in_rollout(machine, message_id))
        (answer,) = wait_until(lambda: machine.mailbox("bob"), timeout=RUN_TIMEOUT, what="alice's answer")
        assert answer.message.sender == "alice"
    finally:
        runner.stop()
