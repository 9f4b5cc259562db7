"""How far mail may keep a session busy: the loop guard of the stop hook and the waiter.

Two agents that answer each other could keep each other awake for ever. So:

- **Stop**: a stop hook keeps the agent going (``decision: block``) at most ``MAX_STOP_BLOCKS``
  times in a row. The streak ends when a stop finds no mail waiting. A stop that finds mail with
  the streak spent lets the agent stop and starts a cool-down of ``COOLDOWN_SECONDS``, in which no
  stop blocks and the waiter wakes no one; after it the streak starts again from nothing. The
  agent CLI's ``stop_hook_active`` (this stop follows a blocked one) counts as a streak of at
  least one, even when this session's state does not know of the block (another hook's, or a
  lost state file).
- **Wake**: the waiter wakes an idle session at most ``MAX_WAKES`` times in any
  ``WAKE_WINDOW_SECONDS`` (a stop that finds nothing ends a stop streak, so it cannot bound
  wakes), and not during a cool-down. Mail held back meanwhile stays in the mailbox: the next
  prompt, stop or wake takes it.

Pure rules over ``SessionState``; the hooks load and save the state around them.
"""

from __future__ import annotations

from switchboard.hooks.state import SessionState

MAX_STOP_BLOCKS = 3
COOLDOWN_SECONDS = 60.0
MAX_WAKES = 5
WAKE_WINDOW_SECONDS = 300.0


def cooling(state: SessionState, now: float) -> bool:
    return now < state.cooldown_until


def may_block(state: SessionState, now: float, stop_hook_active: bool) -> bool:
    """Whether this stop may keep the agent going (when mail is waiting)."""
    return not cooling(state, now) and _streak(state, stop_hook_active) < MAX_STOP_BLOCKS


def blocked(state: SessionState, stop_hook_active: bool) -> None:
    """This stop kept the agent going."""
    state.stop_streak = _streak(state, stop_hook_active) + 1


def quiet(state: SessionState) -> None:
    """This stop found no mail waiting: the streak is over."""
    state.stop_streak = 0


def cool_down(state: SessionState, now: float) -> None:
    """The streak is spent while mail still waits: rest, then start again."""
    state.cooldown_until = now + COOLDOWN_SECONDS
    state.stop_streak = 0


def wake_delay(state: SessionState, now: float) -> float:
    """Seconds until the waiter may wake the session (0: now)."""
    recent = sorted(w for w in state.wakes if now - w < WAKE_WINDOW_SECONDS)
    until_slot = recent[-MAX_WAKES] + WAKE_WINDOW_SECONDS - now if len(recent) >= MAX_WAKES else 0.0
    return max(0.0, state.cooldown_until - now, until_slot)


def woke(state: SessionState, now: float) -> None:
    """The waiter woke the session now."""
    state.wakes = [w for w in state.wakes if now - w < WAKE_WINDOW_SECONDS] + [now]


def _streak(state: SessionState, stop_hook_active: bool) -> int:
    return max(state.stop_streak, 1 if stop_hook_active else 0)
