"""A hand-off from a Claude Code runner to a Codex runner, ``--from`` the Claude Code runner.

ana is a Claude Code runner (``callboard run --cli claude``, the current Claude Code from npm) and
ben a Codex runner (``--cli codex``), each against a mock model of its vendor, both working in a
git repository with a change not yet committed. A person's ``callboard handoff --from ana --to
ben`` gives no summary: ana's runner is asked for one as a task, its model answers it with
``update_task`` (completed, the summary its message), and the packet built in the repository —
that summary, the next step and the diff — reaches the first model request Codex makes for ben.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from callboard.coord.handoff_packet import SUMMARY_ASK
from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, TEST_TIMEOUT, WAKE_TIMEOUT, Machine
from tests.support.cli_runner import isolated_env
from tests.support.mock_model import MockModel, Recorded
from tests.support.runner_process import claude_runner, codex_runner
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]

SUMMARY = "SUMMARY-MARKER: the queue limit is read from settings; the tests for it are not written."
DIFF_MARKER = "DIFF-MARKER-7"
NEXT_STEP = "write the tests for the queue limit"
ASKED = SUMMARY_ASK.split(":", 1)[0]  # "Summarize your session for a hand-off to {to}"
ASKED_OF_ANA = ASKED.format(to="ben")
TASK_LINE = re.compile(r"task: (\S+?),")  # a task's mail names its task (fence.py)


def give_the_summary(request: Recorded) -> dict[str, Any] | None:
    """What ana's scripted model does: the summary asked of it for a hand-off is given, as the
    task asks (completed, the summary its message); anything else is left alone."""
    text = request.conversation_text()
    if ASKED_OF_ANA not in text:
        return None
    *_, task_id = TASK_LINE.findall(text.split(ASKED_OF_ANA, 1)[0])  # the asking mail's task line
    return {"task_id": task_id, "state": "completed", "message": SUMMARY}


def repository_with_a_change(folder: Path) -> None:
    """A git repository in ``folder``: one commit, and a tracked file changed since."""

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)

    git("init", "-q")
    (folder / "queue_limit.py").write_text("LIMIT = 10\n")
    git("add", "queue_limit.py")
    git("-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q", "-m", "start")
    (folder / "queue_limit.py").write_text(f"LIMIT = settings.get('queue_limit', '{DIFF_MARKER}')\n")


def hand_off(machine: Machine, *args: str) -> subprocess.CompletedProcess[str]:
    """``callboard handoff ARGS --json`` as a person at the machine, in the repository."""
    env = isolated_env(machine.home, machine.callboard_home, {"CALLBOARD_AGENT": "lead", "CLAUDE_CONFIG_DIR": None})
    return subprocess.run(
        [sys.executable, "-m", "callboard", "handoff", *args, "--json"],
        env=env,
        cwd=machine.workdir,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=2 * RUN_TIMEOUT,
    )


def test_a_hand_off_from_a_claude_code_runner_carries_its_asked_summary_into_codexs_first_model_request(
    claude_code_current: Path, codex: Path, machine: Machine
):
    repository_with_a_change(machine.workdir)
    with (
        MockModel(tool_input=give_the_summary, tool="update_task", final_text="Summary given.") as claude_model,
        MockModel(tool_input=None) as codex_model,
        claude_runner(claude_code_current, machine, claude_model, agent="ana"),
    ):
        ben = codex_runner(codex, machine, codex_model, agent="ben")
        try:
            ben.wait_state("idle", "ben's runner to be idle")
            assert codex_model.model_requests() == []

            done = hand_off(machine, "--from", "ana", "--to", "ben", "--next", NEXT_STEP)
            assert done.returncode == 0, f"{done.stderr}\n{claude_model.summary()}"
            assert "asked ana for its summary" in done.stderr, done.stderr
            packet = json.loads(done.stdout)["packet"]
            assert (packet["from_agent"], packet["to_agent"], packet["summary"]) == ("ana", "ben", SUMMARY), packet
            # ana's runner names its Claude Code transcript in its report: the packet has its conversation
            assert packet["transcript"] is not None and ASKED_OF_ANA in packet["transcript"]["text"], packet

            # ana's own model was asked, in its runner's turn, and answered with our tool.
            assert claude_model.requests_mentioning(ASKED_OF_ANA), claude_model.summary()
            assert claude_model.offered_tool() == "mcp__callboard__update_task"

            first = wait_until(codex_model.model_requests, timeout=WAKE_TIMEOUT, what="Codex's first model request")[0]
            body = json.dumps(first.body)
            assert SUMMARY in body and DIFF_MARKER in body and f"1. {NEXT_STEP}" in body, body[:3000]
        finally:
            assert ben.stop() == 0, ben.output()
