"""An A2A task reaches a live Claude Code session, and its model answers it with our tools.

Claude Code (the current version, from npm) runs headless with its stdin left open, against the
local mock model, with ``callboard mcp`` as alice's stdio server logged in to a hub (a real hub
on a loopback port). An outside A2A client, the official ``a2a-sdk`` client with a token that
names it, sends alice a streaming task through the hub. Nobody types a prompt: the task's mail
goes into the session's messaging socket, the idle session starts a turn, and the model (the
mock, scripted to answer a task it is shown) calls ``update_task`` with an artifact. The outside
client sees the task working (the session took it up) and then completed, with the artifact.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCard, Message, Part, Role, SendMessageRequest, TaskState
from google.protobuf.json_format import ParseDict

from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, WAKE_TIMEOUT, LiveCli, Machine
from tests.support.a2a_hub import InProcessHub
from tests.support.live_claude_code import SERVER
from tests.support.live_claude_code import start_session as socket_session
from tests.support.mock_model import MockModel, Recorded

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]

TASK_LINE = re.compile(r"task: (\S+?),")  # the fenced mail's line naming its task (fence.py)
ASK = "Please review PR 7 for the orders endpoint."
REVIEW = "review of PR 7: LGTM, one nit on error codes"


def answer_the_task(request: Recorded) -> dict[str, Any] | None:
    """What the scripted model does with a request: a task in front of it is answered with
    update_task (completed, with an artifact); anything else is left alone."""
    found = TASK_LINE.search(request.conversation_text())
    if found is None or ASK not in request.conversation_text():
        return None
    return {
        "task_id": found.group(1),
        "state": "completed",
        "message": "Reviewed.",
        "artifacts": [{"text": REVIEW, "filename": "review.md", "media_type": "text/markdown"}],
    }


def start_session(claude: Path, machine: Machine, model: MockModel, tmp: Path, hub: InProcessHub) -> LiveCli:
    """Claude Code headless with alice's server logged in to the hub, after its first turn."""
    return socket_session(
        claude,
        machine,
        model,
        tmp,
        server_env={"CALLBOARD_HUB": hub.url, "CALLBOARD_TOKEN": hub.token("alice")},
        # allowed without a prompt, as a user allows our tools
        args=("--allowedTools", f"mcp__{SERVER}__update_task"),
    )


async def outside_client_sends_a_task(hub: InProcessHub) -> list[tuple[str, TaskState, str]]:
    """The outside client's streaming task to alice: each event as (kind, state, text)."""
    async with httpx.AsyncClient(timeout=30) as http:
        raw = (await http.get(f"{hub.agent_url('alice')}/.well-known/agent-card.json")).json()
    card = ParseDict(raw, AgentCard(), ignore_unknown_fields=True)
    headers = {"Authorization": f"Bearer {hub.token('outside-caller')}"}
    seen: list[tuple[str, TaskState, str]] = []
    async with httpx.AsyncClient(headers=headers, timeout=WAKE_TIMEOUT) as http:
        config = ClientConfig(httpx_client=http, streaming=True, supported_protocol_bindings=["JSONRPC"])
        client = ClientFactory(config).create(card)
        request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id="pr-7", parts=[Part(text=ASK)]))
        async for event in client.send_message(request):
            kind = event.WhichOneof("payload")
            if kind == "task":
                texts = [p.text for a in event.task.artifacts for p in a.parts]
                seen.append((kind, event.task.status.state, "\n".join(texts)))
            elif kind == "status_update":
                seen.append((kind, event.status_update.status.state, ""))
            elif kind == "artifact_update":
                seen.append((kind, TaskState.TASK_STATE_UNSPECIFIED, event.artifact_update.artifact.parts[0].text))
        await client.close()
    return seen


def test_an_a2a_task_reaches_a_live_claude_code_session_and_its_model_completes_it(
    claude_code_current: Path, machine: Machine, socket_tmp: Path, tmp_path: Path
):
    with (
        InProcessHub(tmp_path / "hub") as hub,
        MockModel(tool_input=answer_the_task, tool="update_task", final_text="Task done.") as model,
    ):
        session = start_session(claude_code_current, machine, model, socket_tmp, hub)
        turns = len(session.results())

        try:
            seen = asyncio.run(asyncio.wait_for(outside_client_sends_a_task(hub), 2 * WAKE_TIMEOUT))
        except TimeoutError:
            tasks = hub.service.tasking.list_tasks(hub.caller("outside-caller")).tasks
            pytest.fail(f"the task did not complete: {tasks}\n{model.summary()}\n{session.transcript()[-3000:]}")

        # The session woke by itself (nothing typed on stdin), took the task up, answered it.
        asked = next(r for r in model.model_requests() if r.mentions(ASK))  # then ToolSearch, then update_task
        assert "BEGIN MESSAGE" in asked.last_user_text() and "from: outside-caller" in asked.last_user_text()
        assert len(session.results()) > turns or session.wait_for(
            lambda: len(session.results()) > turns, "the woken turn to finish"
        )
        states = [state for kind, state, _ in seen if kind != "artifact_update"]
        assert states[0] == TaskState.TASK_STATE_SUBMITTED, seen
        assert TaskState.TASK_STATE_WORKING in states, seen  # taken up when the session had it
        assert states[-1] == TaskState.TASK_STATE_COMPLETED, seen
        assert states.index(TaskState.TASK_STATE_WORKING) < states.index(TaskState.TASK_STATE_COMPLETED)
        assert any(REVIEW in text for _, _, text in seen), seen  # the artifact reached the outside client
        assert model.offered_tool() == f"mcp__{SERVER}__update_task"  # loaded through ToolSearch
        (result,) = model.tool_results()
        assert "completed" in result, result
        assert session.close() == 0
        assert hub.errors == []
