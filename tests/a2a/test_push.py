"""Push notifications: a webhook on loopback (the hub allows private targets here) receives each
task event as A2A's StreamResponse JSON, with its token, authentication and our signature; a hub
that was not told to allow private targets refuses them."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from a2a.types import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskPushNotificationConfig,
)

from callboard.model import Part as OurPart
from callboard.tasks import TaskArtifact
from callboard.tasks import TaskState as OurState
from tests.a2a.conftest import A2A_ERRORS, BINDINGS, a2a_client, fetch_card, unique
from tests.support.a2a_hub import InProcessHub
from tests.support.waiting import wait_until

pytestmark = pytest.mark.anyio


class Webhook:
    """An HTTP receiver on 127.0.0.1 that keeps every POST (headers and body)."""

    def __init__(self) -> None:
        self.posts: list[tuple[dict[str, str], bytes]] = []
        self.failures_left = 0  # answer this many posts with 503 first
        received, hook = self.posts, self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                failing = hook.failures_left > 0
                hook.failures_left -= failing
                self.send_response(503 if failing else 200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    hook.thread.start()
    try:
        yield hook
    finally:
        hook.server.shutdown()


def quick_task_request(text: str) -> SendMessageRequest:
    request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=unique("m"), parts=[Part(text=text)]))
    request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
    return request


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_webhook_receives_each_event_signed(hub: InProcessHub, webhook: Webhook, binding: str) -> None:
    bob, asker = unique("bob"), unique("asker")
    hub.describe(bob, "reviews", [])
    card = await fetch_card(hub, bob)
    async with a2a_client(card, hub.token(asker), binding) as client:
        [sent] = [e async for e in client.send_message(quick_task_request("push me"))]
        task_id = sent.task.id
        config = TaskPushNotificationConfig(
            task_id=task_id,
            id="hook-1",
            url=webhook.url,
            token="tok-123",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="webhook-secret"),
        )
        created = await client.create_task_push_notification_config(config)
        assert (created.id, created.task_id, created.url, created.token) == ("hook-1", task_id, webhook.url, "tok-123")
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task_id, id="hook-1")
        )
        assert got.authentication.scheme == "Bearer"
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        assert [c.id for c in listed.configs] == ["hook-1"]

        worker = hub.caller(bob)
        hub.service.tasking.update_task(worker, task_id, state=OurState.WORKING)
        hub.service.tasking.update_task(
            worker, task_id, artifacts=[TaskArtifact(artifact_id="a", parts=[OurPart(text="out")])]
        )
        hub.service.tasking.update_task(worker, task_id, state=OurState.COMPLETED, parts=[OurPart(text="done")])
        wait_until(lambda: len(webhook.posts) >= 3, 20, "three posts at the webhook")

        documents = []
        for headers, body in webhook.posts:
            assert headers["x-a2a-notification-token"] == "tok-123"
            assert headers["authorization"] == "Bearer webhook-secret"
            expected = "sha256=" + hmac.new(b"tok-123", body, hashlib.sha256).hexdigest()
            assert headers["x-callboard-signature"] == expected
            documents.append((int(headers["x-callboard-task-generation"]), json.loads(body)))
        documents.sort(key=lambda pair: pair[0])
        assert [g for g, _ in documents] == [2, 3, 4]
        assert documents[0][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
        assert documents[1][1]["artifactUpdate"]["artifact"]["parts"] == [{"text": "out"}]
        assert documents[2][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert all(
            d["statusUpdate" if "statusUpdate" in d else "artifactUpdate"]["taskId"] == task_id for _, d in documents
        )

        request = DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="hook-1")
        await client.delete_task_push_notification_config(request)
        await client.delete_task_push_notification_config(request)  # A2A: deleting again is no error
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        assert list(listed.configs) == []


async def test_a_failed_post_is_tried_again(hub: InProcessHub, webhook: Webhook) -> None:
    bob = unique("bob")
    hub.describe(bob, "reviews", [])
    card = await fetch_card(hub, bob)
    async with a2a_client(card, hub.token(unique("asker")), "HTTP+JSON") as client:
        [sent] = [e async for e in client.send_message(quick_task_request("push me"))]
        hub.service.tasking.update_task(
            hub.caller(bob), sent.task.id, state=OurState.WORKING
        )  # before the webhook: one post
        config = TaskPushNotificationConfig(task_id=sent.task.id, url=webhook.url)
        await client.create_task_push_notification_config(config)
    webhook.failures_left = 1
    hub.service.tasking.update_task(hub.caller(bob), sent.task.id, state=OurState.COMPLETED)
    wait_until(lambda: len(webhook.posts) >= 2, 20, "the post tried again after a 503")
    first, second = webhook.posts[:2]
    assert first[1] == second[1] and "x-callboard-signature" not in second[0]  # no token: nothing to sign with


async def test_a_hub_not_told_to_allow_private_webhooks_refuses_them(tmp_path, webhook: Webhook) -> None:
    with InProcessHub(tmp_path) as strict:
        strict.describe("bob", "reviews", [])
        card = await fetch_card(strict, "bob")
        async with a2a_client(card, strict.token("asker"), "JSONRPC") as client:
            [sent] = [e async for e in client.send_message(quick_task_request("push me"))]
            for url in (webhook.url, "http://localhost:9/hook", "http://10.0.0.1/hook", "ftp://example.com/x"):
                config = TaskPushNotificationConfig(task_id=sent.task.id, url=url)
                with pytest.raises(A2A_ERRORS, match="(?i)webhook"):
                    await client.create_task_push_notification_config(config)
        assert strict.errors == []
    assert webhook.posts == []
