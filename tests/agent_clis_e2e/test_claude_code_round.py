"""A live Claude Code session takes part in a round with its tools.

``callboard coordinate`` (a real process, acting as lead) puts a goal to alice, bob and carol with
a quorum of 2. alice is a real Claude Code session (the current version, from npm) running
headless with its stdin left open and ``callboard mcp`` as its server, against the mock model;
nobody types anything to it: each phase task's mail goes into its messaging socket and the idle
session starts a turn. Its model does what the phase prompt and the task's mail say: it completes
the proposal task with its answer as an artifact, and the vote task saying "vote: AGENT, why"
(the ``update_task`` tool, which acts as alice). bob and carol are scripted agents on the same
store: each proposes, carol votes for herself and bob for himself, so the round is decided only by
alice's vote for bob. The round's record (``round show --json``) holds alice's proposal and vote,
by alice, and the decision.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from callboard.client.local import LocalClient
from callboard.model import Part
from callboard.requests import RoundProposal, RoundVote
from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, TEST_TIMEOUT, LiveCli, Machine
from tests.support.cli_runner import CALL_TIMEOUT, isolated_env
from tests.support.live_claude_code import SERVER, start_session
from tests.support.mock_model import MockModel, Recorded
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]

GOAL = "How do we stop the flaky deploys?"
ALICE_PLAN = "ALICE-PLAN: pin the base image and retry the registry pull."
BOB_PLAN = "BOB-PLAN: put a queue in front of the deploy job."
CAROL_PLAN = "CAROL-PLAN: deploy at night."
ALICE_WHY = "a queue removes the race, the cause"
# One task's mail, as fence.py writes it: its task line, then the sender's words between markers.
TASK_MAIL = re.compile(r"task: (\S+?),[^\n]*\n----- BEGIN MESSAGE (\S+) -----\n(.*?)\n----- END MESSAGE \2 -----", re.S)
PHASE = re.compile(r"Round \S+, epoch \d+, (proposal|vote) phase")
# How a phase prompt says a participant answers without the command line, and how a task's mail
# names the tool its worker answers with (service/rounds.py, fence.py): what the model follows.
ANSWERS = {
    "proposal": "complete this task with it as an artifact",
    "vote": "complete this task saying: vote: AGENT, and why",
}
TOOL_NAMED = "its worker answers with the update_task tool"


def phase_tasks(text: str) -> list[tuple[str, str]]:
    """The round phase tasks in the mail of ``text`` whose prompt says how to answer with the
    task, oldest first: (task id, phase)."""
    found = []
    for task in TASK_MAIL.finditer(text):
        phase = PHASE.search(task.group(3))
        if phase is not None and TOOL_NAMED in task.group(0) and ANSWERS[phase.group(1)] in task.group(3):
            found.append((task.group(1), phase.group(1)))
    return found


def answer_the_phase(request: Recorded) -> dict[str, Any] | None:
    """What the scripted model does with a request: the newest phase task in front of it is
    answered as its mail says, with update_task (completed): a proposal with the plan as an
    artifact, a vote saying "vote: bob, why". Anything else is left alone."""
    asked = phase_tasks(request.conversation_text())
    if not asked:
        return None
    task_id, phase = asked[-1]
    if phase == "proposal":
        artifact = {"text": ALICE_PLAN, "filename": "plan.md", "media_type": "text/markdown"}
        return {"task_id": task_id, "state": "completed", "message": "My proposal.", "artifacts": [artifact]}
    return {"task_id": task_id, "state": "completed", "message": f"vote: bob, {ALICE_WHY}"}


def callboard(machine: Machine, agent: str, *args: str) -> subprocess.Popen[str]:
    """``callboard ARGS`` as ``agent`` on the machine's store, started (its output: pipes)."""
    env = isolated_env(machine.home, machine.callboard_home, {"CALLBOARD_AGENT": agent, "CLAUDE_CONFIG_DIR": None})
    return subprocess.Popen(
        [sys.executable, "-m", "callboard", *args],
        env=env,
        cwd=machine.workdir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextmanager
def coordinating(machine: Machine, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``callboard coordinate ARGS --json`` as lead, running; killed if it still runs at the end."""
    process = callboard(machine, "lead", "coordinate", *args, "--json")
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def my_turn(client: LocalClient, todo: str) -> str | None:
    """The id of the round where it is ``client``'s agent's turn to ``todo`` (propose, vote)."""
    return next((info.id for info in client.list_rounds() if info.mine == todo), None)


def told(condition: Callable[[], object], what: str, model: MockModel, session: LiveCli) -> object:
    """``wait_until`` the condition; a failure says what the model and the session saw by then."""
    try:
        return wait_until(condition, timeout=RUN_TIMEOUT, what=what)
    except pytest.fail.Exception as failed:
        pytest.fail(f"{failed}\n{model.summary()}\n{session.transcript()[-4000:]}")


def round_record(machine: Machine, round_id: str) -> dict[str, Any]:
    """``callboard round show ID --json``, as the coordinator."""
    shown = callboard(machine, "lead", "round", "show", round_id, "--json")
    stdout, stderr = shown.communicate(timeout=CALL_TIMEOUT)
    assert shown.returncode == 0, stderr
    return json.loads(stdout)


def test_a_live_claude_code_session_proposes_and_votes_in_a_round_with_its_tools(
    claude_code_current: Path, machine: Machine, socket_tmp: Path
):
    with MockModel(tool_input=answer_the_phase, tool="update_task", final_text="Answered.") as model:
        # alice's tools are allowed without a prompt, as a user allows them
        session = start_session(
            claude_code_current, machine, model, socket_tmp, args=("--allowedTools", f"mcp__{SERVER}__update_task")
        )
        with (
            coordinating(machine, "--goal", GOAL, "--agents", "alice,bob,carol", "--quorum", "2") as coordinator,
            machine.client("bob") as bob,
            machine.client("carol") as carol,
        ):
            round_id = wait_until(lambda: my_turn(bob, "propose"), timeout=RUN_TIMEOUT, what="the proposal phase")
            for agent, plan in ((bob, BOB_PLAN), (carol, CAROL_PLAN)):
                assert agent.propose(round_id, RoundProposal(parts=[Part(text=plan)])).accepted

            # The vote phase begins only once alice proposed: every participant has to.
            told(lambda: my_turn(bob, "vote"), "alice's proposal", model, session)
            assert carol.vote(round_id, RoundVote(endorse="carol", reason="mine")).accepted
            assert bob.vote(round_id, RoundVote(endorse="bob", reason="mine")).accepted

            # One endorsement each so far: only alice's vote reaches the quorum.
            told(lambda: coordinator.poll() is not None, "the round's decision (alice's vote)", model, session)
            stdout, stderr = coordinator.communicate()
        assert coordinator.returncode == 0, stderr
        decided = json.loads(stdout)
        assert decided["round_id"] == round_id and decided["decision"]["choice"] == "bob", decided

        record = round_record(machine, round_id)
        assert record["phase"] == "decided", record
        by_alice = [e for e in record["events"] if e["agent"] == "alice"]
        assert [e["kind"] for e in by_alice] == ["proposal", "vote"], record["events"]
        proposal, vote = by_alice
        assert [p.get("text") for p in proposal["content"]] == [ALICE_PLAN], proposal
        assert (vote["epoch"], vote["choice"], vote["reason"]) == (0, "bob", ALICE_WHY), vote
        decision = record["decision"]
        assert (decision["choice"], decision["endorsements"], decision["forced"]) == ("bob", 2, False), decision
        assert [e for e in record["events"] if e["kind"] in ("refused", "absent")] == [], record["events"]

        # Through its own tool, in turns nobody typed: the tasks' mail woke the session.
        assert model.offered_tool() == f"mcp__{SERVER}__update_task"
        assert model.requests_mentioning(f"Round {round_id}, epoch 0, vote phase"), model.summary()
        assert session.close() == 0
