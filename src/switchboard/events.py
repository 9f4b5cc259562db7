"""Mailbox change signals: who should look at their mailbox again.

In one process the service publishes after each commit and waiting readers wake at once.
Other processes' commits are seen by polling the store's change counter (SQLite's
``data_version``), which costs microseconds; the poller runs only while someone waits.
A signal means "look again", never "here is the message": readers re-read the store, so a
missed or spurious signal can delay but never lose or duplicate mail.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TypeVar

POLL_INTERVAL_SECONDS = 0.005
MailboxKey = tuple[str, str]  # (workspace, agent)
W = TypeVar("W", "Subscription", "AsyncSubscription")


class Subscription:
    """A waiter for one mailbox. Create it before checking the mailbox, so no signal is missed."""

    def __init__(self, key: MailboxKey) -> None:
        self.key = key
        self._event = threading.Event()

    def wake(self) -> None:
        self._event.set()

    def wait(self, timeout: float) -> bool:
        """Block until a signal or the timeout; True if signalled. Clears the signal."""
        signalled = self._event.wait(max(timeout, 0.0))
        self._event.clear()
        return signalled


class AsyncSubscription:
    """A waiter for one mailbox in an asyncio task (the hub's streams and long-polls)."""

    def __init__(self, key: MailboxKey, loop: asyncio.AbstractEventLoop) -> None:
        self.key = key
        self._loop = loop
        self._event = asyncio.Event()

    def wake(self) -> None:  # called from any thread
        self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, timeout: float) -> bool:
        """Wait until a signal or the timeout; True if signalled. Clears the signal."""
        try:
            await asyncio.wait_for(self._event.wait(), max(timeout, 0.0))
        except TimeoutError:
            return False
        finally:
            self._event.clear()
        return True


Waiter = Subscription | AsyncSubscription


class MailboxEvents:
    """Fan-out of mailbox-changed signals within a process, fed by other processes too."""

    def __init__(self, change_counter: Callable[[], int] | None = None, poll_interval: float = POLL_INTERVAL_SECONDS):
        self._change_counter = change_counter
        self._poll_interval = poll_interval
        self._lock = threading.Lock()
        self._waiters: dict[MailboxKey, set[Waiter]] = {}
        self._poller: threading.Thread | None = None
        self._last_counter = 0

    def publish(self, workspace: str, agent: str) -> None:
        """Tell this process's waiters on that mailbox to look again (call after commit)."""
        with self._lock:
            waiters = list(self._waiters.get((workspace, agent), ()))
        for waiter in waiters:
            waiter.wake()

    def wake_all(self) -> None:
        """Wake every waiter of this process (on shutdown, so streams and long-polls end)."""
        with self._lock:
            waiters = [w for group in self._waiters.values() for w in group]
        for waiter in waiters:
            waiter.wake()

    def subscribe(self, workspace: str, agent: str) -> AbstractContextManager[Subscription]:
        """A waiter for a thread; create it before checking the mailbox."""
        return self._registered(Subscription((workspace, agent)))

    def subscribe_async(self, workspace: str, agent: str) -> AbstractContextManager[AsyncSubscription]:
        """A waiter for the running event loop's task; create it before checking the mailbox."""
        return self._registered(AsyncSubscription((workspace, agent), asyncio.get_running_loop()))

    @contextmanager
    def _registered(self, subscription: W) -> Iterator[W]:
        with self._lock:
            self._waiters.setdefault(subscription.key, set()).add(subscription)
            self._start_poller_locked()
        try:
            yield subscription
        finally:
            with self._lock:
                waiters = self._waiters.get(subscription.key)
                if waiters is not None:
                    waiters.discard(subscription)
                    if not waiters:
                        del self._waiters[subscription.key]

    def _start_poller_locked(self) -> None:
        if self._change_counter is None or self._poller is not None:
            return
        # The baseline is read now, before the subscriber first checks its mailbox, so a commit
        # made by another process in between still moves the counter past it.
        self._last_counter = self._change_counter()
        self._poller = threading.Thread(target=self._poll, name="switchboard-change-poller", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        assert self._change_counter is not None
        while True:
            time.sleep(self._poll_interval)
            with self._lock:
                if not self._waiters:
                    self._poller = None
                    return
            try:
                counter = self._change_counter()
            except Exception:  # the store was closed under us; waiters time out on their own
                with self._lock:
                    self._poller = None
                return
            if counter != self._last_counter:
                self._last_counter = counter
                self.wake_all()
