"""``--cli generic:CMD``: any program that speaks newline-delimited JSON on stdin/stdout.

CMD is split like a shell would (shlex) and started once, in the runner's ``--cwd``, with the
runner's environment plus ``CALLBOARD_AGENT``, ``CALLBOARD_SESSION`` and
``CALLBOARD_RUNNER`` (so any ``callboard`` command it runs acts as the agent in the runner's
session). It stays up across turns (warm). One JSON object per line, both ways; lines that are
not JSON objects and unknown ``type`` values are ignored (logged), so the protocol can grow.

runner → program
  {"type": "prompt", "id": "<turn id>", "text": "<the mail, fenced, or a tick's text>"}
  {"type": "clear"}   the runner is about to start a fresh program (no resume); optional to heed
  {"type": "stop"}    then stdin closes: exit (SIGTERM, then SIGKILL, after the runner's grace)

program → runner
  {"type": "ready"}   optional, at start: the program is up and reads prompts (see below)
  {"type": "done", "id": "<turn id>", "usage"?: {"input_tokens", "output_tokens", "cost_usd"},
   "clear"?: true}    the turn ended (clear: a unit of work is finished: start fresh next)
  {"type": "took", "id": "<turn id>"}   optional: the input is taken (mail marked surfaced now,
                                        not at done)
  {"type": "session", "id": "<its own session id>"}   optional: a respawn after a crash passes
                                        it back in env CALLBOARD_RUNNER_RESUME
  {"type": "failed", "id": "<turn id>", "text": "why"}   optional: the turn failed
  {"type": "log", "text": "..."}       a line for the runner's log

A program has started when it answers: its first line that is a JSON object (``ready`` is the
line for it; ``session`` or ``log`` say as much). One that says nothing before its first prompt is
taken as started once it has run QUIET_START_SECONDS. One that ends before either never started
(CliExited from ``start``, saying its exit status and its last lines of output).

The full description, with an example program, is docs/runner-protocol.md.
"""

from __future__ import annotations

import json
import shlex
import time
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from callboard.runner.adapters.base import (
    CliExited,
    CliUnavailable,
    Launch,
    Snapshot,
    TurnEvent,
    TurnTimedOut,
    Usage,
)
from callboard.runner.env import RESUME_ENV
from callboard.runner.process import CliProcess

STOP_SHARE = 0.5  # of the grace: the program's own exit after {"type":"stop"} and EOF
# A program that says nothing before its first prompt is taken as started once it has run this
# long (one that answers sooner, with "ready", is taken at once).
QUIET_START_SECONDS = 3.0
OUTPUT_TAIL = 5  # lines of a program's own output quoted when it did not start


def parse_command(cmd: str) -> tuple[str, ...]:
    """``generic:CMD``'s CMD as argv; CliUnavailable when it names nothing."""
    try:
        argv = tuple(shlex.split(cmd))
    except ValueError as exc:
        raise CliUnavailable(f"--cli generic:CMD: cannot split {cmd!r} ({exc})") from exc
    if not argv:
        raise CliUnavailable("--cli generic:CMD needs a command after 'generic:'")
    return argv


class GenericAdapter:
    """A warm program speaking the runner's NDJSON protocol."""

    name = "generic"
    runtime = "generic"
    warm = True

    def __init__(self, command: tuple[str, ...]) -> None:
        self.command = command
        self._proc: CliProcess | None = None
        self._launch: Launch | None = None
        self._session_id: str | None = None
        self._turn: str | None = None
        self._context: str | None = None

    @property
    def session_id(self) -> str | None:
        return self._session_id

    def start(self, launch: Launch, resume: str | None = None) -> None:
        self._launch = launch
        self._session_id = resume
        env = dict(launch.env)
        if resume:
            env[RESUME_ENV] = resume
        self._proc = CliProcess(launch.command or self.command, cwd=launch.cwd, env=env, log=launch.log)
        self._await_answer(self._proc)

    def _await_answer(self, proc: CliProcess) -> None:
        """Return once the program answered (a first JSON line: ``ready``, ``session``, ``log``) or
        has run QUIET_START_SECONDS without a word; CliExited when it ended before either."""
        said: deque[str] = deque(maxlen=OUTPUT_TAIL)  # what it printed that is not protocol
        deadline = time.monotonic() + QUIET_START_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = proc.next_line(left)
            except CliExited as ended:
                raise CliExited(_with_output(str(ended), said)) from None
            if line is None:
                continue
            for _ in self._read(line):  # a session id it gives is kept (``session_id``)
                pass
            if _object(line) is not None:
                return
            said.append(line[:200])
        if not proc.alive():
            raise CliExited(_with_output(proc.exit_description(), said))
        self._log(
            f"{Path(proc.argv[0]).name} said nothing in its first {QUIET_START_SECONDS:g} s and is running: taken as started "
            '(a program that says {"type": "ready"} is taken at once)'
        )

    def prompt(self, text: str, turn_id: str) -> None:
        if self._context:
            text, self._context = f"{self._context}\n\n{text}", None
        self._turn = turn_id
        self._process().write_line(json.dumps({"type": "prompt", "id": turn_id, "text": text}))

    def events(self, deadline: float) -> Iterator[TurnEvent]:
        proc = self._process()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TurnTimedOut(f"turn {self._turn} ran past its limit")
            line = proc.next_line(min(left, 1.0))
            if line is None:
                if not proc.alive() and proc.next_line(0.05) is None:
                    raise CliExited(proc.exit_description())
                continue
            yield from self._read(line)
            if line and self._ended(line):
                return

    def _read(self, line: str) -> Iterator[TurnEvent]:
        msg = _object(line)
        log = self._log
        if msg is None:
            log(f"program said (not protocol): {line[:500]}")
            return
        kind, turn = msg.get("type"), msg.get("id")
        if kind == "session" and isinstance(turn, str) and turn:
            self._session_id = turn
            yield TurnEvent("session", session_id=turn)
        elif kind == "log":
            log(f"program: {str(msg.get('text', ''))[:2000]}")
        elif kind == "ready":
            return  # it is up: what start waits for (said again later, it means nothing more)
        elif kind in ("took", "done", "failed") and turn not in (None, self._turn):
            log(f"ignored {kind} for turn {turn} (the turn is {self._turn})")
        elif kind == "took":
            yield TurnEvent("took")
        elif kind == "done":
            usage = _usage(msg.get("usage"))
            if usage is not None:
                yield TurnEvent("usage", usage=usage)
            yield TurnEvent("done", clear=msg.get("clear") is True)
        elif kind == "failed":
            yield TurnEvent("failed", text=str(msg.get("text", "the program said the turn failed")))
        else:
            log(f"ignored a line of unknown type {kind!r}")

    def _ended(self, line: str) -> bool:
        msg = _object(line)
        return msg is not None and msg.get("type") in ("done", "failed") and msg.get("id") in (None, self._turn)

    def inject(self, text: str) -> bool:
        return False  # the protocol has no way into a running turn: it waits for the turn's end

    def interrupt(self) -> None:
        """No interrupt in the protocol: the runner stops and respawns a turn past its limit."""

    def clear(self) -> None:
        """A fresh program with no session to resume: what a clear is to a generic agent."""
        launch = self._launch
        if launch is None:
            return
        if self._proc is not None and self._proc.alive():
            try:
                self._proc.write_line(json.dumps({"type": "clear"}))
            except CliExited:
                pass
        self.stop(grace=2.0)
        self.start(launch, resume=None)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.alive()

    def stop(self, grace: float) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.alive():
            try:
                proc.write_line(json.dumps({"type": "stop"}))
            except CliExited:
                pass
            proc.close_stdin()
            proc.wait(grace * STOP_SHARE)
        proc.terminate(grace * (1 - STOP_SHARE))

    def snapshot(self) -> Snapshot:
        return Snapshot(cli=self.name, session_id=self._session_id, extra={"command": list(self.command)})

    def session_holds(self, message_ids: Sequence[str]) -> list[str] | None:
        return None  # its session is its own business: ``took`` is its word that it holds the input

    def inject_context(self, text: str) -> None:
        self._context = text

    def _process(self) -> CliProcess:
        if self._proc is None:
            raise CliExited("the program is not running")
        return self._proc

    def _log(self, line: str) -> None:
        if self._launch is not None:
            self._launch.log(line)


def _with_output(ended: str, said: deque[str]) -> str:
    """How the program ended (its stderr's last lines in it), and the last lines it printed."""
    return ended + (f"; it printed: {' | '.join(said)}" if said else "")


def _object(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _usage(raw: object) -> Usage | None:
    if not isinstance(raw, dict):
        return None

    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    cost = raw.get("cost_usd")
    return Usage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_read_tokens=count("cache_read_tokens"),
        cache_write_tokens=count("cache_write_tokens"),
        cost_usd=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
    )
