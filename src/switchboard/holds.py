"""The service's side of the loop and flood guards: ask the store for the facts, let ``guard``
decide, and say what was decided in the words a status, a read or ``who`` shows.

A guard's verdict is taken when a message is sent and stored with each delivery (``held_until``,
``held_reason``): the message is stored and queued like any other, and only its surfacing waits
(see ``waiting``). Nothing has to happen at ``until``: from then on the delivery simply waits to
be surfaced, and a waiting surface (waiter, socket pusher) wakes at that time by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from switchboard import guard
from switchboard.model import DeliveryState, Held, HeldMail, RecipientStatus
from switchboard.store.base import Store

# A send to more recipients than this is a broadcast, not a pair's exchange: the guards, which
# look at each pair's traffic (a query per recipient), leave it be.
GUARD_MAX_RECIPIENTS = 16


def decide(store: Store, workspace: str, sender: str, recipients: Sequence[str], now: datetime) -> dict[str, Held]:
    """The holds the guards put on a message ``sender`` sends now, by recipient (most get none)."""
    if len(recipients) > GUARD_MAX_RECIPIENTS:
        return {}
    since = now - timedelta(seconds=guard.LOOKBACK_SECONDS)
    holds: dict[str, Held] = {}
    for recipient in recipients:
        if recipient == sender:
            continue
        traffic = store.pair_traffic(workspace, sender, recipient, since, guard.LOOKBACK_MESSAGES)
        hold = guard.decide(sender, now.timestamp(), traffic)
        if hold is not None:
            holds[recipient] = Held(
                reason=hold.reason,
                until=datetime.fromtimestamp(hold.until, UTC),
                why=guard.describe(hold.reason, sender, recipient),
            )
    return holds


def explained(held: HeldMail) -> HeldMail:
    return held.model_copy(update={"why": guard.describe(held.reason, held.sender, held.recipient)})


def held_mail(store: Store, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
    """The mail of these agents (None: every agent of the workspace) a guard holds now, each
    with its reason in words."""
    return [explained(h) for h in store.held_mail(workspace, agents, now)]


def shown(status: RecipientStatus, sender: str, now: datetime) -> RecipientStatus:
    """A recipient's status as people read it: ``held`` while a guard holds it back (neither
    surfaced nor read yet, and its time not come), with the reason in words."""
    if status.held is None:
        return status
    held = status.held.model_copy(update={"why": guard.describe(status.held.reason, sender, status.agent or "")})
    holding = (
        isinstance(status.state, DeliveryState)
        and status.state.rank < DeliveryState.surfaced.rank
        and status.surfaced_at is None
        and now < held.until
    )
    return status.model_copy(update={"held": held, "state": "held" if holding else status.state})
