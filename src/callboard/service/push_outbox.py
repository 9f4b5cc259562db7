"""The outbox of a task's push notifications: what the hub's poster (``a2a/server/push.py``)
claims, checks again and marks posted or failed. The rules of a push target are ``push_targets``;
the posting itself (HTTP) is the face's.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from callboard.service.push_targets import check_webhook
from callboard.store.parts.tasks import TasksPart
from callboard.store.records import PushDelivery
from callboard.tasks import Task


class PushOutbox:
    """Push posts due, leased to one poster at a time (another replica's takes them up when a lease
    ends unposted)."""

    def __init__(self, tasks: TasksPart, clock: Callable[[], datetime], *, allow_private: bool) -> None:
        """``allow_private``: targets on loopback and private addresses are allowed (as for tasking)."""
        self.tasks = tasks
        self.clock = clock
        self.allow_private = allow_private

    def claim(self, lease_seconds: float, limit: int) -> list[PushDelivery]:
        """Due posts, leased to this poster for ``lease_seconds``."""
        return self.tasks.claim_push_deliveries(self.clock(), lease_seconds, limit)

    def target(self, delivery: PushDelivery) -> tuple[Task | None, str]:
        """The task a claimed post is about, and its URL checked again (names move): BadWebhook
        for a target no longer allowed."""
        url = check_webhook(delivery.url, allow_private=self.allow_private)
        return self.tasks.get_task(delivery.workspace, delivery.task_id), url

    def delivered(self, delivery_id: str) -> None:
        self.tasks.push_delivered(delivery_id, self.clock())

    def failed(self, delivery_id: str, error: str, retry_in: float | None) -> None:
        """A post failed: tried again ``retry_in`` seconds from now, or never (None: given up)."""
        retry_at = self.clock() + timedelta(seconds=retry_in) if retry_in is not None else None
        self.tasks.push_failed(delivery_id, error, retry_at)
