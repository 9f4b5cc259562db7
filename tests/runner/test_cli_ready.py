"""A runner is ready only when its CLI answered. A stand-in ``claude`` (a real process, found
through CALLBOARD_CLAUDE_BIN) that never answers the control requests the runner sends at its
start, or answers that our MCP server failed, is a failed start: exit 3, the reason said and
reported, never a ready line, nothing left running. A per-turn CLI whose ``--version`` fails
cannot start, saying what it printed. (The real CLIs' ready is in the runner tests of
tests/agent_clis_e2e/.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from callboard.runner.adapters.base import CliUnavailable, Launch
from callboard.runner.adapters.codex import CodexAdapter
from tests.runner.conftest import RunnerMachine
from tests.support.processes import process_gone
from tests.support.waiting import DEADLINE, scaled, wait_until

START_LIMIT = "2"  # the runner's --start-limit: the stand-in never gets ready, so the test waits this long

# Writes its pid, then each stdin line, to $STANDIN_LOG; answers nothing, and never exits on its own.
SILENT = """
import os, sys
log = open(os.environ["STANDIN_LOG"], "a", buffering=1)
log.write(f"pid {os.getpid()}\\n")
for line in sys.stdin:
    log.write(line)
import time
while True:
    time.sleep(60)
"""

# Answers each control request as Claude Code 2.1.332 does when its MCP server's process ends at once.
SERVER_FAILED = """
import json, os, sys
log = open(os.environ["STANDIN_LOG"], "a", buffering=1)
log.write(f"pid {os.getpid()}\\n")
for line in sys.stdin:
    log.write(line)
    request = json.loads(line)
    answer = {"pid": os.getpid()}
    if request["request"]["subtype"] == "mcp_status":
        answer = {"mcpServers": [{"name": "callboard", "status": "failed", "error": "Connection closed"}]}
    response = {"subtype": "success", "request_id": request["request_id"], "response": answer}
    print(json.dumps({"type": "control_response", "response": response}), flush=True)
"""


def standin(tmp_path: Path, body: str, name: str = "claude") -> Path:
    script = tmp_path / name
    script.write_text(f"#!{sys.executable}\n{body}")
    script.chmod(0o755)
    return script


def failed_start(machine: RunnerMachine, tmp_path: Path, body: str) -> tuple[str, str, list[str]]:
    """Run alice's runner on the stand-in to its end: what it printed, and what the stand-in read."""
    log = tmp_path / "standin.log"
    env = {"CALLBOARD_CLAUDE_BIN": str(standin(tmp_path, body)), "STANDIN_LOG": str(log), "CALLBOARD_WARM": "0"}
    proc = machine.cli.spawn("run", "--agent", "rbot", "--cli", "claude", "--start-limit", START_LIMIT, env=env)
    try:
        code = proc.wait(timeout=scaled(DEADLINE))
    finally:
        proc.kill()
    out, err = proc.communicate()
    assert code == 3, (code, out, err)
    lines = log.read_text().splitlines()
    pid = int(lines[0].removeprefix("pid "))
    wait_until(lambda: process_gone(pid), what="the stand-in ended with the failed start")
    return out, err, lines[1:]


def test_a_claude_that_never_answers_its_initialize_request_is_a_failed_start(
    machine: RunnerMachine, tmp_path: Path
) -> None:
    out, err, read = failed_start(machine, tmp_path, SILENT)
    assert [json.loads(line)["request"] for line in read] == [{"subtype": "initialize"}], read  # asked, once
    assert "running " not in out, out  # never said ready
    said = f"was not ready within {START_LIMIT} s: no answer to its initialize request"
    assert "did not start" in err and said in err, err
    assert "respawning" not in err and "Traceback" not in err, err
    (report,) = machine.reports()
    assert report.state == "crashed" and said in (report.detail or ""), report


def test_a_claude_whose_mcp_server_failed_is_a_failed_start(machine: RunnerMachine, tmp_path: Path) -> None:
    out, err, read = failed_start(machine, tmp_path, SERVER_FAILED)
    assert [json.loads(line)["request"]["subtype"] for line in read] == ["initialize", "mcp_status"], read
    assert "running " not in out, out
    said = "its MCP server 'callboard' did not connect (failed: Connection closed)"
    assert "did not start" in err and said in err and "Traceback" not in err, err
    (report,) = machine.reports()
    assert report.state == "crashed" and said in (report.detail or ""), report


def test_a_per_turn_cli_whose_version_fails_cannot_start(tmp_path: Path) -> None:
    broken = standin(tmp_path, "import sys\nsys.exit('codex: cannot load its native binary')\n", "codex")
    lines: list[str] = []
    launch = Launch(
        agent="alice", cwd=tmp_path, env={"CALLBOARD_CODEX_BIN": str(broken)}, mcp_server={}, log=lines.append
    )
    with pytest.raises(CliUnavailable) as failed:
        CodexAdapter().start(launch)
    said = str(failed.value)
    assert said.startswith("Codex does not run: --version: codex (pid"), said
    assert said.endswith("exited with status 1: codex: cannot load its native binary"), said
