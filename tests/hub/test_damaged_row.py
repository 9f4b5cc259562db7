"""A stored message that cannot be rendered, planted in a running hub's database, breaks no
reader: REST read, peek and inbox, the SSE stream, MCP ``read_messages`` and the hooks each
show it as such (its id, its sender, a note) and the rest of the mailbox as it is."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from callboard.client.hub import HubClient
from callboard.requests import SendRequest
from tests.hub.conftest import CLI, EventStream, Hub, unique
from tests.integrations.hooks.conftest import AGENT, Hooks
from tests.support.hub_mcp_client import mcp_client
from tests.support.tool_results import ok, words

pytestmark = pytest.mark.anyio

# What the hub stored for a data part of NaN before it refused one: a part holding nothing.
DAMAGED_PARTS = '[{"data":null}]'
NOTE = "cannot be shown: its stored content is damaged"


def plant(hub: Hub, message_id: str) -> None:
    conn = sqlite3.connect(hub.db_path, timeout=10)
    try:
        with conn:
            changed = conn.execute("UPDATE messages SET parts = ? WHERE id = ?", (DAMAGED_PARTS, message_id))
            assert changed.rowcount == 1
    finally:
        conn.close()


async def test_a_damaged_message_is_shown_as_such_by_every_reader_and_the_rest_reads(
    make_hub, era: str, tmp_path: Path
) -> None:
    hub: Hub = make_hub()
    workspace, sender = unique("ws"), unique("alice")
    token = hub.issue(kind="user", workspace=workspace)["token"]
    alice = HubClient(hub.url, token, sender)
    try:
        before = alice.send(SendRequest(to=AGENT, text="before")).message_id
        bad = alice.send(SendRequest(to=AGENT, text="to be damaged")).message_id
        after = alice.send(SendRequest(to=AGENT, text="after")).message_id
    finally:
        alice.close()
    plant(hub, bad)

    def texts(items: list[dict]) -> list[str]:
        return ["\n".join(p.get("text", "") for p in item["message"]["parts"]) for item in items]

    def shown(items: list[dict]) -> None:
        assert [item["message"]["id"] for item in items] == [before, bad, after]
        first, damaged, last = texts(items)
        assert (first, last) == ("before", "after")
        assert NOTE in damaged and bad in damaged and sender in damaged
        assert items[1]["message"]["sender"] == sender

    with hub.http(token, AGENT) as http:
        peeked = http.post("/v1/read", params={"peek": "true", "after": 0})
        assert peeked.status_code == 200, peeked.text
        shown(peeked.json()["items"])
        inbox = http.get("/v1/inbox")
        assert inbox.status_code == 200, inbox.text
        shown(inbox.json())
        assert http.get(f"/v1/messages/{bad}/status").status_code == 200

    with EventStream(hub.url, token, AGENT, last_event_id=0) as stream:
        stream.ready()
        shown([stream.next_event().item for _ in range(3)])

    hooks = Hooks(CLI(tmp_path / "hook-machine"))
    try:
        env = {"CALLBOARD_HUB": hub.url, "CALLBOARD_TOKEN": token, "CALLBOARD_WORKSPACE": workspace}
        answer = hooks.context("session-start", env=env)
        assert answer is not None
        context = answer["hookSpecificOutput"]["additionalContext"]
        assert "before" in context and "after" in context and NOTE in context and bad in context
    finally:
        hooks.close()

    async with mcp_client(hub, era, token, AGENT) as client:
        got = ok(await client.call_tool("read_messages", {}))
    assert [m["id"] for m in got["messages"]] == [before, bad, after]
    assert words(got["messages"][0]) == "before" and NOTE in words(got["messages"][1])

    with hub.http(token, AGENT) as http:
        drained = http.post("/v1/read", params={"after": 0})
        assert drained.status_code == 200, drained.text
        shown(drained.json()["items"])
