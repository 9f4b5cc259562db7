"""Several hubs over one PostgreSQL store: each is a replica with an id of its own, and learns of
the others' commits from the store's notifications, which wake just the mailboxes they name.

No replica keeps state another needs: mail, cursors, sessions and tokens are all in the store;
what a replica caches (open sessions for a second, credentials) it reads again from the store.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from callboard.service.events import MailboxEvents, PushedDelivery

log = logging.getLogger("callboard.replicas")

# How long a replica trusts a token it checked before asking the store again: a revocation made
# through another replica is refused here within this time.
SHARED_STORE_RECHECK_SECONDS = 5.0


@runtime_checkable
class Notifying(Protocol):
    """A store that tells its listeners of commits made through any connection (PostgreSQL)."""

    def add_listener(self, callback: Callable[[dict[str, Any]], None]) -> None: ...

    def deliveries_of(
        self, workspace: str, message_id: str, agents: Sequence[str]
    ) -> tuple[str, list[tuple[str, int, str, str | None, str | None, str | None]]] | None: ...


def new_replica_id() -> str:
    """A short id for this hub process, shown by ``up``, /health and ``who``."""
    return f"r-{secrets.token_hex(4)}"


def replica_wakeups(events: MailboxEvents, replica: str, store: Notifying) -> Callable[[dict[str, Any]], None]:
    """What to do with a notification: wake the waiters of the mailboxes another replica's commit
    changed (all of a workspace's when it names no mailbox). This replica's own commits already
    woke its waiters, with the deliveries themselves. For a new message with streams waiting
    here, the message is read once and handed to every stream, as a local send's is (each stream
    reading its own mailbox instead costs a query per stream per message)."""

    def wake(payload: dict[str, Any]) -> None:
        if not payload:  # the store's listener reconnected: anything may have changed meanwhile
            events.wake_all()
            return
        if payload.get("r") == replica or "w" not in payload:
            return
        workspace = str(payload["w"])
        agents = payload.get("a")
        if not isinstance(agents, list):
            events.wake_workspace(workspace)
            return
        names = [str(agent) for agent in agents]
        pushed = _read_once(store, workspace, payload.get("m"), names) if events.has_streams(workspace, names) else {}
        events.publish_many(workspace, [(name, pushed.get(name)) for name in names])

    return wake


def _read_once(store: Notifying, workspace: str, message_id: Any, agents: list[str]) -> dict[str, PushedDelivery]:
    """The new message's deliveries to ``agents``, ready to push; none when that fails (then each
    stream reads its mailbox, as after any wake-up without a delivery)."""
    if not isinstance(message_id, str):
        return {}
    try:
        found = store.deliveries_of(workspace, message_id, agents)
    except Exception:  # a store error here must not stop the listener: the wake-ups still go out
        log.warning("could not read message %s for this replica's streams", message_id, exc_info=True)
        return {}
    if found is None:
        return {}
    message_json, rows = found
    return {
        agent: PushedDelivery(seq, state, message_json, target, task_id, task_state)
        for agent, seq, state, target, task_id, task_state in rows
    }
