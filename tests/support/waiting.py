"""Waiting on a condition with a deadline — never sleep-and-hope."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

# How long a test waits for what must happen (a commit, a thread, a loop's answer): it never
# takes this long, and a failure says so instead of hanging.
DEADLINE = 60.0
# How long a test watches something that must not happen yet (a commit while the write lock is
# held elsewhere): a bounded look, not a wait for something to happen.
STILL_PENDING = 0.3


def wait_until(
    condition: Callable[[], Any], timeout: float = 20.0, what: str = "the condition", interval: float = 0.005
) -> Any:
    """Call ``condition`` until it returns something truthy and return that; fail the test
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)
