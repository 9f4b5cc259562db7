"""When a crashed CLI is started again: capped exponential backoff, and the crash-loop limit."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

BASE_SECONDS = 1.0
CAP_SECONDS = 60.0
LOOP_CRASHES = 5  # this many crashes ...
LOOP_WINDOW_SECONDS = 300.0  # ... within this window: a crash loop, the runner gives up


@dataclass
class CrashPolicy:
    """Counts crashes; says how long to wait before the respawn, or None for a crash loop."""

    base: float = BASE_SECONDS
    cap: float = CAP_SECONDS
    limit: int = LOOP_CRASHES
    window: float = LOOP_WINDOW_SECONDS
    _crashes: deque[float] = field(default_factory=deque)

    def crashed(self, now: float) -> float | None:
        """Record a crash at ``now``; seconds to wait before respawning, None when the crashes
        within the window reached the limit."""
        self._crashes.append(now)
        while self._crashes and now - self._crashes[0] > self.window:
            self._crashes.popleft()
        if len(self._crashes) >= self.limit:
            return None
        return min(self.cap, self.base * 2 ** (len(self._crashes) - 1))

    @property
    def recent(self) -> int:
        return len(self._crashes)
