"""The task tools through the official ``mcp`` client, in both protocol eras: a model that was
asked a task sees it in its mail, asks back (input-required), gets the answer, hands over
artifacts and completes it; list_tasks shows both sides; every refusal is a tool error with its code."""

from __future__ import annotations

import base64

import pytest

from callboard.requests import TaskRequest
from tests.support.tool_results import failed, ok, text_of

pytestmark = pytest.mark.anyio


async def test_a_model_works_a_task_it_was_asked_with_update_task(agents, tools):
    alice = agents("alice")
    agents("bob")
    opened = alice.open_task(TaskRequest(to="bob", parts=[{"text": "review PR 7"}])).task
    async with tools("bob") as bob:
        mail = ok(await bob.call_tool("read_messages", {}))
        assert "review PR 7" in mail["messages"][0]["message"]

        asked = ok(
            await bob.call_tool(
                "update_task", {"task_id": opened.id, "state": "input-required", "message": "which branch?"}
            )
        )
        assert (asked["task"]["state"], asked["task"]["requester"]) == ("input-required", "alice")
        assert [i.message.text for i in alice.read().items] == ["which branch?"]  # the question is alice's mail

        alice.open_task(
            TaskRequest(to="bob", parts=[{"text": "main"}], task_id=opened.id)
        )  # the answer goes on with the same task
        listed = ok(await bob.call_tool("list_tasks", {}))
        assert [(t["id"], t["state"]) for t in listed["tasks"]] == [(opened.id, "submitted")]
        assert "main" in ok(await bob.call_tool("read_messages", {}))["messages"][0]["message"]

        raw = base64.b64encode(b"\x89PNG").decode()
        done = ok(
            await bob.call_tool(
                "update_task",
                {
                    "task_id": opened.id,
                    "state": "completed",
                    "message": "LGTM",
                    "artifacts": [
                        {"text": "no issues found", "filename": "review.md", "media_type": "text/markdown"},
                        {"data": {"score": 9}},
                        {"raw": raw, "filename": "shot.png", "media_type": "image/png"},
                        {"url": "https://example.com/report"},
                    ],
                },
            )
        )
        assert done["task"]["state"] == "completed"
        assert [a["name"] for a in done["task"]["artifacts"]] == ["review.md", None, "shot.png", None]
        shown = await bob.call_tool("list_tasks", {"task_id": opened.id})
        latest = ok(shown)["tasks"][0]["latest"]
        assert latest.startswith("----- BEGIN MESSAGE ") and "LGTM" in latest and "no issues found" in latest
        assert "completed" in text_of(shown)

    task = alice.get_task(opened.id)
    assert task.state == "completed" and [a.parts[0].kind for a in task.artifacts] == ["text", "data", "raw", "url"]
    assert task.artifacts[0].parts[0].filename == "review.md" and task.artifacts[1].parts[0].data == {"score": 9}


async def test_the_task_tools_refuse_with_codes_a_model_can_act_on(agents, tools):
    alice = agents("alice")
    agents("bob")
    opened = alice.open_task(TaskRequest(to="bob", parts=[{"text": "do it"}])).task
    async with tools("bob") as bob, tools("alice") as as_alice:
        text = failed(await bob.call_tool("update_task", {"task_id": opened.id, "state": "finished"}), "bad_task_state")
        assert "Next: use working, input-required" in text
        failed(await bob.call_tool("update_task", {"task_id": opened.id}), "bad_request")  # nothing to say
        failed(await bob.call_tool("update_task", {"task_id": "no-such-task", "state": "working"}), "unknown_task")
        # only its worker moves it; the requester is told whose move it is
        failed(await as_alice.call_tool("update_task", {"task_id": opened.id, "state": "completed"}), "forbidden")
        two = {"task_id": opened.id, "artifacts": [{"text": "a", "data": {"b": 1}}]}
        failed(await bob.call_tool("update_task", two), "bad_request")  # a part holds one thing
        ok(await bob.call_tool("update_task", {"task_id": opened.id, "state": "rejected", "message": "not mine"}))
        text = failed(await bob.call_tool("update_task", {"task_id": opened.id, "state": "working"}), "task_finished")
        assert "send_message" in text
        failed(await as_alice.call_tool("list_tasks", {"task_id": "missing"}), "unknown_task")
    assert alice.get_task(opened.id).state == "rejected" and agents("carol").list_tasks().tasks == []


async def test_a_model_delegates_with_send_message_as_task_and_follows_it_with_list_tasks(agents, tools):
    bob = agents("bob")
    async with tools("alice") as alice:
        sent = ok(await alice.call_tool("send_message", {"to": "bob", "message": "write a haiku", "as_task": True}))
        task_id = sent["task_id"]
        task = bob.get_task(task_id)
        assert (task.requester, task.worker, task.state) == ("alice", "bob", "submitted")
        assert sent["recipients"][0]["agent"] == "bob"
        same = ok(await alice.call_tool("list_tasks", {"task_id": task_id, "after_generation": 1, "wait_seconds": 0.1}))
        assert same["tasks"][0]["generation"] == 1  # nothing moved within the wait: the task as it is
        bob.update_task(task_id, state="completed", artifacts=[{"name": "haiku.txt", "parts": [{"text": "queues"}]}])
        followed = ok(
            await alice.call_tool("list_tasks", {"task_id": task_id, "after_generation": 1, "wait_seconds": 30})
        )
        assert followed["tasks"][0]["state"] == "completed" and "queues" in followed["tasks"][0]["latest"]


async def test_delegating_and_following_refuse_what_does_not_fit(agents, tools):
    agents("bob")
    async with tools("alice") as alice:
        for bad in ({"reply_to": "m-1"}, {"urgent": True}, {"require_live": True}):
            args = {"to": "bob", "message": "x", "as_task": True, **bad}
            failed(await alice.call_tool("send_message", args), "bad_request")
        failed(await alice.call_tool("send_message", {"to": "#ops", "message": "x", "as_task": True}), "bad_request")
        failed(await alice.call_tool("list_tasks", {"wait_seconds": 5}), "bad_request")  # follows one task
        sent = ok(await alice.call_tool("send_message", {"to": "bob", "message": "y", "as_task": True}))
        failed(await alice.call_tool("list_tasks", {"task_id": sent["task_id"], "wait_seconds": 5}), "bad_request")
    assert [t.worker for t in agents("alice").list_tasks().tasks] == ["bob"]  # the refused ones opened nothing


async def test_a_model_hands_off_over_the_hub_with_its_summary(agents, tools):
    bob = agents("bob")
    async with tools("alice") as alice:
        sent = ok(await alice.call_tool("send_message", {"to": "bob", "message": "over to you", "handoff": True}))
        for bad in ({"subject": "x"}, {"as_task": True}, {"urgent": True}):
            failed(
                await alice.call_tool("send_message", {"to": "bob", "message": "x", "handoff": True, **bad}),
                "bad_request",
            )
    task = bob.get_task(sent["task_id"], history_length=5)
    assert task.metadata["callboard_handoff"]["from"] == "alice"
    [mail] = task.history
    assert mail.parts[0].text.startswith("Hand-off from alice to bob.") and "over to you" in mail.parts[0].text
    assert mail.parts[1].data["summary"] == "over to you" and mail.parts[1].data["repository"] is None
    assert len(bob.list_tasks().tasks) == 1  # the refused ones handed nothing
