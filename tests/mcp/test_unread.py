"""A tool's unread count costs no store query of its own where its call counted already (a
read), and is counted once otherwise: the embedded store's side of one round trip per call."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from callboard.client.local import LocalClient
from callboard.requests import SendRequest
from tests.support.tool_results import ok

pytestmark = pytest.mark.anyio


async def test_a_read_brings_its_own_count_and_other_tools_count_once(
    agents: Callable[[str], LocalClient], tools, monkeypatch: pytest.MonkeyPatch
):
    agents("alice").send(SendRequest(to="bob", text="one"))
    agents("alice").send(SendRequest(to="bob", text="two"))
    bob = agents("bob")
    counted: list[str] = []
    count = bob.service.mailbox.unread_count
    monkeypatch.setattr(
        bob.service.mailbox, "unread_count", lambda caller: counted.append(caller.agent) or count(caller)
    )
    async with tools("bob") as tool_server:
        assert ok(await tool_server.call_tool("read_messages", {"limit": 1}))["unread"] == 1
        assert counted == []  # the read's own answer had it
        assert ok(await tool_server.call_tool("list_channels", {}))["unread"] == 1
        assert counted == ["bob"]
