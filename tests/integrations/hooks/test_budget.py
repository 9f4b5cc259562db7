"""The stop hook's loop guard (hooks/budget.py) on its own, with time given."""

from __future__ import annotations

from callboard.integrations.hooks import budget
from callboard.integrations.hooks.state import SessionState


def test_blocks_in_a_row_then_a_cool_down_then_again() -> None:
    state, now = SessionState(), 1000.0
    for turn in range(budget.MAX_STOP_BLOCKS):  # the first stop of a turn, then the ones it kept going
        assert budget.may_block(state, now, stop_hook_active=turn > 0)
        budget.blocked(state, stop_hook_active=turn > 0)
    assert not budget.may_block(state, now, stop_hook_active=True)
    budget.cool_down(state, now)
    assert budget.cooling(state, now + budget.COOLDOWN_SECONDS - 1)
    assert not budget.may_block(state, now + budget.COOLDOWN_SECONDS - 1, stop_hook_active=False)
    after = now + budget.COOLDOWN_SECONDS
    assert not budget.cooling(state, after) and budget.may_block(state, after, stop_hook_active=True)


def test_a_quiet_stop_resets_the_streak() -> None:
    state = SessionState(stop_streak=budget.MAX_STOP_BLOCKS)
    assert not budget.may_block(state, 0.0, stop_hook_active=False)
    budget.quiet(state)
    assert budget.may_block(state, 0.0, stop_hook_active=False)


def test_stop_hook_active_is_a_streak_of_at_least_one() -> None:
    state = SessionState()
    budget.blocked(state, stop_hook_active=True)
    assert state.stop_streak == 2


def test_a_damaged_state_file_reads_as_defaults() -> None:
    # "wakes" was the old wake budget's: a state file an older version wrote still reads.
    state = SessionState.from_json({"session": 5, "stop_streak": "x", "cooldown_until": 12, "wakes": [1, "a", 2.5]})
    assert (state.session, state.stop_streak, state.cooldown_until) == (None, 0, 12.0)
    assert SessionState.from_json([1, 2]) == SessionState()
