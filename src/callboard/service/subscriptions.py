"""The part of the service's interface a face listens with: ``Service.subscriptions``.

A face that answers as mail comes (the hub's SSE streams and long-polls, the MCP endpoint's
waits, A2A's blocking sends, task subscriptions and push-notification poster) subscribes to a
mailbox here, and learns here that the service is stopping. The service's own collaborators
publish to the same fan-out (``events.MailboxEvents``, which implements this); a face never
publishes, and reaches nothing else of it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from callboard.service.events import AsyncSubscription


class Subscriptions(Protocol):
    """Waiting for a mailbox's news on an event loop, and the service's stop."""

    @property
    def closed(self) -> bool:
        """The service is stopping: every wait ends now, and none should begin again."""
        ...

    def close(self) -> None:
        """Stop: every subscriber wakes (streams and long-polls end); the hub calls it first
        when it shuts down, so requests in flight can finish."""
        ...

    def subscribe_async(self, workspace: str, agent: str) -> AbstractContextManager[AsyncSubscription]:
        """A subscriber to that mailbox for the running event loop's task, woken (and handed the
        deliveries made to it) as the service commits; make it before looking at the mailbox."""
        ...

    def waiting(self, workspace: str, agent: str) -> int:
        """How many subscribers of this process wait on that mailbox now (a blocked read is one)."""
        ...
