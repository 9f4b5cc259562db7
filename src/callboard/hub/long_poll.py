"""A long-poll: look on a worker thread, and again each time a subscription is woken, until the
look finds something or the wait is over; the loop holds no thread while it waits.

Reads of a mailbox (``/v1/read``, ``/v1/surface``) and follows of a task (``GET /v1/tasks/{id}``
with ``after_generation``) wait this way. The subscription is made before the first look, so a
change committed between a look and the wait still wakes it. A waiting request counts against
its credential's streams, and ends (401) if its token is revoked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

from callboard.hub.context import secret_hash_of
from callboard.hub.endpoint import Call
from callboard.model import Caller
from callboard.service.credentials import Credential
from callboard.service.events import AsyncSubscription

R = TypeVar("R")


async def long_poll(
    call: Call,
    credential: Credential,
    subscribed: AbstractContextManager[AsyncSubscription],
    wait: float,
    take: Callable[[Caller], R],
    found: Callable[[R], bool],
) -> R:
    """``take(caller)`` until ``found`` says it found something or ``wait`` seconds pass."""
    hub = call.hub
    deadline = time.monotonic() + wait
    with (
        subscribed as subscription,
        hub.streams.opened(
            credential, secret_hash_of(call.headers), lambda: subscription.receive(None), counted=wait > 0
        ) as stream,
    ):
        while True:
            async with stream.taking():  # refused once revoked; a revocation waits for it
                result = await call.run_as(take)
            remaining = deadline - time.monotonic()
            if found(result) or remaining <= 0 or hub.stopping:
                return result
            await subscription.wait(remaining)  # shutdown and revocation wake every waiter too
