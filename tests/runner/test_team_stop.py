"""Stopping a role's runner that will not stop (runner/team_run.py ``stop``): after the grace,
the runner's group and its CLI's group (the runner starts its CLI in a session of its own) are
killed, so no CLI is left running without the runner that fed it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from callboard import procs
from callboard.runner.files import RunnerFiles
from callboard.runner.team import Role
from callboard.runner.team_run import stop
from tests.support.waiting import wait_until

# A stand-in runner that holds the agent's lock, starts a "CLI" in its own session, and ignores
# SIGTERM, as a runner stuck in a turn would; the CLI ignores SIGTERM too.
STUBBORN_RUNNER = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    from pathlib import Path
    from callboard.runner.files import RunnerFiles
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    files = RunnerFiles(Path(sys.argv[1]), "ws", "qa")
    files.acquire()
    cli = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
        start_new_session=True,
    )
    Path(sys.argv[2] + ".new").write_text(str(cli.pid))
    Path(sys.argv[2] + ".new").rename(sys.argv[2])  # whole or not there
    time.sleep(600)
    """
)


def test_a_runner_that_ignores_sigterm_is_killed_with_its_cli(tmp_path: Path) -> None:
    cli_pid_file = tmp_path / "cli.pid"
    runner = subprocess.Popen(
        [sys.executable, "-c", STUBBORN_RUNNER, str(tmp_path), str(cli_pid_file)], start_new_session=True
    )
    try:
        files = RunnerFiles(tmp_path, "ws", "qa")
        wait_until(lambda: cli_pid_file.exists() and files.running_pid() == runner.pid, timeout=30)
        cli_pid = int(cli_pid_file.read_text())
        assert procs.children_of(runner.pid) == [cli_pid]
        role = Role("qa", "qa", "generic:x", tmp_path, None, ())

        outcome = stop(role, files, grace=0.5)

        assert outcome.ok and outcome.message == f"killed after 0.5 s (pid {runner.pid})"
        runner.wait(timeout=10)
        wait_until(lambda: procs.process_start_time(cli_pid) is None, timeout=10)  # gone (or a zombie of init)
    finally:
        leftovers = [runner.pid] + ([int(cli_pid_file.read_text())] if cli_pid_file.exists() else [])
        for pid in leftovers:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        runner.wait(timeout=10)
