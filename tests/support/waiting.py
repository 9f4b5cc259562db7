"""Waiting on a condition with a deadline — never sleep-and-hope — and the one factor by which
every deadline and time bound of the suite grows on a slow machine.

``CALLBOARD_TEST_SLOWNESS`` (a number, 1 when unset) says how many times slower than an idle
two-core machine this one runs: a CI runner beside other jobs, or two copies of the suite at
once. Deadlines are already generous at 1; the factor is for machines busier still. A deadline
only ever makes a failing test fail later: a test that passes is never slowed by it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest

SLOWNESS = float(os.environ.get("CALLBOARD_TEST_SLOWNESS") or 1.0)


def scaled(seconds: float) -> float:
    """``seconds`` on this machine: a deadline, or a bound on how long something may take."""
    return seconds * SLOWNESS


# How long a test waits for what must happen (a commit, a thread, a loop's answer): it never
# takes this long, and a failure says so instead of hanging. Like every deadline constant, in
# seconds of an idle machine: ``wait_until`` scales what it is given.
DEADLINE = 60.0
# How long a test watches something that must not happen yet (a commit while the write lock is
# held elsewhere): a bounded look, not a wait for something to happen.
STILL_PENDING = 0.3


def wait_until(
    condition: Callable[[], Any], timeout: float = 60.0, what: str = "the condition", interval: float = 0.005
) -> Any:
    """Call ``condition`` until it returns something truthy and return that; fail the test
    after ``timeout`` seconds (scaled by the machine's slowness)."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)
