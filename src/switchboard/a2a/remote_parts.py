"""Parts, artifacts and states between our model and a2a-sdk's protobuf types, for the outbound
client (an outside agent's answers become mail; our mail becomes its A2A message).

Kept here, beside the outbound client, until the A2A face's own conversions (a2a/convert.py)
land; then this module gives way to them.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from a2a.types import Artifact as A2AArtifact
from a2a.types import Message as A2AMessage
from a2a.types import Part as A2APart
from a2a.types import Role
from a2a.types import TaskState as A2ATaskState
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Struct, Value

from switchboard.errors import BadRemoteAnswer
from switchboard.model import Part
from switchboard.tasks import TaskState

_STATES = {
    A2ATaskState.TASK_STATE_SUBMITTED: TaskState.SUBMITTED,
    A2ATaskState.TASK_STATE_WORKING: TaskState.WORKING,
    A2ATaskState.TASK_STATE_INPUT_REQUIRED: TaskState.INPUT_REQUIRED,
    A2ATaskState.TASK_STATE_AUTH_REQUIRED: TaskState.AUTH_REQUIRED,
    A2ATaskState.TASK_STATE_COMPLETED: TaskState.COMPLETED,
    A2ATaskState.TASK_STATE_FAILED: TaskState.FAILED,
    A2ATaskState.TASK_STATE_CANCELED: TaskState.CANCELED,
    A2ATaskState.TASK_STATE_REJECTED: TaskState.REJECTED,
}


@dataclass(frozen=True)
class RemoteArtifact:
    """An artifact an outside agent produced, in our parts (the shape of the task contract's
    TaskArtifact; the remote's artifact id is kept, so a later chunk finds its artifact)."""

    artifact_id: str
    parts: list[Part]
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = field(default=None)


def state_from_a2a(state: int, remote: str) -> TaskState:
    """Our state for the remote's; an unspecified or unknown state is a broken answer."""
    try:
        return _STATES[state]
    except KeyError:
        raise BadRemoteAnswer(
            f"remote agent {remote} reported a task state A2A 1.0 does not have ({state}); "
            "it may speak another protocol version."
        ) from None


def part_to_a2a(part: Part) -> A2APart:
    """One of our parts as an A2A part (raw travels as bytes, data as a protobuf Value)."""
    out = A2APart()
    if part.text is not None:
        out.text = part.text
    elif part.url is not None:
        out.url = part.url
    elif part.raw is not None:
        out.raw = base64.b64decode(part.raw)
    else:
        out.data.CopyFrom(ParseDict(part.data, Value()))
    if part.filename:
        out.filename = part.filename
    if part.media_type:
        out.media_type = part.media_type
    if part.metadata:
        out.metadata.CopyFrom(ParseDict(part.metadata, Struct()))
    return out


def part_from_a2a(part: A2APart, remote: str) -> Part:
    """An A2A part as one of ours; a part with no content is a broken answer."""
    kind = part.WhichOneof("content")
    extra: dict[str, Any] = {}
    if part.filename:
        extra["filename"] = part.filename
    if part.media_type:
        extra["media_type"] = part.media_type
    if part.HasField("metadata"):
        extra["metadata"] = _whole_numbers(MessageToDict(part.metadata))
    if kind == "text":
        return Part(text=part.text, **extra)
    if kind == "url":
        return Part(url=part.url, **extra)
    if kind == "raw":
        return Part(raw=base64.b64encode(part.raw).decode("ascii"), **extra)
    if kind == "data":
        return Part(data=_whole_numbers(MessageToDict(part.data)), **extra)
    raise BadRemoteAnswer(f"remote agent {remote} sent a part with no content (none of text, raw, url, data).")


def _whole_numbers(value: Any) -> Any:
    """JSON that went through a protobuf Value: every number came back a double (42.0); whole
    ones are made ints again, so a data part reads as it was written."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(item) for item in value]
    return value


def parts_from_a2a(parts: Any, remote: str) -> list[Part]:
    return [part_from_a2a(part, remote) for part in parts]


def artifact_from_a2a(artifact: A2AArtifact, remote: str) -> RemoteArtifact:
    if not artifact.artifact_id:
        raise BadRemoteAnswer(f"remote agent {remote} sent an artifact without an id.")
    return RemoteArtifact(
        artifact_id=artifact.artifact_id,
        parts=parts_from_a2a(artifact.parts, remote),
        name=artifact.name or None,
        description=artifact.description or None,
        metadata=MessageToDict(artifact.metadata) if artifact.HasField("metadata") else None,
    )


def user_message(
    message_id: str, parts: list[Part], *, task_id: str | None = None, context_id: str | None = None
) -> A2AMessage:
    """Our mail as the A2A message the remote receives. Its id is our message's id, so a send
    tried again after a failure is the same message to the remote, not a second one."""
    message = A2AMessage(role=Role.ROLE_USER, message_id=message_id, parts=[part_to_a2a(p) for p in parts])
    if task_id:
        message.task_id = task_id
    if context_id:
        message.context_id = context_id
    return message
