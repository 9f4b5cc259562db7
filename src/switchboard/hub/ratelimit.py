"""Per-credential token buckets: a client that sends too fast gets 429 with Retry-After."""

from __future__ import annotations

import math
import threading
import time

from switchboard.errors import RateLimited


class RateLimiter:
    """``rate`` requests per second per key, with bursts up to ``burst``; rate 0 disables it."""

    def __init__(self, rate: float, burst: float | None = None) -> None:
        self.rate = rate
        self.burst = burst if burst is not None else max(rate * 2, 1.0)
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill)
        self._lock = threading.Lock()

    def check(self, key: str) -> None:
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens < 1:
                self._buckets[key] = (tokens, now)
                retry_after = max(1, math.ceil((1 - tokens) / self.rate))
                raise RateLimited(
                    f"too many requests: this credential may make {self.rate:g} per second; retry after {retry_after} s.",
                    retry_after=retry_after,
                )
            self._buckets[key] = (tokens - 1, now)
            if len(self._buckets) > 10_000:  # forget idle keys: a full bucket is the default anyway
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < self.burst / self.rate}
