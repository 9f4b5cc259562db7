"""Rounds through the real CLI on the embedded store: ``coordinate`` follows a round to its
decision while the participants propose and vote with ``round``, printing each event and writing
the decision; a refusal exits 1 with its code and is kept in ``round show``; a phase past its
deadline ends with the absentee recorded; bad options open nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runner import CALL_TIMEOUT, CLI, describe, expect_error
from tests.support.waiting import scaled, wait_until


def _finished(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=scaled(CALL_TIMEOUT))
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _open_round(cli: CLI, agent: str) -> dict[str, Any]:
    def listed() -> dict[str, Any] | None:
        rounds = cli.run_json("round", "list", agent=agent)
        return rounds[0] if rounds else None

    found = wait_until(listed, what=f"a round {agent} takes part in")
    assert found is not None
    return found


def test_coordinate_converges_on_the_endorsed_proposal_and_writes_it(cli: CLI, tmp_path: Path) -> None:
    decision = tmp_path / "decision.txt"
    waiting = cli.spawn(
        "coordinate", "--goal", "pick the simplest", "--agents", "ana,ben,cai", "--quorum", "2",
        "--out", decision, "--json", agent="lead",
    )  # fmt: skip
    info = _open_round(cli, "ana")
    assert (info["epoch"], info["phase"], info["mine"]) == (0, "proposal", "propose")
    for agent in ("ana", "ben", "cai"):
        proposal = tmp_path / f"{agent}.txt"
        proposal.write_text(f"solution by {agent}\n")
        cli.run_json("round", "propose", info["id"], "--file", proposal, agent=agent)
    refused = cli.run("round", "propose", info["id"], "--file", tmp_path / "ana.txt", agent="ana")
    assert refused.returncode == 1 and "refused: wrong_phase: " in refused.stderr, describe(refused)
    cli.run_json("round", "vote", info["id"], "--for", "ana", "--reason", "simplest", agent="ben")
    cli.run_json("round", "vote", info["id"], "--for", "ana", agent="cai")
    done = _finished(waiting)
    assert done.returncode == 0, describe(done)
    document = json.loads(done.stdout)
    assert document["round_id"] == info["id"] and document["decision"]["choice"] == "ana"
    assert decision.read_text() == "solution by ana\n"
    assert "ben voted for ana (simplest)" in done.stderr and "ana's proposal refused: wrong_phase" in done.stderr
    shown = cli.run_json("round", "show", info["id"], agent="ben")
    kinds = [e["kind"] for e in shown["events"]]
    assert kinds.count("proposal") == 3 and kinds.count("vote") == 2 and kinds.count("refused") == 1
    assert shown["decision"]["endorsements"] == 2 and shown["phase"] == "decided"
    human = cli.run("round", "show", info["id"], agent="lead")
    assert "decision: ana's proposal, endorsed by 2 (quorum 2)" in human.stdout, describe(human)
    assert cli.run_json("round", "list", agent="ana") == []  # nothing open
    assert cli.run_json("round", "list", "--all", agent="ana")[0]["phase"] == "decided"


def test_a_value_round_is_decided_by_the_median(cli: CLI, tmp_path: Path) -> None:
    waiting = cli.spawn(
        "coordinate", "--goal", "estimate in days", "--agents", "ana,ben,cai", "--kind", "value",
        "--out", tmp_path / "estimate", agent="lead",
    )  # fmt: skip
    info = _open_round(cli, "ana")
    for agent, days in (("ana", "3"), ("ben", "8")):
        cli.run_json("round", "propose", info["id"], "--value", days, agent=agent)
    done = _finished(waiting)
    assert done.returncode == 0, describe(done)
    assert "5.5, the median of 2 proposals" in done.stdout
    assert (tmp_path / "estimate").read_text() == "5.5\n"


def test_a_participant_who_never_answers_is_recorded_absent(cli: CLI, tmp_path: Path) -> None:
    """ana proposes within the phase (8 s, scaled: a CLI call on a loaded machine takes seconds);
    ben never answers, and each phase ends at its deadline without him."""
    waiting = cli.spawn(
        "coordinate", "--goal", "g", "--agents", "ana,ben", "--quorum", "1", "--max-rounds", "1",
        "--phase-timeout", f"{scaled(8):g}", "--json", agent="lead",
    )  # fmt: skip
    info = _open_round(cli, "ana")
    proposal = tmp_path / "p.txt"
    proposal.write_text("mine")
    cli.run_json("round", "propose", info["id"], "--file", proposal, agent="ana")
    done = _finished(waiting)  # ben never proposes nor votes: the deadlines end each phase
    assert done.returncode == 0, describe(done)
    document = json.loads(done.stdout)
    absent = [(e["agent"], e["phase"]) for e in document["round"]["events"] if e["kind"] == "absent"]
    assert ("ben", "proposal") in absent
    assert document["decision"]["choice"] == "ana"


@pytest.mark.parametrize(
    "args",
    [
        ["coordinate", "--goal", "g", "--agents", "ana,ben", "--quorum", "3"],
        ["coordinate", "--goal", "g", "--agents", "ana,ana"],
        ["coordinate", "--goal", "g", "--agents", "ana", "--kind", "poll"],
        ["coordinate", "--goal", "g", "--agents", "ana", "--phase-timeout", "0"],
        ["coordinate", "--goal", "g", "--agents", "ana", "--channel", "nowhere"],
    ],
)
def test_a_round_that_cannot_be_opened_opens_nothing(cli: CLI, args: list[str]) -> None:
    expect_error(cli.run(*args, agent="lead"), "bad_request", as_json=False)
    assert cli.run_json("round", "list", "--all", agent="lead") == []
    assert cli.run_json("task", "list", agent="ana")["tasks"] == []


def test_round_commands_refuse_what_they_cannot_do(cli: CLI, tmp_path: Path) -> None:
    expect_error(
        cli.run("round", "show", "01a2364b-4cd9-70b4-9090-93301124e4c0", agent="ana"), "unknown_round", as_json=False
    )
    expect_error(
        cli.run("round", "propose", "r", agent="ana"), "bad_request", as_json=False
    )  # neither --file nor --value
    expect_error(
        cli.run("round", "propose", "r", "--file", tmp_path / "missing", agent="ana"), "bad_request", as_json=False
    )
