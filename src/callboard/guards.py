"""The loop and flood guards: whether a message to a recipient is held, why, and until when.

Two agents that answer each other can keep each other busy for ever, and a runaway sender can
bury a mailbox. Both look different from a conversation, so only they are damped:

- **Echo loop**: the same pair bouncing — ``ECHO_MESSAGES`` messages alternating between two
  agents, each sent less than ``ECHO_GAP_SECONDS`` after the one before it reached the other
  side. The message that completes the run is held ``ECHO_HOLD_SECONDS``; each further message
  of the same run is held twice as long as the last hold, up to ``ECHO_MAX_HOLD_SECONDS``. A
  pause of ``ECHO_GAP_SECONDS`` ends the run, and the next one starts from nothing.
- **Flood**: more than ``FLOOD_MESSAGES`` messages from one sender to one recipient let through
  within ``FLOOD_WINDOW_SECONDS``: the next is held until the window lets it through (a sliding
  window over the times messages were let through, so a flood drains at that rate, in order).

Why these numbers: an ordinary exchange — a few (at most three) messages a minute, a burst from
many senders, a conversation of ten — is never held. Three gaps under 20 s span under a minute,
so a pair that exchanges at most three messages in any minute cannot make a run of even four;
a burst from ten senders is ten pairs of one message each; and a run needs twelve. The
statements are property tests (tests/test_guards.py).

Pure: the service gives ``decide`` the facts (the pair's recent traffic, from the store) and
stores its answer with the delivery. Times are Unix seconds.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

GuardReason = Literal["echo_loop", "flood"]

ECHO_MESSAGES = 12
ECHO_GAP_SECONDS = 20.0
ECHO_HOLD_SECONDS = 60.0
ECHO_MAX_HOLD_SECONDS = 900.0
FLOOD_MESSAGES = 20
FLOOD_WINDOW_SECONDS = 60.0
# The traffic a decision needs, per direction: the last FLOOD_MESSAGES of the sender, and a run
# long enough to count the holds that take an echo loop's hold to its longest.
LOOKBACK_MESSAGES = 32
LOOKBACK_SECONDS = 2 * ECHO_MAX_HOLD_SECONDS + ECHO_GAP_SECONDS * LOOKBACK_MESSAGES


class Exchange(NamedTuple):
    """One earlier message between the pair: who sent it, when, and what the guard decided.

    A named tuple, not a frozen dataclass: the hub makes one per send and per row it reads, and
    a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (about four
    times the cost)."""

    sender: str
    at: float
    held_until: float | None = None
    held_reason: str | None = None

    @property
    def released(self) -> float:
        """When it was (or will be) let through to its recipient."""
        held_until = self.held_until
        return self.at if held_until is None or held_until < self.at else held_until


@dataclass(frozen=True, slots=True)
class Hold:
    """A guard's verdict on one delivery: held for ``reason`` until ``until``."""

    reason: GuardReason
    until: float


def decide(sender: str, now: float, traffic: Sequence[Exchange]) -> Hold | None:
    """Whether a message ``sender`` sends now to the other agent of the pair is held.

    ``traffic``: the pair's earlier messages, both directions, newest first (the store's
    ``pair_traffic``: at least the last ``LOOKBACK_MESSAGES`` of each direction within
    ``LOOKBACK_SECONDS``). The later of the two guards' holds wins."""
    released = sorted(e.released for e in traffic if e.sender == sender)
    return _later(_echo_loop(sender, now, traffic), _flood(now, released))


class PairTraffic:
    """A pair's traffic as ``decide`` takes it (``exchanges``, newest first, the newest ``KEPT``),
    kept up to date send by send (``add``), with each sender's release times kept in order: a
    decision (``decide``, the same verdict as ``decide(sender, now, exchanges)``) then need not
    gather and sort them again. Not thread-safe: its owner locks."""

    KEPT = 2 * LOOKBACK_MESSAGES

    __slots__ = ("exchanges", "_released")

    def __init__(self, exchanges: Sequence[Exchange]) -> None:
        self.exchanges = list(exchanges[: self.KEPT])
        self._released: dict[str, list[float]] = {}
        for exchange in self.exchanges:
            self._released.setdefault(exchange.sender, []).append(exchange.released)
        for times in self._released.values():
            times.sort()

    def decide(self, sender: str, now: float) -> Hold | None:
        return _later(_echo_loop(sender, now, self.exchanges), _flood(now, self.released(sender)))

    def released(self, sender: str) -> Sequence[float]:
        """When ``sender``'s messages among ``exchanges`` were (or will be) let through, in order."""
        return self._released.get(sender, ())

    def add(self, exchange: Exchange) -> None:
        """The pair's newest message; the oldest beyond ``KEPT`` leave."""
        self.exchanges.insert(0, exchange)
        bisect.insort(self._released.setdefault(exchange.sender, []), exchange.released)
        while len(self.exchanges) > self.KEPT:
            gone = self.exchanges.pop()
            times = self._released[gone.sender]
            del times[bisect.bisect_left(times, gone.released)]


def _later(echo: Hold | None, flood: Hold | None) -> Hold | None:
    if echo is None or flood is None:
        return echo or flood
    return flood if flood.until > echo.until else echo


def _echo_loop(sender: str, now: float, traffic: Sequence[Exchange]) -> Hold | None:
    run, holds = 1, 0  # the new message, and the echo holds of the run behind it
    later_sender, later_at = sender, now
    for earlier in traffic:
        if earlier.sender == later_sender or later_at - earlier.released >= ECHO_GAP_SECONDS:
            break
        run += 1
        holds += earlier.held_reason == "echo_loop"
        later_sender, later_at = earlier.sender, earlier.at
    if run < ECHO_MESSAGES:
        return None
    return Hold("echo_loop", now + min(ECHO_HOLD_SECONDS * 2.0 ** min(holds, 16), ECHO_MAX_HOLD_SECONDS))


def _flood(now: float, released: Sequence[float]) -> Hold | None:
    """``released``: when the sender's messages in the pair's traffic were let through, in order."""
    if len(released) < FLOOD_MESSAGES:
        return None
    window_opens = released[-FLOOD_MESSAGES] + FLOOD_WINDOW_SECONDS  # the 20th latest leaves the window
    return Hold("flood", window_opens) if window_opens > now else None


@functools.lru_cache(maxsize=4096)  # every held send of a pair says the same sentence
def describe(reason: str, sender: str, recipient: str) -> str:
    """One sentence on why mail from ``sender`` to ``recipient`` is held."""
    if reason == "echo_loop":
        return (
            f"{sender} and {recipient} have answered each other {ECHO_MESSAGES}+ times within "
            f"{ECHO_GAP_SECONDS:g} s each (an echo loop); it is let through at the time shown."
        )
    return (
        f"{sender} sent {recipient} more than {FLOOD_MESSAGES} messages in {FLOOD_WINDOW_SECONDS:g} s "
        "(a flood); it is let through when the window allows."
    )
