"""Claude Code's per-turn hooks exit in their shell, before any Python starts, while the
session's own ``callboard mcp`` delivers every new message into its socket (it holds the
session's DeliveryClaim); otherwise they run ``callboard hook …`` as before, stdin and all.

The hook command is run as Claude Code runs it (``sh -c <command>``), with a stand-in for the
callboard program that records its arguments and stdin; the claim is held by a real process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from callboard.integrations.hooks.state import DeliveryClaim, delivering
from callboard.integrations.install.install_plans import fast_hook_command
from tests.support.waiting import wait_until

SESSION_PID = 4242  # the Claude Code process the socket is named after
HOLDER = """
import sys, time
from pathlib import Path
from callboard.integrations.hooks.state import DeliveryClaim
claim = DeliveryClaim(Path(sys.argv[1]), int(sys.argv[2]), 77)
claim.hold(True)
print("held", flush=True)
sys.stdin.readline()
claim.hold(False)
print("released", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    """Stands in for callboard: writes its arguments and stdin to ran.json."""
    script = tmp_path / "callboard"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'stdin': sys.stdin.read()}}, open({str(tmp_path / 'ran.json')!r}, 'w'))\n"
    )
    script.chmod(0o755)
    return script


def run_hook(tmp_path: Path, program: Path, env: dict[str, str]) -> dict | None:
    """Run the prompt hook as Claude Code does; what the program got (None: it did not run)."""
    ran = tmp_path / "ran.json"
    ran.unlink(missing_ok=True)
    command = fast_hook_command([str(program)], "prompt", "claude", tmp_path / "default-home")
    proc = subprocess.run(
        ["sh", "-c", command], input='{"hook_event_name": "UserPromptSubmit"}', env=env, text=True, timeout=30
    )
    assert proc.returncode == 0
    return json.loads(ran.read_text()) if ran.exists() else None


def hook_env(home: Path, socket: str | None) -> dict[str, str]:
    env = {"PATH": os.environ["PATH"], "CALLBOARD_HOME": str(home)}
    if socket is not None:
        env["CLAUDE_CODE_MESSAGING_SOCKET"] = socket
    return env


def test_without_a_claim_the_hook_runs_callboard_with_its_arguments_and_stdin(tmp_path: Path, program: Path):
    home = tmp_path / "home"
    for socket in (None, f"/tmp/cc-socks/{SESSION_PID}.sock", "/tmp/custom/inbox.sock"):
        got = run_hook(tmp_path, program, hook_env(home, socket))
        assert got == {
            "argv": ["hook", "prompt", "--client", "claude"],
            "stdin": '{"hook_event_name": "UserPromptSubmit"}',
        }


def test_while_the_server_delivers_the_hook_exits_without_starting_callboard(tmp_path: Path, program: Path):
    home = tmp_path / "home"
    env = hook_env(home, f"/tmp/cc-socks/{SESSION_PID}.sock")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home), str(SESSION_PID)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        assert delivering(home, SESSION_PID, 77)
        assert run_hook(tmp_path, program, env) is None
        # Another session's hooks (another pid) still run.
        assert run_hook(tmp_path, program, hook_env(home, "/tmp/cc-socks/4243.sock")) is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"  # it left a message to the hooks
        assert run_hook(tmp_path, program, env) is not None
    finally:
        holder.kill()
        holder.wait()


def test_a_claim_whose_holder_died_does_not_silence_the_hooks(tmp_path: Path, program: Path):
    home = tmp_path / "home"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home), str(SESSION_PID)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == b"held"
    holder.kill()  # SIGKILL: the claim's file stays, its lock goes
    holder.wait()
    assert wait_until(lambda: not delivering(home, SESSION_PID, 77), timeout=10)
    assert any((home / "pushers").glob(f"{SESSION_PID}-*.delivering"))
    assert run_hook(tmp_path, program, hook_env(home, f"/tmp/cc-socks/{SESSION_PID}.sock")) is not None


def test_the_claim_is_taken_and_dropped_in_one_process(tmp_path: Path):
    claim = DeliveryClaim(tmp_path, SESSION_PID, None)
    claim.hold(True)
    claim.hold(True)  # again: still one lock
    assert delivering(tmp_path, SESSION_PID, None)  # flock: another descriptor is refused, even in this process
    claim.hold(False)
    assert not (tmp_path / "pushers" / f"{SESSION_PID}-0.delivering").exists()
