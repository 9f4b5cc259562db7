"""The runner's timing rules: the optional tick's backoff and the clear's rate limit."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_IDLE_STEP = 60.0  # seconds added to the tick's interval per idle tick (the published loop's)
DEFAULT_MAX_SLEEP = 3600.0  # the interval's ceiling


@dataclass
class TickBackoff:
    """With ``--every``: a tick after ``every`` seconds without mail, then ``step`` more per
    tick that found nothing to do, up to ``ceiling``; mail or a wake starts again at ``every``.
    Without ``--every`` (every None) there is no tick at all."""

    every: float | None
    step: float = DEFAULT_IDLE_STEP
    ceiling: float = DEFAULT_MAX_SLEEP
    idle_ticks: int = 0

    def interval(self) -> float | None:
        """Seconds until the next tick (None: no tick)."""
        if self.every is None:
            return None
        return min(max(self.every, self.ceiling), self.every + self.step * self.idle_ticks)

    def ticked(self) -> None:
        """A tick ran with no mail: sleep longer next time."""
        self.idle_ticks += 1

    def reset(self) -> None:
        """Mail or a wake: back to the shortest interval."""
        self.idle_ticks = 0


@dataclass
class ClearGate:
    """Clears at most one per ``min_gap`` seconds; one asked for sooner is kept until allowed."""

    min_gap: float
    last: float | None = None
    pending: bool = False

    def ask(self) -> None:
        self.pending = True

    def due(self, now: float) -> bool:
        """Whether a pending clear may run now (then it counts as done at ``now``)."""
        if not self.pending or (self.last is not None and now - self.last < self.min_gap):
            return False
        self.pending, self.last = False, now
        return True

    def wait_left(self, now: float) -> float:
        """Seconds until a pending clear is allowed."""
        return 0.0 if self.last is None else max(0.0, self.min_gap - (now - self.last))
