"""Opt-in A2A 0.3 compatibility (``up --a2a-compat-0-3``): an a2a-sdk client speaking 0.3 tasks a
Callboard agent on the same endpoint; without the flag, a 0.3 request is refused with A2A's
VersionNotSupported, saying which version the hub speaks and which flag lets 0.3 in."""

from __future__ import annotations

import httpx
import pytest
from a2a.types import AgentCard, AgentInterface, GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState
from a2a.utils.errors import VersionNotSupportedError

from callboard.hub.app import A2AOptions
from callboard.model import Part as OurPart
from callboard.tasks import TaskArtifact
from callboard.tasks import TaskState as OurState
from tests.a2a.conftest import a2a_client, fetch_card, unique
from tests.support.a2a_cards import only_0_3
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
            [item] = [i for i in hub.service.mailbox.read(hub.caller(bob)).items if i.message.task_id == task_id]
            assert item.message.text == "old hello"
            artifact = TaskArtifact(artifact_id="r", name="review", parts=[OurPart(text="fine")])
            hub.service.tasking.update_task(hub.caller(bob), task_id, state=OurState.COMPLETED, artifacts=[artifact])
            done = await client.get_task(GetTaskRequest(id=task_id))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert done.artifacts[0].parts[0].text == "fine"
        assert hub.errors == []


FLAG = "callboard up --a2a-compat-0-3"
OLD_REST_SEND = {"message": {"messageId": "old-2", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}
# Requests as A2A 0.3 clients send them (0.3 method names and paths, the 0.3 header or none),
# and a 1.0 request without its version header (which A2A reads as 0.3).
OLD_REQUESTS = {
    "message/send": ("POST", "jsonrpc", OLD_SEND, {}),
    "message/send, A2A-Version 0.3": ("POST", "jsonrpc", OLD_SEND, {"A2A-Version": "0.3"}),
    "tasks/get": ("POST", "jsonrpc", {**OLD_SEND, "method": "tasks/get", "params": {"id": "t1"}}, {}),
    "message/stream": ("POST", "jsonrpc", {**OLD_SEND, "method": "message/stream"}, {"A2A-Version": "0.3"}),
    "SendMessage without A2A-Version": (
        "POST",
        "jsonrpc",
        {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "parts": []}}},
        {},
    ),
    "SendMessage, A2A-Version 2.0": (
        "POST",
        "jsonrpc/",
        {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "parts": []}}},
        {"A2A-Version": "2.0"},
    ),
    "REST v1/message:send": ("POST", "rest/v1/message:send", OLD_REST_SEND, {}),
    "REST v1/tasks/ID, A2A-Version 0.3": ("GET", "rest/v1/tasks/t1", None, {"A2A-Version": "0.3"}),
    "REST message:send without A2A-Version": ("POST", "rest/message:send", OLD_REST_SEND, {}),
}


@pytest.mark.parametrize("name", list(OLD_REQUESTS))
async def test_without_the_flag_a_0_3_request_is_told_the_version_and_the_flag(hub: InProcessHub, name: str) -> None:
    method, path, body, headers = OLD_REQUESTS[name]
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"Bearer {hub.token(unique('old'))}"}) as http:
        answer = await http.request(method, f"{hub.agent_url(bob)}/{path}", json=body, headers=headers)
    if path.startswith("jsonrpc"):
        assert answer.status_code == 200, answer.text
        error = answer.json()["error"]
        assert error["code"] == -32009 and answer.json()["id"] == 1, answer.text  # VersionNotSupported
        [info] = error["data"]
    else:
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["status"] == "FAILED_PRECONDITION", answer.text
        [info] = error["details"]
    assert info["reason"] == "VERSION_NOT_SUPPORTED" and info["metadata"]["supported"] == "1.0", answer.text
    assert "this hub speaks A2A 1.0" in error["message"] and FLAG in error["message"], error["message"]
    assert hub.service.mailbox.inbox(hub.caller(bob)) == []


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_sdks_0_3_client_reading_the_card_is_told_the_version_and_the_flag(
    hub: InProcessHub, binding: str
) -> None:
    """The a2a-sdk's 0.3 client, on the endpoint the (1.0) card names for its binding."""
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    async with httpx.AsyncClient(timeout=10) as http:
        served = (await http.get(f"{hub.agent_url(bob)}/.well-known/agent-card.json")).json()
    assert not {"url", "preferredTransport", "additionalInterfaces"} & set(served)  # a 1.0 card, nothing more
    [url] = [i["url"] for i in served["supportedInterfaces"] if i["protocolBinding"] == binding]
    old = AgentCard()
    old.CopyFrom(await fetch_card(hub, bob))
    del old.supported_interfaces[:]
    old.supported_interfaces.append(AgentInterface(url=url, protocol_binding=binding, protocol_version="0.3"))
    async with a2a_client(old, hub.token(unique("old")), binding) as client:
        request = SendMessageRequest(
            message=Message(role=Role.ROLE_USER, message_id=unique("m"), parts=[Part(text="hi")])
        )
        with pytest.raises(VersionNotSupportedError) as refused:
            [e async for e in client.send_message(request)]
    assert "this hub speaks A2A 1.0" in refused.value.message and FLAG in refused.value.message
    assert hub.service.mailbox.inbox(hub.caller(bob)) == []


async def test_with_the_flag_another_version_is_told_both_it_speaks(tmp_path) -> None:
    with InProcessHub(tmp_path, a2a=A2AOptions(compat_0_3=True)) as hub:
        bob = unique("bob")
        hub.describe(bob, "reviews", [])
        headers = {"Authorization": f"Bearer {hub.token(unique('new'))}", "A2A-Version": "2.0"}
        async with httpx.AsyncClient(timeout=10, headers=headers) as http:
            answer = await http.post(f"{hub.agent_url(bob)}/jsonrpc", json={**OLD_SEND, "method": "GetTask"})
        error = answer.json()["error"]
        assert error["code"] == -32009 and "A2A 1.0 and 0.3" in error["message"] and FLAG not in error["message"]
        assert hub.errors == []
