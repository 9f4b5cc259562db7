"""Running a team on this machine: its agents and channels made ready, one detached
``callboard run`` per role started and seen reporting, stopped, woken, looked at.

A role's runner is found again by its lock file (runner/files.py: ``runner.pid``), not by a
list kept here: a runner started by hand, or by another ``team up``, is the same runner.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from callboard import procs
from callboard.client.base import Client
from callboard.errors import AlreadyExists, CallboardError
from callboard.limits import RUNNER_START_LIMIT_SECONDS
from callboard.runner.files import RunnerFiles
from callboard.runner.team import Role, Team
from callboard.runners import RunnerReport

# For a runner to report its CLI up: its CLI's whole start limit (a runner whose CLI is not ready
# by then ends, saying why), and time for the runner's own start and report around it.
START_SECONDS = RUNNER_START_LIMIT_SECONDS + 30.0
UP_STATES = ("idle", "working", "sleeping")
STOP_GRACE_SECONDS = 20.0  # after SIGTERM (the runner gives its CLI --grace, 10 s, of this)
LOOK_SECONDS = 0.1  # between looks at a starting or stopping runner (another process: no signal to wait on)
LOG_TAIL = 2  # lines of a failed runner's log quoted in its outcome


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one role's runner: ``ok`` and its pid, or why not."""

    role: str
    agent: str
    ok: bool
    pid: int | None
    message: str


def prepare(client: Client, team: Team, roles: Sequence[Role]) -> None:
    """Each role's agent exists and is a member of its channels (made when missing)."""
    for role in roles:
        try:
            client.create_agent(role.agent, f"{team.name}: {role.name}")
        except AlreadyExists:
            pass
        acting = client.as_agent(role.agent)
        try:
            for channel in role.channels:
                try:
                    acting.create_channel(channel, f"{team.name}'s #{channel}")
                except AlreadyExists:
                    acting.join_channel(channel)
        finally:
            if acting is not client:
                acting.close()


def start(role: Role, files: RunnerFiles, db: str | None) -> subprocess.Popen[bytes]:
    """Start ``callboard run`` for the role, detached (its own session). It writes its own log;
    its stderr goes there too, for what only a dying process says (the runner, seeing that, does
    not write its log lines to it a second time), and its ready line, for a terminal, nowhere."""
    argv = [sys.executable, "-m", "callboard", "run", "--agent", role.agent, "--cli", role.cli]
    argv += ["--cwd", str(role.folder)]
    if role.prompt is not None:
        argv += ["--prompt-file", str(role.prompt)]
    if role.every is not None:
        argv += ["--every", f"{role.every:g}"]
    if role.turn_limit is not None:
        argv += ["--turn-limit", f"{role.turn_limit:g}"]
    if db is not None:
        argv += ["--db", db]
    env = {k: v for k, v in os.environ.items() if k != "CALLBOARD_SESSION"}  # its session is its own
    role.folder.mkdir(parents=True, exist_ok=True)
    files.folder.mkdir(parents=True, exist_ok=True)
    with open(files.log_path, "ab") as log:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
            cwd=role.folder,
            start_new_session=True,
        )


def seen_reporting(
    role: Role, process: subprocess.Popen[bytes], reports: Callable[[str], list[RunnerReport]], files: RunnerFiles
) -> Outcome:
    """Wait until the started runner reports its CLI up (idle, working or sleeping), or says it
    crashed, or exits, or START_SECONDS pass."""
    deadline = time.monotonic() + START_SECONDS
    while True:
        code = process.poll()
        if code is not None:
            return _failed(role, process.pid, f"exited with status {code}", files)
        try:
            mine = [r for r in reports(role.agent) if r.pid == process.pid]
        except CallboardError as error:  # the store or hub away for a moment: look again
            last = error.message
        else:
            last = f"its last report: {mine[0].state}" if mine else "no report yet"
            if mine and mine[0].state in UP_STATES:
                return Outcome(role.name, role.agent, True, process.pid, f"running (pid {process.pid})")
            if mine and mine[0].state in ("crashed", "stopping", "stopped"):
                return _failed(role, process.pid, f"{mine[0].state}: {mine[0].detail or 'no reason given'}", files)
        if time.monotonic() > deadline:
            return _failed(role, process.pid, f"not up after {START_SECONDS:g} s ({last})", files)
        time.sleep(LOOK_SECONDS)


def stop(role: Role, files: RunnerFiles, grace: float = STOP_GRACE_SECONDS) -> Outcome:
    """SIGTERM the role's runner on this machine, wait for it to end, SIGKILL it and its CLI after ``grace``."""
    pid = files.running_pid()
    if pid is None:
        return Outcome(role.name, role.agent, True, None, "not running")
    _signal(pid, signal.SIGTERM)
    if _ended(files, grace):
        return Outcome(role.name, role.agent, True, pid, f"stopped (pid {pid})")
    # team up made the runner a group leader, and the runner made its CLI one: both groups go.
    for group in [pid, *procs.children_of(pid)]:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            _signal(group, signal.SIGKILL)
    if _ended(files, 5.0):
        return Outcome(role.name, role.agent, True, pid, f"killed after {grace:g} s (pid {pid})")
    return Outcome(role.name, role.agent, False, pid, f"pid {pid} would not die")


def _ended(files: RunnerFiles, within: float) -> bool:
    deadline = time.monotonic() + within
    while files.running_pid() is not None:  # its lock is released when its process is gone
        if time.monotonic() > deadline:
            return False
        time.sleep(LOOK_SECONDS)
    return True


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _failed(role: Role, pid: int, why: str, files: RunnerFiles) -> Outcome:
    tail = " | ".join(files.tail(LOG_TAIL))
    where = f"; its log {files.log_path}" + (f" ends: {tail}" if tail else "")
    return Outcome(role.name, role.agent, False, pid, f"{why}{where}")


def role_files(home: Path, workspace: str, role: Role) -> RunnerFiles:
    return RunnerFiles(home, workspace, role.agent)
