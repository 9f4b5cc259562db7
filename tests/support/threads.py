"""Threads started together behind a barrier, each one's answer (or error) kept, joined with a
deadline: how a test makes many callers act at once; and one call run on a thread of its own
(``in_thread``) while the test goes on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from tests.support.waiting import DEADLINE


def run_threads(count: int, target: Callable[[int], object]) -> tuple[list[object], list[threading.Thread]]:
    """Start ``count`` threads that call ``target(i)`` together (after a barrier); each result
    (or the exception raised) lands in ``outcomes[i]``. Join with ``join_all``."""
    outcomes: list[object] = [None] * count
    start = threading.Barrier(count)

    def run(index: int) -> None:
        try:
            start.wait(DEADLINE)
            outcomes[index] = target(index)
        except BaseException as error:  # reported on the test's thread
            outcomes[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    return outcomes, threads


def join_all(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(DEADLINE)
    assert not any(t.is_alive() for t in threads), "a thread never finished"


def in_thread(target: Callable[[], object]) -> tuple[threading.Thread, dict[str, object]]:
    """Run ``target`` on a thread; its answer (or error) lands in the returned dict."""
    box: dict[str, object] = {}

    def run() -> None:
        box["started"] = time.monotonic()
        try:
            box["result"] = target()
        except BaseException as error:
            box["error"] = error
        box["finished"] = time.monotonic()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box
