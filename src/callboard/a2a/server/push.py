"""Push notifications: each task event posted to the webhooks its requester registered.

The store keeps an outbox (one row per event per push config, written in the event's own
transaction); this poster, a background task of every hub replica, claims due rows with a lease,
posts each as A2A wants it — the ``StreamResponse`` JSON of the event — and records the outcome.
A failed post is tried again with backoff; a replica that dies mid-post leaves its lease to end,
and another replica posts the row. So a post may arrive twice, never not at all (until given up).

What a post carries, so the receiver can trust it:

- ``X-A2A-Notification-Token``: the config's token, when it has one (A2A's own check);
- ``Authorization: <scheme> <credentials>`` when the config has an authentication scheme;
- ``X-Callboard-Signature: sha256=<hex>``: HMAC-SHA256 of the body keyed by the config's token
  (else its credentials), so a receiver that knows the secret knows the body is ours, unchanged;
- ``X-Callboard-Task-Generation``: the event's generation (a receiver drops what it has seen).

The target is checked again before each post (``PushOutbox.target``): a name may have moved
to a private address since the config was set.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from a2a.types import StreamResponse, TaskArtifactUpdateEvent
from google.protobuf.json_format import MessageToDict

from callboard.a2a.server.convert import a2a_event
from callboard.errors import CallboardError
from callboard.service.door import Service
from callboard.store.records import PushDelivery
from callboard.tasks import TaskEvent

log = logging.getLogger("callboard.hub")

Run = Callable[..., Awaitable[Any]]

TOKEN_HEADER = "X-A2A-Notification-Token"
SIGNATURE_HEADER = "X-Callboard-Signature"
GENERATION_HEADER = "X-Callboard-Task-Generation"
LEASE_SECONDS = 30.0  # a post not recorded by then is another replica's to make
BATCH = 20  # posts claimed at once
IDLE_SECONDS = 0.5  # how often an idle poster looks at the outbox
POST_TIMEOUT_SECONDS = 10.0
MAX_ATTEMPTS = 8  # then the post is given up (about 4 minutes of backoff)
BACKOFF_CAP_SECONDS = 120.0


def signature(body: bytes, key: str) -> str:
    """The value of ``X-Callboard-Signature`` for ``body`` under ``key``."""
    return "sha256=" + hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


def backoff(attempts: int) -> float | None:
    """Seconds before the next try after ``attempts`` failed ones, or None: give up."""
    if attempts >= MAX_ATTEMPTS:
        return None
    return min(2.0**attempts, BACKOFF_CAP_SECONDS)


def post_body(event: TaskEvent, context_id: str) -> bytes:
    """The event as A2A's push body: a ``StreamResponse`` in JSON."""
    update = a2a_event(event, context_id)
    response = (
        StreamResponse(artifact_update=update)
        if isinstance(update, TaskArtifactUpdateEvent)
        else StreamResponse(status_update=update)
    )
    return json.dumps(MessageToDict(response), separators=(",", ":")).encode()


def post_headers(delivery: PushDelivery, body: bytes) -> dict[str, str]:
    headers = {"Content-Type": "application/json", GENERATION_HEADER: str(delivery.generation)}
    if delivery.token:
        headers[TOKEN_HEADER] = delivery.token
    if delivery.auth_scheme:
        headers["Authorization"] = f"{delivery.auth_scheme} {delivery.auth_credentials or ''}".strip()
    key = delivery.token or delivery.auth_credentials
    if key:
        headers[SIGNATURE_HEADER] = signature(body, key)
    return headers


class PushPoster:
    """Claims and posts the outbox's due rows until stopped (``run`` is the hub's background task)."""

    def __init__(self, service: Service, run: Run) -> None:
        self._service = service
        self._run = run

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=POST_TIMEOUT_SECONDS, follow_redirects=False) as http:
            while not self._service.subscriptions.closed:
                try:
                    due = await self._run(self._service.push_outbox.claim, LEASE_SECONDS, BATCH)
                    # One post's failure is its own (recorded); the others go on.
                    await asyncio.gather(*(self._post(http, delivery) for delivery in due), return_exceptions=True)
                except Exception as error:  # the store is away, or closing: look again later
                    if self._service.subscriptions.closed:
                        return
                    log.warning("push notifications: the outbox cannot be read now (%r)", error)
                    due = []
                if not due:
                    await asyncio.sleep(IDLE_SECONDS)

    async def _post(self, http: httpx.AsyncClient, delivery: PushDelivery) -> None:
        try:
            task, url = await self._run(self._service.push_outbox.target, delivery)
        except CallboardError as error:  # no longer a target the hub posts to
            await self._run(self._service.push_outbox.failed, delivery.id, error.message, None)
            return
        if task is None:
            await self._run(self._service.push_outbox.failed, delivery.id, "the task is gone", None)
            return
        body = post_body(TaskEvent.model_validate_json(delivery.payload), task.context_id)
        try:
            answer = await http.post(url, content=body, headers=post_headers(delivery, body))
            problem = None if 200 <= answer.status_code < 300 else f"the webhook answered {answer.status_code}"
        except httpx.HTTPError as error:
            problem = f"posting failed: {error!r}"
        if problem is None:
            await self._run(self._service.push_outbox.delivered, delivery.id)
        else:
            await self._run(self._service.push_outbox.failed, delivery.id, problem, backoff(delivery.attempts))
