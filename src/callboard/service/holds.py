"""The service's side of the loop and flood guards: ask the store for the facts, let ``guard``
decide, and say what was decided in the words a status, a read or ``who`` shows.

A guard's verdict is taken when a message is sent and stored with each delivery (``held_until``,
``held_reason``): the message is stored and queued like any other, and only its surfacing waits
(see ``waiting``). Nothing has to happen at ``until``: from then on the delivery simply waits to
be surfaced, and a waiting surface (waiter, socket pusher) wakes at that time by itself.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from callboard import guards as guard
from callboard.limits import GUARD_MAX_RECIPIENTS
from callboard.model import DeliveryState, Held, HeldMail, RecipientStatus, built
from callboard.service.from_memory import memory_only, refresh_ahead, store_needed
from callboard.store.parts.guard_facts import GuardFactsPart

# A send to more recipients than this is a broadcast, not a pair's exchange: the guards, which
# look at each pair's traffic (a query per recipient), leave it be.


# How long a pair's traffic read from the store is reused, with this service's own sends added
# to it: a send must not pay a query (on the hub's event loop) each time, and a guard that sees
# another process's sends up to a few seconds late still damps a loop (gaps under 20 s) or a
# flood (a 60 s window). Re-reading it more often cost a busy hub's refresher about a tenth of
# its CPU per send (32 pairs read again every half second, a 64-row query each).
TRAFFIC_REUSE_SECONDS = 5.0
TRAFFIC_PAIRS_KEPT = 4096  # the pairs remembered at once; the least recently used go first


class Guards:
    """Decides the holds on each send, from the pair's recent traffic (``guard.decide``), which it
    reads from the store at most once a ``TRAFFIC_REUSE_SECONDS`` per pair."""

    def __init__(self, facts: GuardFactsPart) -> None:
        self._facts = facts
        self._traffic: OrderedDict[tuple[str, str, str], tuple[float, guard.PairTraffic]] = OrderedDict()
        self._lock = threading.Lock()  # sends are decided on the loop and on worker threads

    def decide(self, workspace: str, sender: str, recipients: Sequence[str], now: datetime) -> dict[str, Held]:
        """The holds the guards put on a message ``sender`` sends now, by recipient (most get none)."""
        if len(recipients) > GUARD_MAX_RECIPIENTS:
            return {}
        at = now.timestamp()
        holds: dict[str, Held] = {}
        others = [recipient for recipient in recipients if recipient != sender]
        decided: list[tuple[str, guard.Hold]] = []
        with self._lock:
            if len(others) > 1 and memory_only():  # every pair's traffic in memory before the first is changed, or none
                for recipient in others:
                    self._pair_traffic(workspace, sender, recipient, now)
            for recipient in others:
                traffic = self._pair_traffic(workspace, sender, recipient, now)
                hold = traffic.decide(sender, at)
                if hold is None:
                    traffic.add(guard.Exchange(sender, at))
                else:
                    traffic.add(guard.Exchange(sender, at, hold.until, hold.reason))
                    decided.append((recipient, hold))
        for recipient, hold in decided:
            holds[recipient] = built(
                Held,
                reason=hold.reason,
                until=datetime.fromtimestamp(hold.until, UTC),
                why=guard.describe(hold.reason, sender, recipient),
            )
        return holds

    def _pair_traffic(self, workspace: str, a: str, b: str, now: datetime) -> guard.PairTraffic:
        """The pair's traffic, newest first: the one read less than ``TRAFFIC_REUSE_SECONDS`` ago
        (with the sends decided since), or a fresh read. Call with the lock held."""
        first, second = sorted((a, b))
        key = (workspace, first, second)
        kept = self._traffic.get(key)
        age = now.timestamp() - kept[0] if kept is not None else -1.0
        if kept is not None and 0 <= age < TRAFFIC_REUSE_SECONDS:
            self._traffic.move_to_end(key)
            if age >= TRAFFIC_REUSE_SECONDS / 2 and memory_only():
                refresh_ahead((self, key), lambda: self._read_again(key, now))
            return kept[1]
        store_needed()
        since = now - timedelta(seconds=guard.LOOKBACK_SECONDS)
        traffic = guard.PairTraffic(self._facts.pair_traffic(workspace, a, b, since, guard.LOOKBACK_MESSAGES))
        self._keep(key, now.timestamp(), traffic)
        return traffic

    def _keep(self, key: tuple[str, str, str], read_at: float, traffic: guard.PairTraffic) -> None:
        self._traffic[key] = (read_at, traffic)
        self._traffic.move_to_end(key)
        while len(self._traffic) > TRAFFIC_PAIRS_KEPT:
            self._traffic.popitem(last=False)

    def _read_again(self, key: tuple[str, str, str], now: datetime) -> None:
        """Read the pair's traffic again (``refresh_ahead``), keeping this service's sends
        decided since the last read that the store does not have yet (not yet committed)."""
        workspace, a, b = key
        since = now - timedelta(seconds=guard.LOOKBACK_SECONDS)
        stored = self._facts.pair_traffic(workspace, a, b, since, guard.LOOKBACK_MESSAGES)
        with self._lock:
            kept = self._traffic.get(key)
            if kept is not None:  # since the last read, only this service's own sends were added
                seen = {(e.sender, e.at) for e in stored}
                ours = [e for e in kept[1].exchanges if e.at >= kept[0] and (e.sender, e.at) not in seen]
                stored = sorted([*ours, *stored], key=lambda e: e.at, reverse=True)
            self._keep(key, now.timestamp(), guard.PairTraffic(stored))


def explained(held: HeldMail) -> HeldMail:
    return held.model_copy(update={"why": guard.describe(held.reason, held.sender, held.recipient)})


def held_mail(facts: GuardFactsPart, workspace: str, agents: Sequence[str] | None, now: datetime) -> list[HeldMail]:
    """The mail of these agents (None: every agent of the workspace) a guard holds now, each
    with its reason in words."""
    return [explained(h) for h in facts.held_mail(workspace, agents, now)]


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
