"""How far a stop hook may keep a session busy: the stop hook's loop guard.

Two agents that answer each other could keep each other awake for ever. The service damps such
loops where they start (guard.py: an echo loop's or a flood's mail is held, and says so); this
guard only bounds how long one stop hook keeps one turn going:

- **Stop**: a stop hook keeps the agent going (``decision: block``) at most ``MAX_STOP_BLOCKS``
  times in a row. The streak ends when a stop finds no mail waiting. A stop that finds mail with
  the streak spent lets the agent stop and starts a cool-down of ``COOLDOWN_SECONDS``, in which no
  stop blocks; after it the streak starts again from nothing. The agent CLI's
  ``stop_hook_active`` (this stop follows a blocked one) counts as a streak of at least one, even
  when this session's state does not know of the block (another hook's, or a lost state file).
  The mail is not held meanwhile: the waiter (or the socket) wakes the stopped session for it.

Pure rules over ``SessionState``; the hooks load and save the state around them.
"""

from __future__ import annotations

from callboard.integrations.hooks.state import SessionState

MAX_STOP_BLOCKS = 3
COOLDOWN_SECONDS = 60.0


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


def _streak(state: SessionState, stop_hook_active: bool) -> int:
    return max(state.stop_streak, 1 if stop_hook_active else 0)
