"""A team of three generic agents (tests/support/generic_agents/team_member.py) started with
`callboard team up` passes a piece of work product → engineering → qa → product by messages
alone; product's final mail reaches the person who asked; `team status` shows each runner's
turns; `team down` leaves no runner or agent process behind."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import pytest

from callboard.procs import process_alive
from tests.support.cli_runner import CLI, describe
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

MEMBER = Path(__file__).parents[1] / "support" / "generic_agents" / "team_member.py"
ROLES = ("product", "engineering", "qa")


def write_team(folder: Path) -> Path:
    lines = ['[team]\nname = "relay"\nchannels = ["team"]\n']
    for role in ROLES:
        (folder / role).mkdir(parents=True)
        (folder / role / "PROMPT.md").write_text(f"You are {role}.\n")
        lines.append(
            f'[roles.{role}]\ncli = "generic:{sys.executable} {MEMBER} {role}"\n'
            f'folder = "{role}"\nprompt = "{role}/PROMPT.md"\nchannels = ["team"]\n'
        )
    (folder / "team.toml").write_text("\n".join(lines))
    return folder


def team_processes(marker: str) -> list[int]:
    """Pids of processes whose command line names this test's team folder or agent script."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def test_a_team_passes_work_round_by_messages_alone(tmp_path: Path) -> None:
    cli = CLI(tmp_path)
    team = write_team(cli.workdir / "team")
    env = {"TEAM_BOSS": "boss", "CALLBOARD_WARM": "0"}
    pids: list[int] = []
    try:
        up = cli.run("team", "up", "--team", team, "--json", env=env, timeout=90)
        assert up.returncode == 0, describe(up) + _logs(cli)
        started = json.loads(up.stdout)
        assert [(o["role"], o["ok"]) for o in started] == [(r, True) for r in ROLES]
        pids = [o["pid"] for o in started]

        token = f"tok-{uuid.uuid4().hex[:8]}"
        sent = cli.run("send", "product", f"kickoff {token}", agent="boss", env=env)
        assert sent.returncode == 0, describe(sent)

        def accepted() -> bool:
            read = cli.run_json("read", "--wait", "5", agent="boss", env=env)
            return any(
                f"accepted {token}" in (p.get("text") or "") for i in read["items"] for p in i["message"]["parts"]
            )

        wait_until(accepted, timeout=60, what=f"product's 'accepted {token}'", interval=0.05)

        status = cli.run_json("team", "status", "--team", team, env=env)
        assert {row["role"]: row["local_pid"] for row in status} == dict(zip(ROLES, pids, strict=True))
        turns = {row["role"]: row["reports"][0]["turns"] for row in status}
        assert turns["engineering"] >= 1 and turns["qa"] >= 1 and turns["product"] >= 2, turns

        down = cli.run("team", "down", "--team", team, "--json", env=env, timeout=90)
        assert down.returncode == 0, describe(down)
        assert all(o["ok"] and o["message"].startswith("stopped") for o in json.loads(down.stdout)), down.stdout
        # down returns once each runner let go of its lock, a moment before its process is reaped
        wait_until(lambda: not [p for p in pids if process_alive(p, None)], timeout=10, what="the runners to end")
        wait_until(lambda: not team_processes(str(MEMBER)), timeout=10, what="the agents' processes to end")
    finally:
        for pid in team_processes(str(team)) + team_processes(str(MEMBER)):
            os.kill(pid, 9)  # only this test's own processes (its folder or script in their command line)


def _logs(cli: CLI) -> str:
    return "".join(f"\n--- {p}\n{p.read_text()[-2000:]}" for p in cli.callboard_home.rglob("runner.log"))


def test_team_up_says_which_role_failed_and_why(tmp_path: Path) -> None:
    cli = CLI(tmp_path)
    team = cli.workdir / "team"
    team.mkdir()
    (team / "team.toml").write_text('[roles.ghost]\ncli = "generic:/nonexistent/agent-program"\n')
    up = cli.run("team", "up", "--team", team, "--json", env={"CALLBOARD_WARM": "0"}, timeout=90)
    assert up.returncode == 1, describe(up)
    [outcome] = json.loads(up.stdout)
    assert (outcome["role"], outcome["ok"]) == ("ghost", False), outcome
    assert "no such program" in outcome["message"] and "runner.log" in outcome["message"], outcome
    shown = cli.run("team", "up", "--team", team, env={"CALLBOARD_WARM": "0"}, timeout=90)
    assert shown.returncode == 1 and "failed ghost" in shown.stdout and "Traceback" not in shown.stderr, describe(shown)


def test_team_up_says_a_role_whose_program_exits_at_once_failed_with_its_status_and_last_lines(tmp_path: Path) -> None:
    cli = CLI(tmp_path)
    team = cli.workdir / "team"
    team.mkdir()
    program = "import sys; print('no API key in the environment', file=sys.stderr); sys.exit(4)"
    (team / "team.toml").write_text(f"[roles.broken]\ncli = '''generic:{sys.executable} -c \"{program}\"'''\n")
    try:
        up = cli.run("team", "up", "--team", team, "--json", env={"CALLBOARD_WARM": "0"}, timeout=90)
    finally:  # a runner that took the dead program for a live one would run on
        cli.run("team", "down", "--team", team, env={"CALLBOARD_WARM": "0"}, timeout=90)
    assert up.returncode == 1, describe(up) + _logs(cli)
    [outcome] = json.loads(up.stdout)
    assert (outcome["role"], outcome["ok"]) == ("broken", False), outcome
    assert "exited with status 4" in outcome["message"], outcome
    assert "no API key in the environment" in outcome["message"], outcome


def test_a_team_runners_log_shows_each_event_once(tmp_path: Path) -> None:
    cli = CLI(tmp_path)
    team = cli.workdir / "team"
    team.mkdir()
    echo = tmp_path / "echo.py"  # a copy: its path in a command line is this test's alone
    echo.write_text(MEMBER.with_name("echo.py").read_text())
    (team / "team.toml").write_text(f'[roles.echo]\ncli = "generic:{sys.executable} {echo}"\n')
    env = {"CALLBOARD_WARM": "0", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    try:
        up = cli.run("team", "up", "--team", team, "--json", env=env, timeout=90)
        assert up.returncode == 0, describe(up) + _logs(cli)
        assert cli.run("send", "echo", "please echo tok-once", agent="alice", env=env).returncode == 0

        def answered() -> bool:
            items = cli.run_json("inbox", agent="alice", env=env)
            return any("echo tok-once" in (p.get("text") or "") for i in items for p in i["message"]["parts"])

        wait_until(answered, timeout=60, what="the echo role's answer")

        def turn_over() -> bool:
            [row] = cli.run_json("team", "status", "--team", team, env=env)
            return bool(row["reports"]) and (row["reports"][0]["turns"], row["reports"][0]["state"]) == (1, "idle")

        wait_until(turn_over, timeout=60, what="the turn's end")  # then stopped: no turn cut short
        down = cli.run("team", "down", "--team", team, "--json", env=env, timeout=90)
        assert down.returncode == 0, describe(down)
    finally:
        for pid in team_processes(str(echo)):
            os.kill(pid, 9)
    [log] = list(cli.callboard_home.rglob("runner.log"))
    lines = log.read_text().splitlines()
    events = [line.split(" ", 1)[1] for line in lines]  # without the time stamp
    assert len(events) == len(set(events)), lines
    assert sum("mail from alice (1 message)" in e for e in events) == 1, lines
    assert events[-1] == "stopped" and not [e for e in events if "Traceback" in e], lines
