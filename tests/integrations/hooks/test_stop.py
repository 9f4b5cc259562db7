"""The stop hook: keeps the agent going while mail waits, within the budget (hooks/budget.py)."""

from __future__ import annotations

from typing import Any

import pytest

from callboard.integrations.hooks import budget
from tests.integrations.hooks.conftest import Hooks
from tests.support.hook_stdin import CLIENTS


def block_reason(answer: dict[str, Any] | None) -> str:
    assert answer is not None, "the stop hook let the agent stop"
    assert set(answer) == {"decision", "reason"} and answer["decision"] == "block", answer
    return answer["reason"]


@pytest.mark.parametrize("client", CLIENTS)
def test_stop_blocks_with_the_waiting_mail(hooks: Hooks, client: str) -> None:
    assert hooks.context("stop", client) is None  # nothing waiting: the agent may stop
    message = hooks.send("one more thing: bump the version")
    reason = block_reason(hooks.context("stop", client))
    assert "----- BEGIN MESSAGE" in reason and "bump the version" in reason and "from: reviewer" in reason
    assert reason.rstrip().endswith("before you finish.")  # one line asking the agent to handle it
    assert (hooks.status(message)["state"], hooks.status(message)["via"]) == ("surfaced", "hook")
    assert hooks.context("stop", client, stop_hook_active=True) is None  # handled: it may stop now


@pytest.mark.parametrize("client", ["claude", "copilot"])
def test_the_budget_then_a_cool_down_end_the_blocking(hooks: Hooks, client: str) -> None:
    """Two agents answering each other would keep each other awake: at most MAX_STOP_BLOCKS
    blocks in a row, then a cool-down in which the stop hook lets the agent stop."""
    for turn in range(budget.MAX_STOP_BLOCKS):
        hooks.send(f"ping {turn}")
        block_reason(hooks.context("stop", client, stop_hook_active=turn > 0))
    held = hooks.send("ping again")
    assert hooks.context("stop", client, stop_hook_active=True) is None  # budget spent
    assert hooks.status(held)["via"] is None  # not taken: it waits in the mailbox
    assert hooks.context("stop", client, stop_hook_active=False) is None  # cooling down, mail or not
    assert hooks.context("stop", client, session="another-session") is not None  # the budget is per session


def test_a_quiet_stop_ends_the_streak(hooks: Hooks) -> None:
    for _ in range(budget.MAX_STOP_BLOCKS - 1):
        hooks.send("ping")
        block_reason(hooks.context("stop", stop_hook_active=True))
    assert hooks.context("stop", stop_hook_active=True) is None  # no mail: the streak is over
    for _ in range(budget.MAX_STOP_BLOCKS):
        hooks.send("ping")
        block_reason(hooks.context("stop"))


def test_stop_hook_active_counts_as_a_block_the_state_does_not_know(hooks: Hooks) -> None:
    """Another hook blocked (or the state was lost): the agent CLI's flag still counts."""
    for _ in range(budget.MAX_STOP_BLOCKS - 1):
        hooks.send("ping")
        block_reason(hooks.context("stop", stop_hook_active=True))
    hooks.send("ping")
    assert hooks.context("stop", stop_hook_active=True) is None
