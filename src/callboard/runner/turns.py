"""One turn: give the CLI its input, read its events to the end, mark its mail surfaced.

Mail is marked surfaced (evidence "turn") when the adapter says the CLI took the input, or at
``done`` when it never said so: never before; and read at ``done``. A turn that dies before that leaves its mail
handed to the runner's session, and the runner gives it again after the respawn.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from callboard.client.base import Client
from callboard.errors import CallboardError
from callboard.runner.adapters.base import Adapter, TurnEvent, TurnTimedOut, Usage

INTERRUPT_GRACE_SECONDS = 5.0  # after an interrupt, how long the turn may take to end by itself


@dataclass
class TurnResult:
    """How a turn ended."""

    ended: str  # "done", "failed", "timed_out"; "running" until then (CliExited propagates: the loop respawns)
    took: bool = False
    clear: bool = False
    usage: Usage = field(default_factory=Usage)
    detail: str = ""


class Turn:
    """One turn of ``adapter`` over the mail ``ids`` (none for a tick)."""

    def __init__(
        self,
        adapter: Adapter,
        client: Client,
        ids: Sequence[str],
        log: Callable[[str], None],
        on_event: Callable[[TurnEvent], None] = lambda event: None,
    ) -> None:
        self.adapter = adapter
        self.client = client
        self.ids = list(ids)
        self.log = log
        self.on_event = on_event
        self.result = TurnResult(ended="running")

    def run(self, text: str, turn_id: str, limit: float) -> TurnResult:
        """Prompt and read to the end; TurnResult. Raises CliExited when the CLI dies."""
        self.adapter.prompt(text, turn_id)
        try:
            self._read(time.monotonic() + limit)
        except TurnTimedOut:
            self.log(f"turn {turn_id} ran past its limit of {limit:g} s: interrupting it")
            self.adapter.interrupt()
            try:
                self._read(time.monotonic() + min(INTERRUPT_GRACE_SECONDS, limit))
            except TurnTimedOut:
                pass
            if self.result.ended not in ("done", "failed"):
                self.result.ended = "timed_out"
                self.result.detail = f"turn {turn_id} ran past its limit of {limit:g} s"
        return self.result

    def _read(self, deadline: float) -> None:
        for event in self.adapter.events(deadline):
            self.on_event(event)
            if event.kind == "took":
                self._surfaced()
            elif event.kind == "usage" and event.usage is not None:
                self.result.usage = self.result.usage + event.usage
            elif event.kind == "text" and event.text:
                self.log(f"said: {event.text[:300]}")
            elif event.kind == "tool":
                self.log(f"tool: {event.text[:200]}")
            elif event.kind == "done":
                self._surfaced()
                self._read_through()
                self.result.ended, self.result.clear = "done", event.clear
                return
            elif event.kind == "failed":
                self.result.ended, self.result.detail = "failed", event.text
                self.log(f"turn failed: {event.text[:500]}")
                return

    def _read_through(self) -> None:
        """The turn is done: its mail is read (the agent's unread count stays true; acking, that
        the work it asked for is done, is the agent's own word)."""
        if not self.ids:
            return
        try:
            self.client.mark_read(self.ids)
        except CallboardError as error:
            self.log(f"could not mark {len(self.ids)} message(s) read: {error.code}: {error.message}")

    def _surfaced(self) -> None:
        if self.result.took:
            return
        self.result.took = True
        if not self.ids:
            return
        try:
            self.client.confirm_surfaced(self.ids, evidence="turn")
        except CallboardError as error:
            self.log(f"could not mark {len(self.ids)} message(s) surfaced: {error.code}: {error.message}")
