"""Any replica answers for any task: two hubs on one PostgreSQL store; a task opened through one
is read, subscribed to and canceled through the other, and a subscriber on one follows a task
worked on through the other (woken by PostgreSQL's NOTIFY, not by polling)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import anyio
import pytest
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)

from callboard.model import Part as OurPart
from callboard.tasks import TaskArtifact
from callboard.tasks import TaskState as OurState
from tests.a2a.conftest import BINDINGS, a2a_client, fetch_card, unique
from tests.support.a2a_hub import InProcessHub
from tests.support.postgres import fresh_database

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[InProcessHub, InProcessHub]]:
    with fresh_database() as url:
        root = tmp_path_factory.mktemp("replicas")
        with InProcessHub(root / "one", store=url) as one, InProcessHub(root / "two", store=url) as two:
            yield one, two


def ask(text: str, **fields: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=unique("m"), parts=[Part(text=text)], **fields)
    )


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_task_opened_on_one_replica_is_followed_and_canceled_on_the_other(
    replicas: tuple[InProcessHub, InProcessHub], binding: str
) -> None:
    one, two = replicas
    bob, asker = unique("bob"), unique("asker")
    one.describe(bob, "reviews", [])
    token = one.token(asker)
    card_one, card_two = await fetch_card(one, bob), await fetch_card(two, bob)
    async with a2a_client(card_one, token, binding) as on_one:
        [sent] = [e async for e in on_one.send_message(ask("across"))]
    task_id = sent.task.id

    def work_through_one() -> None:
        worker = one.caller(bob)
        one.service.tasking.update_task(worker, task_id, state=OurState.WORKING)
        one.service.tasking.update_task(
            worker, task_id, artifacts=[TaskArtifact(artifact_id="a", parts=[OurPart(text="x")])]
        )
        one.service.tasking.update_task(worker, task_id, state=OurState.INPUT_REQUIRED, parts=[OurPart(text="which?")])

    async with a2a_client(card_two, token, binding, streaming=True) as on_two:
        assert (await on_two.get_task(GetTaskRequest(id=task_id))).status.state == TaskState.TASK_STATE_SUBMITTED
        worker = threading.Timer(0.5, work_through_one)
        worker.start()
        with anyio.fail_after(10):  # less than a stream's recheck (15 s): only a NOTIFY wakes it in time
            events = [e async for e in on_two.subscribe(SubscribeToTaskRequest(id=task_id))]
        worker.join()
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds == ["task", "status_update", "artifact_update", "status_update"], events
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        canceled = await on_two.cancel_task(CancelTaskRequest(id=task_id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert one.service.tasking.get_task(one.caller(asker), task_id).state == OurState.CANCELED
    assert one.errors == [] and two.errors == []
