"""Token buckets: a client that sends too fast gets 429 with Retry-After.

Per credential, every request; per client address, each request with a token the hub does not
know (so a client guessing tokens, or replaying a dead one, costs the store nothing past its rate).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from callboard.errors import RateLimited

BAD_TOKENS_PER_SECOND = 10.0  # per client address
BAD_TOKENS_BURST = 100.0


def _credential_message(rate: float, retry_after: int) -> str:
    return f"too many requests: this credential may make {rate:g} per second; retry after {retry_after} s."


class RateLimiter:
    """``rate`` requests per second per key, with bursts up to ``burst``; rate 0 disables it.
    ``message(rate, retry_after)`` is the sentence of the 429."""

    def __init__(
        self, rate: float, burst: float | None = None, message: Callable[[float, int], str] = _credential_message
    ) -> None:
        self.rate = rate
        self.burst = burst if burst is not None else max(rate * 2, 1.0)
        self._message = message
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill)
        self._lock = threading.Lock()

    def check(self, key: str) -> None:
        """One request of ``key``: counted, or RateLimited when its bucket is empty."""
        self._take(key, 1.0)

    def check_room(self, key: str) -> None:
        """RateLimited when ``key``'s bucket is empty; counts nothing (see ``spend``)."""
        self._take(key, 0.0)

    def spend(self, key: str) -> None:
        """Count one for ``key`` without refusing anything (the next ``check_room`` may refuse)."""
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            tokens = self._refilled(key, now)
            self._buckets[key] = (max(tokens - 1, 0.0), now)

    def _take(self, key: str, cost: float) -> None:
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            tokens = self._refilled(key, now)
            if tokens < 1:
                self._buckets[key] = (tokens, now)
                retry_after = max(1, math.ceil((1 - tokens) / self.rate))
                raise RateLimited(self._message(self.rate, retry_after), retry_after=retry_after)
            self._buckets[key] = (tokens - cost, now)
            if len(self._buckets) > 10_000:  # forget idle keys: a full bucket is the default anyway
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < self.burst / self.rate}

    def _refilled(self, key: str, now: float) -> float:
        tokens, last = self._buckets.get(key, (self.burst, now))
        return min(self.burst, tokens + (now - last) * self.rate)


def bad_token_limiter() -> RateLimiter:
    """Per client address: how many requests with unknown tokens it may make."""
    return RateLimiter(
        BAD_TOKENS_PER_SECOND,
        BAD_TOKENS_BURST,
        lambda rate, retry_after: (
            f"too many requests with tokens the hub does not know from this address (at most {rate:g} per "
            f"second); retry after {retry_after} s, with a token from 'callboard token create'."
        ),
    )
