"""callboard runner status: an empty workspace lists no runner (exit 0); reports written by
runners (here through a client, as runner/reporting.py writes them) show in the table and as
JSON, filtered by agent; a report gone quiet shows as gone."""

from __future__ import annotations

import subprocess
import sys

from tests.support.cli_runner import CLI

REPORTER = """
import sys
from datetime import datetime, timedelta, UTC
from callboard.client.opening import open_client
from callboard.config import Settings
from callboard.runners import RunnerReport
agent, state, age = sys.argv[1], sys.argv[2], float(sys.argv[3])
at = datetime.now(UTC) - timedelta(seconds=age)
client = open_client(Settings.load())
client.report_runner(RunnerReport(
    agent=agent, machine="box", pid=4321, cli="generic:python me.py", cli_session_id="cs-" + agent,
    state=state, detail="mail from bob" if state == "working" else None, turns=3,
    input_tokens=1200, output_tokens=340, cost_usd=0.0123, restarts=1, started_at=at, updated_at=at))
client.close()
"""


def report(cli: CLI, agent: str, state: str, age: float = 0) -> None:
    done = subprocess.run(
        [sys.executable, "-c", REPORTER, agent, state, str(age)],
        env=cli.env(agent),
        cwd=cli.workdir,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr


def test_no_runner_is_an_empty_list(cli: CLI) -> None:
    assert cli.run_json("runner", "status", agent="carol") == []
    shown = cli.run("runner", "status", agent="carol")
    assert shown.returncode == 0 and "no runners" in shown.stdout, shown.stderr


def test_reports_show_in_the_table_and_as_json(cli: CLI) -> None:
    report(cli, "alice", "working")
    report(cli, "bob", "idle", age=3600)  # its runner stopped writing an hour ago
    listed = cli.run_json("runner", "status", agent="carol")
    assert [(r["agent"], r["state"], r["live"]) for r in listed] == [("alice", "working", True), ("bob", "idle", False)]
    assert listed[0]["cli_session_id"] == "cs-alice" and listed[0]["cost_usd"] == 0.0123
    assert [r["agent"] for r in cli.run_json("runner", "status", "bob", agent="carol")] == ["bob"]
    shown = cli.run("runner", "status", agent="carol", env={"COLUMNS": "250"})
    assert shown.returncode == 0, shown.stderr
    alice = next(line for line in shown.stdout.splitlines() if line.startswith("alice"))
    for words in ("working", "mail from bob", "generic:python me.py", "cs-alice", "1,200/340", "$0.0123"):
        assert words in alice, shown.stdout
    bob = next(line for line in shown.stdout.splitlines() if line.startswith("bob"))
    assert "gone" in bob and "silent since" in bob, shown.stdout
