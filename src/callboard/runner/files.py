"""A runner's local folder: ``<home>/runners/<workspace>/<agent>/``.

``runner.pid`` holds the running runner's pid under an exclusive lock for its whole life (one
runner per agent per machine: a second is refused, naming the first; a lock, unlike a bare pid
file, cannot outlive a killed runner). ``runner.log`` is what ``runner logs`` shows.
``clear.request`` is how ``callboard runner clear``, run by the CLI, asks its runner to clear.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import TextIO

from callboard.errors import NotFound, Refused, Unavailable

LOG_FILE = "runner.log"
PID_FILE = "runner.pid"
CLEAR_FILE = "clear.request"


class RunnerRunning(Refused):
    code = "runner_running"


class UnknownRunner(NotFound):
    """No runner of the agent has run on this machine (it has no log here)."""

    code = "unknown_runner"


class RunnerNotStarted(Unavailable):
    """The runner could not register its session (the store or hub refused or did not answer)."""

    code = "runner_not_started"


class RunnerFiles:
    """One agent's runner folder on this machine."""

    def __init__(self, home: Path, workspace: str, agent: str) -> None:
        self.agent = agent
        self.folder = home / "runners" / workspace / agent
        self.pid_path = self.folder / PID_FILE
        self.log_path = self.folder / LOG_FILE
        self.clear_path = self.folder / CLEAR_FILE
        self._lock: TextIO | None = None
        self._log: TextIO | None = None

    def acquire(self) -> None:
        """Hold the agent's runner lock and write our pid; RunnerRunning when another runner has it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        handle = open(self.pid_path, "a+")  # noqa: SIM115  (held open for the runner's life)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            pid = handle.read().strip() or "?"
            handle.close()
            raise RunnerRunning(
                f"a runner for {self.agent} is already running on this machine (pid {pid}); "
                f"stop it first (kill -TERM {pid})"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._lock = handle
        with contextlib.suppress(OSError):
            self.clear_path.unlink()  # a request of an earlier runner is not ours

    def release(self) -> None:
        """Give up the lock (the pid file stays, empty of meaning once unlocked)."""
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.seek(0)
                self._lock.truncate()
            self._lock.close()
            self._lock = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def running_pid(self) -> int | None:
        """The pid of the runner holding this agent's lock on this machine, or None."""
        try:
            handle = open(self.pid_path)  # noqa: SIM115
        except OSError:
            return None
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                text = handle.read().strip()
                return int(text) if text.isdigit() else None
            fcntl.flock(handle, fcntl.LOCK_UN)  # we got it: nobody runs
            return None

    def log(self, line: str) -> None:
        """Append one line to the runner's log, time-stamped (UTC)."""
        if self._log is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._log.write(f"{stamp} {line.rstrip()}\n")
        self._log.flush()

    def is_log(self, stream: object) -> bool:
        """Whether ``stream`` writes into this runner's log file (``team up`` points a runner's
        output there): a line put in the log must not be written to it a second time."""
        try:
            given = os.fstat(stream.fileno())  # type: ignore[attr-defined]  # any stream: one without a file is not the log (below)
            log = os.stat(self.log_path)
        except (OSError, ValueError, AttributeError):
            return False
        return (given.st_dev, given.st_ino) == (log.st_dev, log.st_ino)

    def request_clear(self) -> None:
        """Ask the running runner to clear its CLI's context (it looks between turns)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.clear_path.touch()

    def take_clear_request(self) -> bool:
        """Whether a clear was asked for since the last look (taking the request)."""
        try:
            self.clear_path.unlink()
        except FileNotFoundError:
            return False
        return True

    def tail(self, lines: int) -> list[str]:
        """The last ``lines`` lines of the log. Only a line feed ends one: a carriage return or
        another break a CLI printed stays in its line (and is shown escaped, not obeyed)."""
        try:
            with self.log_path.open(encoding="utf-8", errors="replace", newline="\n") as log:
                text = log.read()
        except FileNotFoundError:
            return []
        return text.removesuffix("\n").split("\n")[-lines:] if text and lines > 0 else []
