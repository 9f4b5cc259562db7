"""Opt-in A2A 0.3 compatibility (``up --a2a-compat-0-3``): an a2a-sdk client speaking 0.3 tasks a
Callboard agent on the same endpoint; without the flag, 0.3 requests are refused."""

from __future__ import annotations

import httpx
import pytest
from a2a.types import AgentCard, AgentInterface, GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

from callboard.hub.app import A2AOptions
from callboard.model import Part as OurPart
from callboard.tasks import TaskArtifact
from callboard.tasks import TaskState as OurState
from tests.a2a.conftest import a2a_client, fetch_card, unique
from tests.support.a2a_hub import InProcessHub

pytestmark = pytest.mark.anyio

OLD_SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "message/send",
    "params": {
        "message": {"kind": "message", "role": "user", "messageId": "old-1", "parts": [{"kind": "text", "text": "hi"}]}
    },
}


def only_0_3(card: AgentCard) -> AgentCard:
    """The card as a 0.3 client uses it: its 0.3 JSON-RPC interface alone."""
    old = AgentCard()
    old.CopyFrom(card)
    del old.supported_interfaces[:]
    old.supported_interfaces.extend(
        AgentInterface(url=i.url, protocol_binding=i.protocol_binding, protocol_version=i.protocol_version)
        for i in card.supported_interfaces
        if i.protocol_version == "0.3"
    )
    return old


async def test_a_0_3_client_tasks_an_agent_when_the_hub_allows_it(tmp_path) -> None:
    with InProcessHub(tmp_path, a2a=A2AOptions(compat_0_3=True)) as hub:
        bob = unique("bob")
        hub.describe(bob, "reviews", ["review"])
        async with httpx.AsyncClient(timeout=10) as http:
            served = (await http.get(f"{hub.agent_url(bob)}/.well-known/agent-card.json")).json()
        assert served["url"] == f"{hub.agent_url(bob)}/jsonrpc" and served["protocolVersion"] == "0.3"
        card = only_0_3(await fetch_card(hub, bob))
        assert [i.protocol_version for i in card.supported_interfaces] == ["0.3"]
        async with a2a_client(card, hub.token(unique("old")), "JSONRPC") as client:
            request = SendMessageRequest(
                message=Message(role=Role.ROLE_USER, message_id=unique("m"), parts=[Part(text="old hello")])
            )
            [sent] = [e async for e in client.send_message(request)]
            task_id = sent.task.id
            [item] = [i for i in hub.service.read(hub.caller(bob)).items if i.message.task_id == task_id]
            assert item.message.text == "old hello"
            artifact = TaskArtifact(artifact_id="r", name="review", parts=[OurPart(text="fine")])
            hub.service.update_task(hub.caller(bob), task_id, state=OurState.COMPLETED, artifacts=[artifact])
            done = await client.get_task(GetTaskRequest(id=task_id))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert done.artifacts[0].parts[0].text == "fine"
        assert hub.errors == []


async def test_without_the_flag_a_0_3_request_is_refused(hub: InProcessHub) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {hub.token(unique('old'))}"}) as http:
        answer = await http.post(f"{hub.agent_url(bob)}/jsonrpc", json=OLD_SEND)
    assert answer.json()["error"]["code"] in (-32601, -32009), answer.text
    assert hub.service.inbox(hub.caller(bob)) == []
