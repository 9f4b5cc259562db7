"""A runner on a second machine (network namespace m2, through the hub): mail sent on m1 wakes
it at once, its generic agent answers by mail to m1, and `runner status` on m1 shows it — its
machine, state, CLI session and turns — and, once SIGTERMed, that it stopped."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.cli_runner import texts
from tests.support.netns import CALLBOARD, Network, unavailable_reason
from tests.support.waiting import wait_until

UNAVAILABLE = unavailable_reason()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no network namespaces here: {UNAVAILABLE}")

MEMBER = Path(__file__).parents[1] / "support" / "generic_agents" / "team_member.py"


def test_a_runner_on_another_machine_is_woken_through_the_hub_and_seen_from_the_first(network: Network) -> None:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    runner = network.spawn(
        "m2",
        [CALLBOARD, "run", "--agent", "qa", "--cli", f"generic:{sys.executable} {MEMBER} qa"],
        agent="qa",
        env={"PATH": path},
    )

    def reporting() -> dict | None:
        listed = network.run_json("m1", "runner", "status", "qa", agent="product")
        return next((r for r in listed if r["machine"] == "m2" and r["state"] == "idle"), None)

    wait_until(reporting, timeout=60, what="qa's runner on m2 to report idle through the hub", interval=0.2)
    token = f"tok-{uuid.uuid4().hex[:8]}"
    network.run_json("m1", "send", "qa", f"review {token}", agent="product")

    def answered() -> bool:
        got = network.run_json("m1", "read", "--wait", "5", agent="product")
        return f"passed {token}" in texts(got)

    wait_until(answered, timeout=60, what="qa's answer from m2", interval=0.05)

    def turn_reported() -> dict | None:  # the answer is sent inside the turn; its end is reported after
        [seen] = network.run_json("m1", "runner", "status", "qa", agent="product")
        return seen if seen["turns"] >= 1 else None

    seen = wait_until(turn_reported, timeout=60, what="qa's runner to report its turn done", interval=0.2)
    assert (seen["machine"], seen["pid"], seen["live"]) == ("m2", runner.pid, True), seen
    assert seen["turns"] >= 1 and seen["cli_session_id"].startswith("qa-") and seen["input_tokens"] >= 5, seen

    runner.terminate()
    assert runner.wait(30) == 0
    [last] = network.run_json("m1", "runner", "status", "qa", agent="product")
    assert (last["state"], last["live"]) == ("stopped", True), last
