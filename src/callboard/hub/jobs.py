"""The hub's background work: one list of jobs, started with the server and stopped with it.

Each job runs on the server's event loop from start-up until the hub stops (its task is then
canceled and waited for, before the store's last commits): the A2A push poster, the recheck
of open streams' tokens (replicas over one PostgreSQL store), the outside-agent pump, the
rounds' deadlines. A new job (retention) is one entry in ``hub_jobs``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any

from callboard.a2a.remote.pump import PumpThread
from callboard.a2a.server.push import PushPoster
from callboard.hub.context import HubContext, blocking
from callboard.service.door import Service

log = logging.getLogger("callboard.hub")


@dataclass(frozen=True)
class Job:
    """One piece of background work: ``run()`` goes on until it is canceled."""

    name: str
    run: Callable[[], Coroutine[Any, Any, None]]


def hub_jobs(hub: HubContext, recheck_seconds: float | None, *, pump_remotes: bool) -> list[Job]:
    """The hub's jobs: what each one does is its own module's."""
    service = hub.service
    jobs = [Job("A2A push notifications", PushPoster(service, blocking).run)]  # from the store's outbox
    if recheck_seconds is not None:  # open streams end soon after another replica revokes their token
        jobs.append(Job("revocation recheck", lambda: hub.streams.recheck(hub.credentials, recheck_seconds, blocking)))
    if pump_remotes:  # mail to outside A2A agents: every replica pumps, the outbox's leases share it
        jobs.append(Job("outside-agent pump", lambda: _pump(service)))
    jobs.append(Job("round deadlines", lambda: _sweep_rounds(service)))
    return jobs


@asynccontextmanager
async def running(jobs: Sequence[Job]) -> AsyncIterator[None]:
    """Every job running while inside; on the way out each is canceled and waited for."""
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(job.run(), name=job.name) for job in jobs]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for job, task in zip(jobs, tasks, strict=True):
            with suppress(asyncio.CancelledError):
                try:
                    await task
                except Exception:  # one job's failure does not keep the others from stopping
                    log.exception("background job %s failed", job.name)


async def _pump(service: Service) -> None:
    """The outside-agent pump, on a thread and loop of its own (its sends are not the
    server's loop's business), until canceled."""
    pump = PumpThread(service).start()
    try:
        await asyncio.Event().wait()
    finally:
        await asyncio.to_thread(pump.stop)


ROUND_SWEEP_SECONDS = 1.0  # a phase ends within about this long after its deadline


async def _sweep_rounds(service: Service) -> None:
    """End the rounds' phases past their deadline (absentees recorded), on a worker thread,
    every ``ROUND_SWEEP_SECONDS``; every replica sweeps, each act taking its turn per round."""
    while True:
        try:
            await blocking(service.rounds.sweep)
        except Exception:  # the store unavailable a moment: the next sweep tries again
            log.exception("sweeping the rounds' deadlines failed")
        await asyncio.sleep(ROUND_SWEEP_SECONDS)
