"""How long a client waits before trying the hub again: doubling from a short first wait up to
a cap, with jitter so that many clients cut off together do not all return at the same instant."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

FIRST_SECONDS = 0.25
CAP_SECONDS = 8.0


@dataclass(slots=True)
class Backoff:
    first: float = FIRST_SECONDS
    cap: float = CAP_SECONDS
    _next: float = field(default=0.0, init=False)

    def delay(self) -> float:
        """The wait before the next attempt (each failure doubles it, up to the cap)."""
        self._next = self.first if self._next == 0.0 else min(self._next * 2, self.cap)
        return self._next * random.uniform(0.8, 1.2)

    def reset(self) -> None:
        """An attempt worked: the next failure starts from the first wait again."""
        self._next = 0.0
