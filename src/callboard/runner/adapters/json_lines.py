"""Reading a CLI's JSON-lines output through ``CliProcess``: one event (a JSON object) at a time.

Claude Code's stream-json and Codex's ``exec --json`` both print one JSON object per line;
anything else they print (a warning, a banner) goes to the runner's log, not to the turn.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from callboard.runner.process import CliProcess, deadline_left


def next_event(process: CliProcess, deadline: float, log: Callable[[str], None]) -> dict[str, Any] | None:
    """The next JSON object the CLI printed, or None at ``deadline`` (``time.monotonic()``).
    Raises CliExited once its output ended."""
    while True:
        line = process.next_line(deadline_left(deadline))
        if line is None:
            return None
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if isinstance(event, dict):
            return event
        if line.strip():
            log(f"{process.argv[0].rsplit('/', 1)[-1]}: {line[:500]}")
        if time.monotonic() >= deadline:
            return None


def drain(process: CliProcess, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The events already printed and not read (the caller drops them: they belong to no turn of
    its own). A dead process's end is left for the next read to raise."""
    drained: list[dict[str, Any]] = []
    while process.alive() and (event := next_event(process, time.monotonic(), log)) is not None:
        drained.append(event)
    return drained
