"""Our parts and tasks as A2A's protobuf messages and back: nothing lost, numbers stay numbers."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest
from a2a.types import Part as A2APart
from a2a.types import Role
from a2a.types import TaskState as A2AState
from google.protobuf.json_format import MessageToDict

from callboard.a2a.server.convert import a2a_event, a2a_part, a2a_task, from_value, our_part, our_parts
from callboard.errors import BadRequest
from callboard.model import Message, Part
from callboard.tasks import Task, TaskArtifact, TaskEvent, TaskState

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)

PARTS = [
    Part(text="hello", metadata={"lang": "en"}),
    Part(data={"key": "value", "count": 42, "ratio": 0.5, "nested": {"ids": [1, 2, 3]}, "none": None}),
    Part(url="https://example.com/output.txt", filename="output.txt", media_type="text/plain"),
    Part(raw=base64.b64encode(b"\x00\x01 bytes").decode(), filename="blob.bin", media_type="application/octet-stream"),
]


@pytest.mark.parametrize("part", PARTS, ids=lambda p: p.kind)
def test_a_part_survives_the_round_trip(part: Part) -> None:
    assert our_part(a2a_part(part)) == part


def test_whole_numbers_come_back_as_ints_and_fractions_stay() -> None:
    assert from_value({"count": 42.0, "ratio": 0.5, "list": [1.0, 2.5], "big": 1e300}) == {
        "count": 42,
        "ratio": 0.5,
        "list": [1, 2.5],
        "big": 1e300,
    }


def test_a_message_without_parts_or_with_an_empty_part_is_refused() -> None:
    with pytest.raises(BadRequest):
        our_parts([])
    with pytest.raises(BadRequest):
        our_parts([A2APart()])


def _task(**changes: object) -> Task:
    fields: dict[str, object] = {
        "id": "t1",
        "workspace": "default",
        "context_id": "c1",
        "requester": "alice",
        "worker": "bob",
        "state": TaskState.INPUT_REQUIRED,
        "status_parts": [Part(text="which branch?")],
        "status_message_id": "m2",
        "status_at": NOW,
        "artifacts": [TaskArtifact(artifact_id="a1", name="review", parts=[Part(text="LGTM")], metadata={"n": 1})],
        "generation": 3,
        "metadata": {"from": "tck"},
        "created_at": NOW,
        "updated_at": NOW,
        "history": [
            Message(
                id="m1",
                workspace="default",
                sender="alice",
                recipients=["bob"],
                parts=[Part(text="review")],
                thread_id="c1",
                created_at=NOW,
            ),
            Message(
                id="m2",
                workspace="default",
                sender="bob",
                recipients=["alice"],
                parts=[Part(text="which branch?")],
                thread_id="c1",
                created_at=NOW,
            ),
        ],
    }
    fields.update(changes)
    return Task(**fields)  # type: ignore[arg-type]


def test_a_task_as_a2a_has_its_state_status_artifacts_history_and_generation() -> None:
    task = a2a_task(_task())
    assert (task.id, task.context_id, task.status.state) == ("t1", "c1", A2AState.TASK_STATE_INPUT_REQUIRED)
    assert task.status.message.parts[0].text == "which branch?" and task.status.message.message_id == "m2"
    assert [(a.artifact_id, a.name, a.parts[0].text) for a in task.artifacts] == [("a1", "review", "LGTM")]
    assert MessageToDict(task.artifacts[0].metadata) == {"n": 1.0}  # protobuf's numbers; from_value mends them
    assert [m.role for m in task.history] == [Role.ROLE_USER, Role.ROLE_AGENT]
    assert MessageToDict(task.metadata) == {"from": "tck", "generation": 3.0}
    assert not a2a_task(_task(), include_artifacts=False).artifacts


@pytest.mark.parametrize("state", list(TaskState))
def test_every_state_has_its_a2a_name(state: TaskState) -> None:
    name = A2AState.Name(a2a_task(_task(state=state)).status.state)
    assert name == "TASK_STATE_" + state.value.upper().replace("-", "_")


def test_events_become_status_and_artifact_updates_with_their_generation() -> None:
    status = a2a_event(
        TaskEvent(
            task_id="t1", generation=4, kind="status", state=TaskState.WORKING, parts=[Part(text="on it")], at=NOW
        ),
        "c1",
    )
    assert status.status.state == A2AState.TASK_STATE_WORKING and status.status.message.parts[0].text == "on it"
    assert MessageToDict(status.metadata) == {"generation": 4.0} and status.context_id == "c1"
    chunk = TaskArtifact(artifact_id="a1", parts=[Part(text="chunk-2")])
    artifact = a2a_event(
        TaskEvent(
            task_id="t1",
            generation=5,
            kind="artifact",
            state=TaskState.WORKING,
            artifact=chunk,
            append=True,
            last_chunk=True,
            at=NOW,
        ),
        "c1",
    )
    assert (artifact.artifact.artifact_id, artifact.append, artifact.last_chunk) == ("a1", True, True)
