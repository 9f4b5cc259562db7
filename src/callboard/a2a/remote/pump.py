"""The remote pump: mail to outside A2A agents sent, their tasks followed, their answers mail.

It claims due rows of the remote outbox under a lease (renewed while it works on one, so two
pumps, in two replicas or two processes, never send the same message at once; one that dies
lets its rows come due again), sends each message with the outbound client (the A2A message
id is the mail's id, so a try after a failure is the same message), and writes every update
the remote sends as the task's update by the outside agent — mail from it in the sender's
thread. A remote that cannot be reached is tried again, backing off, until its deadline; one
that answers garbage or refuses, or outlives its deadline, fails the task with the reason, told
to the sender by mail.

It runs among the hub's background jobs, and on the embedded store as the background work of the
client that opened it (``run``, on a thread of its own: ``PumpThread``), or for one CLI send
(``send_now``). Claiming needs no A2A SDK: the row sender (``sending``), which loads it, is made
the first time a row is in hand, so a process with no mail for outside agents never loads it.
The service's calls block (they commit), so they run on worker threads, never on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from callboard.a2a.remote.timeouts import RemoteTimeouts
from callboard.errors import CallboardError
from callboard.service.door import Service
from callboard.store.records import RemoteSend

if TYPE_CHECKING:
    from callboard.a2a.remote.sending import RowSender

log = logging.getLogger("callboard.remote_pump")


@dataclass(frozen=True)
class PumpSettings:
    """How the pump works: its lease on a row (renewed a third of the way through), how many
    rows it takes at once, how long it backs off an unreachable remote (doubling per try),
    and how long it idles when nothing is due."""

    timeouts: RemoteTimeouts = RemoteTimeouts()
    lease_seconds: float = 30.0
    batch: int = 8
    retry_first: float = 1.0
    retry_most: float = 60.0
    idle_seconds: float = 1.0


class RemotePump:
    """Sends the remote outbox of one service's store."""

    def __init__(self, service: Service, settings: PumpSettings = PumpSettings()) -> None:
        self.service = service
        self.outbox = service.remote_outbox
        self.settings = settings
        self._sender: RowSender | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Work the outbox until ``stop`` is set (the rows in hand are let go at once, for the
        next pump); idle a little when nothing is due."""
        stopping = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                round_ = asyncio.create_task(self.run_once())
                await asyncio.wait({round_, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not round_.done():
                    await _cancel(round_)
                    return
                try:
                    worked = round_.result()
                except CallboardError as error:  # the store is down, say: try again after a pause
                    log.warning("remote pump: %s", error.message)
                    worked = 0
                if not worked:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(stopping), self.settings.idle_seconds)
        finally:
            stopping.cancel()

    async def run_once(self, *, first_answer_only: bool = False) -> int:
        """Claim the due rows and work them side by side; how many were claimed."""
        sends = await asyncio.to_thread(self.outbox.claim, self.settings.lease_seconds, self.settings.batch)
        await asyncio.gather(*(self.work(send, first_answer_only=first_answer_only) for send in sends))
        return len(sends)

    async def send_now(self, workspace: str, message_id: str, wait: float) -> None:
        """For a CLI send: pump until this message has its first answer (or failed), or for
        ``wait`` seconds; what is left is the next pump's (its lease let go)."""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            round_ = asyncio.create_task(self.run_once(first_answer_only=True))
            await asyncio.wait({round_}, timeout=deadline - time.monotonic())
            if not round_.done():
                await _cancel(round_)
                return
            round_.result()
            row = await asyncio.to_thread(self.outbox.of_message, workspace, message_id)
            if row is None or row.attempts:  # tried (taken, failed, or to be tried again later)
                return
            await asyncio.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    async def work(self, send: RemoteSend, *, first_answer_only: bool = False) -> None:
        """Send one row and follow its task, keeping its lease while at it."""
        keeper = asyncio.create_task(self._keep_lease(send))
        try:
            await self._rows().send_and_follow(send, first_answer_only)
        except asyncio.CancelledError:
            # Cut short (a CLI send's wait ran out): the row is the next pump's, at once.
            await asyncio.shield(asyncio.to_thread(self.outbox.retry, send, None, 0))
            raise
        except Exception:  # one row's surprise must not stop the pump; the row comes due again
            log.exception("remote pump: sending message %s to %s", send.message_id, send.remote)
            await asyncio.to_thread(self.outbox.retry, send, "the pump failed unexpectedly", self._backoff(send))
        finally:
            keeper.cancel()

    def _rows(self) -> RowSender:
        """The row sender, made the first time a row is in hand (it loads the A2A SDK)."""
        if self._sender is None:
            from callboard.a2a.remote.sending import RowSender

            self._sender = RowSender(self.service, self.settings.timeouts, self._backoff)
        return self._sender

    async def _keep_lease(self, send: RemoteSend) -> None:
        every = self.settings.lease_seconds / 3
        while True:
            await asyncio.sleep(every)
            await asyncio.to_thread(self.outbox.renew, send, self.settings.lease_seconds)

    def _backoff(self, send: RemoteSend) -> float:
        return min(self.settings.retry_most, self.settings.retry_first * 2 ** max(0, send.attempts - 1))


async def _cancel(task: asyncio.Task) -> None:
    """Cancel ``task`` and wait for its end. Again and again: on Python 3.11 an
    ``asyncio.wait_for`` whose inner call finishes as the cancel arrives swallows it (fixed in
    3.12), and the round would then go on following its remote until the task's deadline."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=0.1)
    with contextlib.suppress(asyncio.CancelledError):
        task.result()


def pump_until(service: Service, stopped: threading.Event, settings: PumpSettings = PumpSettings()) -> None:
    """Run a pump on this thread, on a loop of its own, until ``stopped`` is set (for a
    process whose own loop is not to be shared: the hub's, the MCP server's)."""

    async def main() -> None:
        stop = asyncio.Event()

        async def watch() -> None:  # another thread's signal, seen within a tenth of a second
            while not stopped.is_set():
                await asyncio.sleep(0.1)
            stop.set()

        watcher = asyncio.create_task(watch())
        try:
            await RemotePump(service, settings).run(stop)
        finally:
            watcher.cancel()

    try:
        asyncio.run(main())
    except Exception:  # the process goes on without it; the rows wait for another pump
        log.exception("remote pump stopped")


class PumpThread:
    """A pump on a thread of its own (``pump_until``), started and stopped from another."""

    def __init__(self, service: Service, settings: PumpSettings = PumpSettings()) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=pump_until, args=(service, self._stopped, settings), name="callboard-remote-pump", daemon=True
        )

    def start(self) -> PumpThread:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the pump and wait for it (a row it was working on comes due again at once)."""
        self._stopped.set()
        self._thread.join(timeout)


def start_thread(service: Service) -> Callable[[float], None]:
    """The pump on a thread of its own, started; how to stop it (waiting at most the seconds
    given). The embedded store's client runs it so (``client/background.py``)."""
    return PumpThread(service).start().stop


def send_now(service: Service, workspace: str, message_id: str, seconds: float) -> None:
    """``RemotePump.send_now`` for code that is not async (a one-shot command's send)."""
    asyncio.run(RemotePump(service).send_now(workspace, message_id, seconds))
