"""An event loop on a thread of its own, as the hub's runs beside its worker threads: the test's
thread hands it coroutines, or holds it inside one callback so that what is submitted meanwhile
queues for its next turn."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

try:  # the hub runs on uvloop where it is installed: test on the loop it uses
    import uvloop
except ImportError:  # pragma: no cover - uvloop is not built for every platform
    uvloop = None

T = TypeVar("T")

LOOP_DEADLINE = 60.0  # for the loop thread to do what it was asked: it never takes this long


class LoopThread:
    """An event loop running on a thread of its own, as the hub's runs beside its worker threads.

    The test's thread hands it coroutines (``run``) and callbacks; ``stop`` ends the loop and
    joins its thread."""

    def __init__(self) -> None:
        self.loop = uvloop.new_event_loop() if uvloop is not None else asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="test event loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = LOOP_DEADLINE) -> T:
        """Run ``coroutine`` on the loop and return what it returned; fail after ``timeout`` s."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(LOOP_DEADLINE)
        assert not self.thread.is_alive(), "the event loop never stopped"
        self.loop.close()


@contextmanager
def loop_held(loop_thread: LoopThread) -> Iterator[None]:
    """Keep the event loop busy inside one callback until the block ends (or a test fails):
    whatever is submitted meanwhile queues for the loop's next turn."""
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        entered.set()
        release.wait(LOOP_DEADLINE)

    loop_thread.loop.call_soon_threadsafe(hold)
    try:
        assert entered.wait(LOOP_DEADLINE), "the loop never ran the holding callback"
        yield
    finally:
        release.set()
