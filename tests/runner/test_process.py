"""CliProcess: a real child program, read and written line by line, ended as a group."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from callboard.runner.adapters.base import CliExited, CliUnavailable
from callboard.runner.process import CliProcess
from tests.support.waiting import scaled

pytestmark = pytest.mark.e2e

ECHO = "import sys\nfor line in sys.stdin:\n    print('got ' + line.strip(), flush=True)\n"


def _python(code: str, tmp_path: Path, **kwargs) -> CliProcess:
    return CliProcess([sys.executable, "-c", code], cwd=tmp_path, env=dict(os.environ), **kwargs)


def _line(proc: CliProcess, timeout: float = 10.0) -> str | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.next_line(0.2)
        if line is not None:
            return line
    return None


def test_lines_go_in_and_come_out(tmp_path: Path) -> None:
    proc = _python(ECHO, tmp_path)
    proc.write_line("hello")
    assert _line(proc) == "got hello"
    assert proc.next_line(0.05) is None  # nothing more said
    proc.close_stdin()
    with pytest.raises(CliExited, match="exited with status 0"):
        _line(proc)
    assert not proc.alive()


def test_exit_says_status_and_stderr_tail(tmp_path: Path) -> None:
    logged: list[str] = []
    proc = _python("import sys\nsys.stderr.write('boom here\\n')\nsys.exit(4)", tmp_path, log=logged.append)
    with pytest.raises(CliExited, match="status 4: boom here"):
        _line(proc)
    assert any("boom here" in line for line in logged)


def test_missing_program_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(CliUnavailable, match="no such program"):
        CliProcess(["no-such-cli-xyz"], cwd=tmp_path, env=dict(os.environ))
    with pytest.raises(CliUnavailable, match="does not exist"):
        CliProcess([sys.executable], cwd=tmp_path / "nope", env=dict(os.environ))


def test_terminate_kills_the_group_after_grace(tmp_path: Path) -> None:
    # The program ignores SIGTERM and has a child: both are gone after terminate.
    code = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = _python(code, tmp_path, stdin=False)
    child = int(_line(proc) or 0)
    started = time.monotonic()
    status = proc.terminate(grace=0.5)
    assert time.monotonic() - started < scaled(20)  # the grace and a kill, not the program's own 60 s
    assert status == -9
    assert not proc.alive()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _exists(child):
        time.sleep(0.02)
    assert not _exists(child)
    with pytest.raises(CliExited, match="SIGKILL"):
        _line(proc)


def test_write_to_dead_process_is_cli_exited(tmp_path: Path) -> None:
    proc = _python("pass", tmp_path)
    proc.wait(10)
    with pytest.raises(CliExited):
        for _ in range(50):  # the pipe may take a write or two to report the broken end
            proc.write_line("x" * 65536)


def _exists(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
