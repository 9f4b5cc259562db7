"""A CLI process that talks in JSON lines: one written per input, one read per event.

Started in a process group of its own, so ``stop`` ends it with everything it started (its MCP
servers among them). A thread reads its stdout into a queue (the adapter waits on it with a
deadline, never polling); another keeps the tail of its stderr for the log and for saying how it
ended. Lines that are not JSON objects are logged and skipped.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from switchboard.runner.adapters.base import CliExited, CliUnavailable

STDERR_TAIL = 20  # lines of stderr kept to say how the process ended
_EOF = object()


class LineProcess:
    """One started CLI; see the module's docstring."""

    def __init__(self, process: subprocess.Popen[str], log: Callable[[str], None], name: str) -> None:
        self.process = process
        self._log = log
        self._name = name
        self._events: queue.Queue[Any] = queue.Queue()
        self._ended = False
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL)
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read_stdout, name=f"{name}-stdout", daemon=True).start()
        threading.Thread(target=self._read_stderr, name=f"{name}-stderr", daemon=True).start()

    @classmethod
    def start(
        cls, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, log: Callable[[str], None], name: str
    ) -> LineProcess:
        """Start ``argv``; CliUnavailable when it cannot run at all."""
        try:
            process = subprocess.Popen(
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as error:
            raise CliUnavailable(f"cannot start {argv[0]}: {error.strerror or error}") from error
        log(f"{name} started (pid {process.pid})")
        return cls(process, log, name)

    @property
    def pid(self) -> int:
        return self.process.pid

    # --- reading ---------------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        stream: IO[str] = self.process.stdout  # type: ignore[assignment]
        for line in stream:
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if isinstance(event, dict):
                self._events.put(event)
            elif line.strip():
                self._log(f"{self._name}: {line.rstrip()[:500]}")
        self._events.put(_EOF)

    def _read_stderr(self) -> None:
        stream: IO[str] = self.process.stderr  # type: ignore[assignment]
        for line in stream:
            if line.strip():
                self._stderr.append(line.rstrip())
                self._log(f"{self._name} stderr: {line.rstrip()[:500]}")

    def next_event(self, deadline: float) -> dict[str, Any] | None:
        """The next event, or None at ``deadline`` (``time.monotonic()``) or once stdout ended."""
        if self._ended:
            return None
        try:
            event = self._events.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        if event is _EOF:
            self._ended = True
            return None
        return event

    def drain(self) -> list[dict[str, Any]]:
        """The events already read and not taken (dropped by the caller: they belong to no turn)."""
        drained = []
        while (event := self.next_event(time.monotonic())) is not None:
            drained.append(event)
        return drained

    # --- writing and ending ----------------------------------------------------------------------

    def write(self, document: Mapping[str, Any]) -> None:
        """One JSON line on stdin; CliExited when the process no longer reads it."""
        stdin = self.process.stdin
        try:
            with self._write_lock:
                assert stdin is not None
                stdin.write(json.dumps(document) + "\n")
                stdin.flush()
        except (BrokenPipeError, ValueError, OSError) as error:
            raise CliExited(self.how_it_ended()) from error

    def feed(self, text: str) -> None:
        """All of the process's input at once (a per-turn CLI's prompt), then end of input."""
        stdin = self.process.stdin
        try:
            with self._write_lock:
                assert stdin is not None
                stdin.write(text)
                stdin.close()
        except (BrokenPipeError, ValueError, OSError) as error:
            raise CliExited(self.how_it_ended()) from error

    def alive(self) -> bool:
        return self.process.poll() is None and not self._ended

    def how_it_ended(self) -> str:
        """A sentence for the log and ``runner status``: its exit status and last stderr line."""
        try:
            code = self.process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            return f"{self._name} stopped answering (pid {self.pid})"
        how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        last = f": {self._stderr[-1]}" if self._stderr else ""
        return f"{self._name} {how}{last}"

    def stop(self, grace: float) -> None:
        """Close stdin (the CLI exits after its last turn), SIGTERM its group after half of
        ``grace``, SIGKILL after the rest. Safe on a dead process."""
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        for sig, wait in ((signal.SIGTERM, grace / 2), (signal.SIGKILL, grace / 2)):
            try:
                self.process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                self._signal_group(sig)
        else:
            self.process.wait()
        self._signal_group(signal.SIGKILL)  # what it started and left behind

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
