"""Mailbox change signals: who should look at their mailbox again.

In one process the service publishes after each commit and waiting readers wake at once.
Other processes' commits are seen by the store's change counter (SQLite's ``data_version``),
looked at when the store's watch says a commit may have happened (SQLite: the database's files
were written) or, without one, polled; the poller runs only while someone waits.
A signal means "look again", never "here is the message": readers re-read the store, so a
missed or spurious signal can delay but never lose or duplicate mail.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TypeVar

from callboard.limits import POLL_INTERVAL_SECONDS

WATCH_SECONDS = 0.5  # with a store's watch: how long the poller sleeps when nothing is written
HOT_SECONDS = 0.25  # after a write is heard: polled until the commit shows, at most this long
PUSH_BACKLOG = 256  # deliveries a stream may fall behind by before it reads the store instead
MailboxKey = tuple[str, str]  # (workspace, agent)
W = TypeVar("W", "Subscription", "AsyncSubscription")


@dataclass(frozen=True, slots=True)
class PushedDelivery:
    """A delivery as it committed, handed to in-process streams so they need not read it back."""

    seq: int
    state: str
    message_json: str  # the message serialised once, shared by every recipient's stream
    target_session: str | None = None  # the session it is pushed to (other sessions' streams skip it)
    task_id: str | None = None  # a task's mail: the task (an id: nothing to escape) and its state
    task_state: str | None = None

    def mail_item_json(self) -> str:
        """The same JSON as ``MailItem.model_dump_json()`` for this delivery."""
        task = f',"task_id":"{self.task_id}"' if self.task_id is not None else ""
        if self.task_state is not None:
            task += f',"task_state":"{self.task_state}"'
        return f'{{"seq":{self.seq},"state":"{self.state}","message":{self.message_json}{task}}}'


class Subscription:
    """A waiter for one mailbox. Create it before checking the mailbox, so no signal is missed."""

    def __init__(self, key: MailboxKey) -> None:
        self.key = key
        self._event = threading.Event()

    def wake(self, item: PushedDelivery | None = None) -> None:
        self._event.set()

    def wait(self, timeout: float) -> bool:
        """Block until a signal or the timeout; True if signalled. Clears the signal."""
        signalled = self._event.wait(max(timeout, 0.0))
        self._event.clear()
        return signalled


class AsyncSubscription:
    """A waiter for one mailbox in an asyncio task (the hub's streams and long-polls).

    It also keeps the deliveries pushed to it since its last wait (a bounded backlog: a stream
    that falls behind reads the store instead)."""

    def __init__(self, key: MailboxKey, loop: asyncio.AbstractEventLoop) -> None:
        self.key = key
        self.loop = loop
        self._signalled = False
        self._waiter: asyncio.Future[None] | None = None
        self._pushed: deque[PushedDelivery] = deque(maxlen=PUSH_BACKLOG)
        # Set by a stream while it waits, caught up: takes a pushed delivery straight to the
        # client (True) so that the stream need not wake; False leaves it to the stream.
        self.direct: Callable[[PushedDelivery], bool] | None = None

    def wake(self, item: PushedDelivery | None = None) -> None:  # from any thread
        self.loop.call_soon_threadsafe(self.receive, item)

    def receive(self, item: PushedDelivery | None) -> None:  # on the loop
        if item is not None:
            if self.direct is not None and not self._signalled and self.direct(item):
                return
            self._pushed.append(item)
        self._signalled = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def wait(self, timeout: float) -> bool:
        """Wait until a signal or the timeout; True if signalled. Clears the signal."""
        if not self._signalled:
            # A timer, not asyncio.wait_for (which wraps the wait in a task): a channel post
            # wakes every member's stream at once, and each wake-up should cost little.
            waiter = self._waiter = self.loop.create_future()
            timer = self.loop.call_later(max(timeout, 0.0), _time_up, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        signalled, self._signalled = self._signalled, False
        return signalled

    def take_pushed(self) -> list[PushedDelivery]:
        items = list(self._pushed)
        self._pushed.clear()
        return items


Waiter = Subscription | AsyncSubscription


class MailboxEvents:
    """Fan-out of mailbox-changed signals within a process, fed by other processes too."""

    def __init__(
        self,
        change_counter: Callable[[], int] | None = None,
        poll_interval: float = POLL_INTERVAL_SECONDS,
        wait_for_change: Callable[[float], bool] | None = None,
    ):
        """``wait_for_change(timeout)``: blocks until another process may have committed (the
        store's watch); without it the poller looks every ``poll_interval``."""
        self._change_counter = change_counter
        self._poll_interval = poll_interval
        self._wait_for_change = wait_for_change
        self._lock = threading.Lock()
        self._waiters: dict[MailboxKey, set[Waiter]] = {}
        self._poller: threading.Thread | None = None
        self._last_counter = 0
        self.closed = False  # shutting down: waits end now and none begins again

    def has_streams(self, workspace: str, agents: list[str]) -> bool:
        """Whether any of these mailboxes has an asyncio waiter (one that can use pushed deliveries)."""
        with self._lock:
            return any(
                isinstance(w, AsyncSubscription) for agent in agents for w in self._waiters.get((workspace, agent), ())
            )

    def waiting(self, workspace: str, agent: str) -> int:
        """How many waiters of this process wait on that mailbox now (a read that waits is one)."""
        with self._lock:
            return len(self._waiters.get((workspace, agent), ()))

    def publish(self, workspace: str, agent: str, item: PushedDelivery | None = None) -> None:
        """Tell this process's waiters on that mailbox to look again (call after commit)."""
        self.publish_many(workspace, [(agent, item)])

    def publish_many(self, workspace: str, deliveries: list[tuple[str, PushedDelivery | None]]) -> None:
        """``publish`` for every recipient of one send: one hop per event loop, not per waiter."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[AsyncSubscription, PushedDelivery | None]]] = {}
        with self._lock:
            targets = [(w, item) for agent, item in deliveries for w in self._waiters.get((workspace, agent), ())]
        for waiter, item in targets:
            if isinstance(waiter, AsyncSubscription):
                by_loop.setdefault(waiter.loop, []).append((waiter, item))
            else:
                waiter.wake(item)
        for loop, batch in by_loop.items():
            if _running_loop() is loop:  # the hub commits on its loop: hand them over right away
                _receive_all(batch)
            else:
                loop.call_soon_threadsafe(_receive_all, batch)

    def close(self) -> None:
        """Shutting down: every waiter wakes, so streams and long-polls end; a reader that waits
        checks ``closed`` before it waits again."""
        self.closed = True
        self.wake_all()

    def wake_workspace(self, workspace: str) -> None:
        """Wake every waiter of this process on a mailbox of ``workspace``."""
        with self._lock:
            waiters = [w for key, group in self._waiters.items() if key[0] == workspace for w in group]
        for waiter in waiters:
            waiter.wake()

    def wake_all(self) -> None:
        """Wake every waiter of this process."""
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
        self._poller = threading.Thread(target=self._poll, name="callboard-change-poller", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        assert self._change_counter is not None
        hot_until = 0.0  # after a write is heard, look every poll interval for a while
        while True:
            if self._wait_for_change is not None and time.monotonic() >= hot_until:
                # Asleep until a commit is written, or to see if waiters are left. A write is
                # heard as it starts: the commit may end a moment later, so look a while.
                if self._wait_for_change(WATCH_SECONDS):
                    hot_until = time.monotonic() + HOT_SECONDS
            else:
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
                hot_until = 0.0
                self.wake_all()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _time_up(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _receive_all(batch: list[tuple[AsyncSubscription, PushedDelivery | None]]) -> None:
    for subscription, item in batch:
        subscription.receive(item)
