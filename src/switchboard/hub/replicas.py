"""Several hubs over one PostgreSQL store: each is a replica with an id of its own, and learns of
the others' commits from the store's notifications, which wake just the mailboxes they name.

No replica keeps state another needs: mail, cursors, sessions and tokens are all in the store;
what a replica caches (open sessions for a second, credentials) it reads again from the store.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from switchboard.events import MailboxEvents

# How long a replica trusts a token it checked before asking the store again: a revocation made
# through another replica is refused here within this time.
SHARED_STORE_RECHECK_SECONDS = 5.0


@runtime_checkable
class Notifying(Protocol):
    """A store that tells its listeners of commits made through any connection (PostgreSQL)."""

    def add_listener(self, callback: Callable[[dict[str, Any]], None]) -> None: ...


def new_replica_id() -> str:
    """A short id for this hub process, shown by ``up``, /health and ``who``."""
    return f"r-{secrets.token_hex(4)}"


def replica_wakeups(events: MailboxEvents, replica: str) -> Callable[[dict[str, Any]], None]:
    """What to do with a notification: wake the waiters of the mailboxes another replica's commit
    changed (all of a workspace's when it names no mailbox). This replica's own commits already
    woke its waiters, with the deliveries themselves."""

    def wake(payload: dict[str, Any]) -> None:
        if not payload:  # the store's listener reconnected: anything may have changed meanwhile
            events.wake_all()
            return
        if payload.get("r") == replica or "w" not in payload:
            return
        workspace = str(payload["w"])
        agents = payload.get("a")
        if isinstance(agents, list):
            events.publish_many(workspace, [(str(agent), None) for agent in agents])
        else:
            events.wake_workspace(workspace)

    return wake
