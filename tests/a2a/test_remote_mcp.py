"""The MCP tool set addresses an outside A2A agent like any agent: send_message to its name,
the pump (as ``callboard mcp`` runs it) sends the task, read_messages brings its answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from callboard.a2a.remote.card import card_source
from callboard.a2a.remote.pump import PumpSettings, PumpThread
from callboard.client.local import LocalClient
from callboard.config import Settings
from callboard.mcp.tools import mailbox_server, one_client
from tests.support.outside_agent import OutsideAgent
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio


@pytest.fixture
def alice(tmp_path: Path) -> Iterator[LocalClient]:
    env = {"CALLBOARD_HOME": str(tmp_path / "home")}
    client = LocalClient.open(Settings.load(env), agent="alice", env=env, card_source=card_source)
    yield client
    client.service.store.close()


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[OutsideAgent]:
    agent = OutsideAgent(tmp_path).start()
    yield agent
    agent.stop()


async def test_send_message_to_a_remote_and_read_its_answer(alice: LocalClient, outside: OutsideAgent) -> None:
    alice.add_remote("echo", outside.url)
    pump = PumpThread(alice.service, PumpSettings(idle_seconds=0.05)).start()
    try:
        async with Client(mailbox_server(one_client(alice)), mode="legacy") as session:
            result = await session.call_tool("send_message", {"to": "echo", "message": "complete it"})
            assert not result.is_error, result.content
            (outcome,) = result.structured_content["recipients"]  # type: ignore[index]
            assert outcome["state"] == "queued" and "outside A2A agent echo" in json.dumps(outcome)
            listed = (await session.call_tool("list_agents", {})).structured_content
            assert "echo" in json.dumps(listed) and outside.url in json.dumps(listed)

            answers: list[str] = []

            def answered() -> bool:
                answers.extend(i.message.text for i in alice.read().items if i.message.sender == "echo")
                return any("result: complete it" in a for a in answers)

            wait_until(answered, 20, "the remote's artifact as mail")
    finally:
        pump.stop()
