"""The Claude Code adapter driving the real CLI (current version, from npm) against the mock model.

One warm ``claude -p`` over stream-json: a turn's prompt reaches the model's next request, the
model answers through our MCP server's send_message, and the turn's events say so (session,
took, tool, usage with cost, done). SIGKILL of the CLI, then a start with ``resume``: the same
session goes on and the next request carries the earlier conversation. ``clear`` starts a new
session whose requests carry none of it.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from callboard.runner.adapters.base import CliExited, Launch, TurnEvent
from callboard.runner.adapters.claude import ClaudeAdapter
from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, TEST_TIMEOUT, Machine, claude_code_env
from tests.support.mock_model import MockModel
from tests.support.waiting import scaled, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]

ASK = "Tell bob that alice says hello."


def launch(claude: Path, machine: Machine, model: MockModel, lines: list[str]) -> Launch:
    return Launch(
        agent="alice",
        cwd=machine.workdir,
        env=claude_code_env(machine, model),
        mcp_server=machine.mcp_server("alice"),
        role_prompt="You are alice, a reviewer.",
        command=(str(claude),),
        log=lines.append,
    )


def turn(adapter: ClaudeAdapter, text: str, turn_id: str) -> list[TurnEvent]:
    adapter.prompt(text, turn_id)
    return list(adapter.events(time.monotonic() + RUN_TIMEOUT))


@pytest.fixture
def adapter():
    adapter = ClaudeAdapter()
    yield adapter
    adapter.stop(grace=5)


def test_a_turn_reaches_the_model_and_answers_through_our_mcp_server(
    claude_code_current: Path, machine: Machine, model: MockModel, adapter: ClaudeAdapter
):
    lines: list[str] = []
    adapter.start(launch(claude_code_current, machine, model, lines))
    events = turn(adapter, ASK, "t1")
    seen = f"{events}\n{lines}\n{model.summary()}"
    kinds = [e.kind for e in events]
    assert kinds[0] == "session" and kinds[-1] == "done", seen
    assert kinds.index("took") < kinds.index("usage"), seen
    assert adapter.session_id == events[0].session_id
    assert [e.text for e in events if e.kind == "tool"] == ["ToolSearch", "mcp__callboard__send_message"], seen
    (usage,) = [e.usage for e in events if e.kind == "usage"]
    assert usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0 and usage.cost_usd, seen
    assert model.requests_mentioning(ASK), seen
    assert "You are alice, a reviewer." in str(model.requests_mentioning(ASK)[0].body.get("system")), seen
    (mail,) = machine.mailbox("bob")
    assert mail.message.sender == "alice" and mail.message.text == model.tool_input["message"]
    snapshot = adapter.snapshot()
    assert snapshot.session_id == adapter.session_id and snapshot.transcript is not None
    assert snapshot.transcript.is_file(), snapshot  # the CLI's own transcript, where we say it is
    assert not list(Path(machine.home, ".claude", "sessions").glob("*.json")) or all(
        not json.loads(p.read_text()).get("messagingSocketPath")
        for p in Path(machine.home, ".claude", "sessions").glob("*.json")
    ), "the runner's CLI has a messaging socket: mail could reach it past the runner"


def test_a_killed_cli_resumes_its_session_and_a_clear_starts_a_fresh_one(
    claude_code_current: Path, machine: Machine, adapter: ClaudeAdapter
):
    with MockModel(tool_input=None) as model:
        lines: list[str] = []
        spec = launch(claude_code_current, machine, model, lines)
        adapter.start(spec)
        (before,) = [e.usage for e in turn(adapter, "Remember the word PELICAN.", "t1") if e.kind == "usage"]
        first = adapter.session_id
        process = adapter._process
        assert process is not None and first
        os.killpg(process.pid, signal.SIGKILL)  # SIGKILL: the CLI and its MCP server, as a crash would
        wait_until(lambda: not adapter.alive(), timeout=10, what="the killed CLI to be seen dead")
        with pytest.raises(CliExited):
            turn(adapter, "Are you there?", "t2")

        adapter.start(spec, resume=first)
        events = turn(adapter, "What was the word?", "t3")
        assert events[-1].kind == "done", f"{events}\n{lines}"
        assert adapter.session_id == first
        (after,) = [e.usage for e in events if e.kind == "usage"]
        assert (
            before and after and after.cost_usd == pytest.approx(before.cost_usd)
        )  # this turn's cost, not the session's
        (asked,) = model.requests_saying("What was the word?")
        assert asked.mentions("Remember the word PELICAN."), model.summary()  # the earlier conversation

        adapter.clear()
        assert adapter.session_id not in (None, first)
        turn(adapter, "Fresh start.", "t4")
        (fresh,) = model.requests_saying("Fresh start.")
        assert not fresh.mentions("PELICAN"), model.summary()


def test_urgent_input_goes_in_mid_turn_and_an_interrupt_ends_a_turn(
    claude_code_current: Path, machine: Machine, adapter: ClaudeAdapter
):
    with MockModel(tool_input=None) as model:
        lines: list[str] = []
        adapter.start(launch(claude_code_current, machine, model, lines))
        adapter.prompt("RUN_BASH: sleep 2", "t1")
        kinds = []
        for event in adapter.events(time.monotonic() + RUN_TIMEOUT):
            kinds.append(event.kind)
            if event.kind == "tool":
                assert adapter.inject("URGENT-7f3a: the build is red.")  # after the running tool round
        assert kinds[-1] == "done", f"{kinds}\n{lines}"
        urgent = model.requests_mentioning("URGENT-7f3a")
        assert urgent and urgent[0].bash_results(), model.summary()  # the same turn, after the tool's result

        adapter.prompt("RUN_BASH: sleep 60", "t2")
        began = time.monotonic()
        events = []
        for event in adapter.events(time.monotonic() + RUN_TIMEOUT):
            events.append(event)
            if event.kind == "tool":
                adapter.interrupt()
        # The interrupt cuts the 60 s tool short. Claude Code ends the turn as an error, or, when
        # the interrupt lands while the tool is still being started (a loaded machine), gives the
        # model the cancelled tool's result and ends it normally: either way, at once.
        assert events[-1].kind in ("failed", "done") and time.monotonic() - began < scaled(30), f"{events}\n{lines}"
        assert adapter.alive()  # the process lives on for the next turn
        assert turn(adapter, "Still there?", "t3")[-1].kind == "done"
