"""The Codex adapter driving the real CLI (from npm) against the mock model (Responses API).

One ``codex exec`` per turn, our MCP server given by ``-c`` overrides only (the CODEX_HOME's
config.toml names just the mock provider): the model answers through send_message. A turn whose
process is killed raises CliExited; the next turn resumes the same thread and its request carries
the earlier conversation. ``clear`` starts a new thread.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from callboard.runner.adapters.base import CliExited, Launch, TurnEvent
from callboard.runner.adapters.codex import CodexAdapter
from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, TEST_TIMEOUT, Machine
from tests.support.codex_config import offline_config
from tests.support.mock_model import MockModel

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


def launch(codex: Path, machine: Machine, model: MockModel, lines: list[str]) -> Launch:
    codex_home = machine.home / ".codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(offline_config(model))  # the user's own: provider only
    env = machine.env({"CODEX_HOME": str(codex_home), "MOCK_MODEL_API_KEY": "mock-key", **model.proxy_env()})
    return Launch(
        agent="alice",
        cwd=machine.workdir,
        env=env,
        mcp_server=machine.mcp_server("alice"),
        role_prompt="You are alice, a reviewer.",
        command=(str(codex),),
        log=lines.append,
    )


def turn(adapter: CodexAdapter, text: str, turn_id: str) -> list[TurnEvent]:
    adapter.prompt(text, turn_id)
    return list(adapter.events(time.monotonic() + RUN_TIMEOUT))


def test_a_codex_turn_answers_through_our_mcp_server_and_a_killed_turn_resumes_the_thread(
    codex: Path, machine: Machine, model: MockModel
):
    lines: list[str] = []
    adapter = CodexAdapter()
    adapter.start(launch(codex, machine, model, lines))
    events = turn(adapter, "Tell bob that alice says hello.", "t1")
    seen = f"{events}\n{lines}\n{model.summary()}"
    kinds = [e.kind for e in events]
    assert kinds[0] == "session" and "took" in kinds and kinds[-2:] == ["usage", "done"], seen
    assert [e.text for e in events if e.kind == "tool"] == ["send_message"], seen
    usage = events[-2].usage
    assert usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0, seen
    (mail,) = machine.mailbox("bob")
    assert mail.message.sender == "alice" and mail.message.text == model.tool_input["message"]
    thread = adapter.session_id
    assert thread and adapter.snapshot().transcript is not None

    adapter.prompt("Lost in a crash.", "t2")
    assert adapter.process is not None
    os.killpg(adapter.process.pid, signal.SIGKILL)
    with pytest.raises(CliExited):
        list(adapter.events(time.monotonic() + RUN_TIMEOUT))

    adapter.start(adapter.launch, resume=thread)  # type: ignore[arg-type]
    events = turn(adapter, "What did you do?", "t3")
    assert events[-1].kind == "done" and adapter.session_id == thread, f"{events}\n{lines}"
    (asked,) = [r for r in model.model_requests() if "What did you do?" in str(r.body)]
    assert "Tell bob that alice says hello." in str(asked.body) and "You are alice" in str(asked.body)
    # one request against the first turn's two: the turn's own tokens, not the thread's running total
    assert events[-2].usage is not None and 0 < events[-2].usage.input_tokens < usage.input_tokens

    adapter.clear()
    events = turn(adapter, "A new thread.", "t4")
    assert adapter.session_id not in (None, thread), events
