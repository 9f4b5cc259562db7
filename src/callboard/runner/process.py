"""A CLI's process as a runner holds it: started in its own process group, read line by line.

Adapters build on ``CliProcess``: it starts the program (a missing executable is
``CliUnavailable``, a sentence, not a traceback), reads its stdout on a thread into a queue so
a turn can wait on the next line with a deadline, sends its stderr to the runner's log while
keeping a short tail (said when the process dies), and ends the whole group it started — the
CLI and whatever it spawned (MCP servers, tools) — SIGTERM first, SIGKILL after a grace.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from callboard.runner.adapters.base import CliExited, CliUnavailable

_EOF = object()  # the stdout reader's last word: nothing more will come


class CliProcess:
    """One running CLI program: its stdout as lines, its stdin as lines, its group to end."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | str,
        env: Mapping[str, str],
        stdin: bool = True,
        log: Callable[[str], None] = lambda line: None,
        tail: int = 20,
    ) -> None:
        if not argv:
            raise CliUnavailable("no command to start: the CLI's command line is empty")
        self.argv = list(argv)
        self._log = log
        self._lines: queue.Queue[object] = queue.Queue()
        self._stderr_tail: deque[str] = deque(maxlen=tail)
        self._proc = _spawn(self.argv, Path(cwd), env, stdin)
        self._stdin_lock = threading.Lock()
        self._stdout_reader = _thread(self._read_stdout, f"cli-stdout-{self.pid}")
        self._stderr_reader = _thread(self._read_stderr, f"cli-stderr-{self.pid}")

    @property
    def pid(self) -> int:
        """The program's pid (also its process group's id)."""
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the program ended (negative: the signal that killed it)."""
        return self._proc.poll()

    def alive(self) -> bool:
        """Whether the program is still running."""
        return self._proc.poll() is None

    def stderr_tail(self) -> list[str]:
        """The last lines the program wrote to stderr."""
        return list(self._stderr_tail)

    def next_line(self, timeout: float) -> str | None:
        """The next stdout line (without its newline), or None when none came within ``timeout``
        seconds. Raises CliExited once the program's output ended and every line was read."""
        try:
            item = self._lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None
        if isinstance(item, str):  # a line; else _EOF
            return item
        self._lines.put(_EOF)  # keep saying it to later calls
        # stdout closed: the program is ending; give it the rest of the timeout to be reaped.
        try:
            self._proc.wait(timeout=max(0.05, timeout))
        except subprocess.TimeoutExpired:
            return None  # it closed stdout but lives on; the caller decides
        raise CliExited(self.exit_description())

    def exit_description(self) -> str:
        """How the program ended, with its last stderr lines: one text for the log and status."""
        self._stderr_reader.join(timeout=1.0)  # the tail is complete once stderr is drained
        code = self._proc.poll()
        name = Path(self.argv[0]).name
        if code is None:
            said = f"{name} (pid {self.pid}) is still running"
        elif code < 0:
            said = f"{name} (pid {self.pid}) was killed by {_signal_name(-code)}"
        else:
            said = f"{name} (pid {self.pid}) exited with status {code}"
        tail = self.stderr_tail()[-5:]
        return said + (": " + " | ".join(tail) if tail else "")

    def write_line(self, text: str) -> None:
        """Send one line to the program's stdin. Raises CliExited when it no longer reads."""
        if self._proc.stdin is None:
            raise CliExited(f"{Path(self.argv[0]).name} was started without stdin")
        with self._stdin_lock:
            try:
                self._proc.stdin.write(text.rstrip("\n") + "\n")
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:
                raise CliExited(f"{self.exit_description()} (its stdin is closed: {exc})") from exc

    def close_stdin(self) -> None:
        """End the program's input (EOF); safe to call twice."""
        if self._proc.stdin is not None:
            with self._stdin_lock, contextlib.suppress(OSError, ValueError):
                self._proc.stdin.close()

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds for the program to end; its status, or None."""
        try:
            return self._proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None

    def terminate(self, grace: float) -> int | None:
        """End the program's whole group: SIGTERM, then SIGKILL after ``grace`` seconds; waits
        for the program. Safe on a dead process. Returns its exit status."""
        if self.alive():
            _signal_group(self.pid, signal.SIGTERM)
            if self.wait(grace) is None:
                self._log(f"{Path(self.argv[0]).name} (pid {self.pid}) ignored SIGTERM for {grace:g} s: killing it")
        # SIGKILL the group even when the leader went: what it started must not outlive it.
        _signal_group(self.pid, signal.SIGKILL)
        code = self.wait(5.0)
        self.close_stdin()
        self._stdout_reader.join(timeout=1.0)
        self._stderr_reader.join(timeout=1.0)
        return code

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        try:
            for line in self._proc.stdout:
                self._lines.put(line.rstrip("\r\n"))
        except (OSError, ValueError):
            pass  # the pipe went with the process
        finally:
            self._lines.put(_EOF)

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        name = Path(self.argv[0]).name
        try:
            for raw in self._proc.stderr:
                line = raw.rstrip("\r\n")
                if not line:
                    continue
                self._stderr_tail.append(line)
                self._log(f"{name} stderr: {line}")
        except (OSError, ValueError):
            pass


def _spawn(argv: list[str], cwd: Path, env: Mapping[str, str], stdin: bool) -> subprocess.Popen[str]:
    """Start ``argv`` in its own session (so its group can be ended as one), or say why not."""
    if not cwd.is_dir():
        raise CliUnavailable(f"cannot start {argv[0]}: the working folder {cwd} does not exist")
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise CliUnavailable(f"cannot start {argv[0]}: no such program (install it or put it on PATH)") from exc
    except PermissionError as exc:
        raise CliUnavailable(f"cannot start {argv[0]}: not executable ({exc.strerror})") from exc
    except OSError as exc:
        raise CliUnavailable(f"cannot start {argv[0]}: {exc.strerror or exc}") from exc


def _thread(target: Callable[[], None], name: str) -> threading.Thread:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def deadline_left(deadline: float) -> float:
    """Seconds until ``deadline`` (a ``time.monotonic()`` value), never negative."""
    return max(0.0, deadline - time.monotonic())
