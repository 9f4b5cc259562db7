"""Our tasks, parts and task events as the SDK's protobuf messages, and A2A parts back as ours.

Pure: no I/O. A2A's ``Value`` and ``Struct`` hold every number as a double, so JSON data that
went in as ``42`` comes out as ``42.0``; ``from_value`` turns whole doubles back into ints, so a
data part survives the round trip as it was written.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from a2a.types import Artifact, Role, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent
from a2a.types import Message as A2AMessage
from a2a.types import Part as A2APart
from a2a.types import Task as A2ATask
from a2a.types import TaskState as A2AState
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.timestamp_pb2 import Timestamp

from callboard.a2a.server.cards import GENERATION_KEY
from callboard.errors import BadRequest
from callboard.model import Message, Part
from callboard.tasks import Task, TaskArtifact, TaskEvent, TaskState

_STATES = {
    TaskState.SUBMITTED: A2AState.TASK_STATE_SUBMITTED,
    TaskState.WORKING: A2AState.TASK_STATE_WORKING,
    TaskState.INPUT_REQUIRED: A2AState.TASK_STATE_INPUT_REQUIRED,
    TaskState.AUTH_REQUIRED: A2AState.TASK_STATE_AUTH_REQUIRED,
    TaskState.COMPLETED: A2AState.TASK_STATE_COMPLETED,
    TaskState.FAILED: A2AState.TASK_STATE_FAILED,
    TaskState.CANCELED: A2AState.TASK_STATE_CANCELED,
    TaskState.REJECTED: A2AState.TASK_STATE_REJECTED,
}
_OUR_STATES = {value: key for key, value in _STATES.items()}


def a2a_state(state: TaskState) -> A2AState:
    return _STATES[state]


def our_state(state: A2AState) -> TaskState | None:
    """An A2A state as ours; None for TASK_STATE_UNSPECIFIED (no filter)."""
    return _OUR_STATES.get(state)


# --- values ------------------------------------------------------------------------------------


def from_value(value: Any) -> Any:
    """JSON that went through a protobuf Value or Struct, with whole doubles made ints again."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: from_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_value(item) for item in value]
    return value


def struct_of(data: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(data)
    return struct


def dict_of(struct: struct_pb2.Struct) -> dict[str, Any]:
    return from_value(MessageToDict(struct))


def _timestamp(at: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(at)
    return stamp


# --- parts --------------------------------------------------------------------------------------


def a2a_part(part: Part) -> A2APart:
    """One of our parts as A2A's (raw: our base64 text as bytes)."""
    out = A2APart(filename=part.filename or "", media_type=part.media_type or "")
    if part.text is not None:
        out.text = part.text
    elif part.url is not None:
        out.url = part.url
    elif part.raw is not None:
        out.raw = base64.b64decode(part.raw)
    else:
        out.data.CopyFrom(ParseDict(part.data, struct_pb2.Value()))
    if part.metadata is not None:
        out.metadata.CopyFrom(struct_of(part.metadata))
    return out


def our_part(part: A2APart) -> Part:
    """An A2A part as ours, or BadRequest for one with no content."""
    kind = part.WhichOneof("content")
    extra: dict[str, Any] = {
        "filename": part.filename or None,
        "media_type": part.media_type or None,
        "metadata": dict_of(part.metadata) if part.HasField("metadata") else None,
    }
    if kind == "text":
        return Part(text=part.text, **extra)
    if kind == "url":
        return Part(url=part.url, **extra)
    if kind == "raw":
        return Part(raw=base64.b64encode(part.raw).decode("ascii"), **extra)
    if kind == "data":
        return Part(data=from_value(MessageToDict(part.data)), **extra)
    raise BadRequest("a message part holds none of text, raw, url or data; give it one.")


def our_parts(parts: Sequence[A2APart]) -> list[Part]:
    if not parts:
        raise BadRequest("the message has no parts; send at least one (text, data, url or raw).")
    return [our_part(part) for part in parts]


# --- tasks --------------------------------------------------------------------------------------


def a2a_message(message: Message, task: Task) -> A2AMessage:
    """A message of the task's thread as A2A's: from the requester ROLE_USER, else ROLE_AGENT."""
    role = Role.ROLE_USER if message.sender == task.requester else Role.ROLE_AGENT
    return A2AMessage(
        message_id=message.id,
        context_id=task.context_id,
        task_id=task.id,
        role=role,
        parts=[a2a_part(part) for part in message.parts],
    )


def status_of(task: Task) -> TaskStatus:
    status = TaskStatus(state=a2a_state(task.state), timestamp=_timestamp(task.status_at))
    if task.status_parts:
        status.message.CopyFrom(
            A2AMessage(
                message_id=task.status_message_id or f"{task.id}-status-{task.generation}",
                context_id=task.context_id,
                task_id=task.id,
                role=Role.ROLE_AGENT,
                parts=[a2a_part(part) for part in task.status_parts],
            )
        )
    return status


def a2a_artifact(artifact: TaskArtifact) -> Artifact:
    out = Artifact(
        artifact_id=artifact.artifact_id,
        name=artifact.name or "",
        description=artifact.description or "",
        parts=[a2a_part(part) for part in artifact.parts],
    )
    if artifact.metadata is not None:
        out.metadata.CopyFrom(struct_of(artifact.metadata))
    return out


def our_artifact(artifact: Artifact) -> TaskArtifact:
    return TaskArtifact(
        artifact_id=artifact.artifact_id,
        name=artifact.name or None,
        description=artifact.description or None,
        parts=our_parts(artifact.parts),
        metadata=dict_of(artifact.metadata) if artifact.HasField("metadata") else None,
    )


def a2a_task(task: Task, *, include_artifacts: bool = True) -> A2ATask:
    """Our task as A2A's; its metadata carries the task's generation (our card's extension)."""
    out = A2ATask(id=task.id, context_id=task.context_id, status=status_of(task))
    if include_artifacts:
        out.artifacts.extend(a2a_artifact(artifact) for artifact in task.artifacts)
    out.history.extend(a2a_message(message, task) for message in task.history)
    out.metadata.CopyFrom(struct_of({**(task.metadata or {}), GENERATION_KEY: task.generation}))
    return out


def a2a_event(event: TaskEvent, context_id: str) -> TaskStatusUpdateEvent | TaskArtifactUpdateEvent:
    """One task event as the A2A update event a stream sends, its generation in its metadata."""
    metadata = struct_of({GENERATION_KEY: event.generation})
    if event.kind == "artifact" and event.artifact is not None:
        return TaskArtifactUpdateEvent(
            task_id=event.task_id,
            context_id=context_id,
            artifact=a2a_artifact(event.artifact),
            append=event.append,
            last_chunk=event.last_chunk,
            metadata=metadata,
        )
    status = TaskStatus(state=a2a_state(event.state), timestamp=_timestamp(event.at))
    if event.parts:
        status.message.CopyFrom(
            A2AMessage(
                message_id=event.message_id or f"{event.task_id}-status-{event.generation}",
                context_id=context_id,
                task_id=event.task_id,
                role=Role.ROLE_AGENT,
                parts=[a2a_part(part) for part in event.parts],
            )
        )
    return TaskStatusUpdateEvent(task_id=event.task_id, context_id=context_id, status=status, metadata=metadata)
