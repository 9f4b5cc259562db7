"""What the outbound client sends and gets, in our terms: our mail as the A2A message an outside
agent receives, and its states, parts and artifacts as ours.

The conversions are the A2A face's (``convert``); here they are only told apart by whose fault a
bad value is: something an outside agent sent that is not A2A 1.0 is its broken answer
(BadRemoteAnswer), never the sender's bad request.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

from a2a.types import Artifact as A2AArtifact
from a2a.types import Message as A2AMessage
from a2a.types import Part as A2APart
from a2a.types import Role
from a2a.types import TaskState as A2AState

from callboard.a2a.server.convert import a2a_part, our_artifact, our_part, our_state
from callboard.errors import BadRemoteAnswer, CallboardError
from callboard.model import Part
from callboard.tasks import TaskArtifact, TaskState

T = TypeVar("T")


def state_from_a2a(state: A2AState, remote: str) -> TaskState:
    """Our state for the remote's; an unspecified or unknown state is a broken answer."""
    ours = our_state(state)
    if ours is None:
        raise BadRemoteAnswer(
            f"remote agent {remote} reported a task state A2A 1.0 does not have ({state}); "
            "it may speak another protocol version."
        )
    return ours


def parts_from_a2a(parts: Sequence[A2APart], remote: str) -> list[Part]:
    return [_theirs(functools.partial(our_part, part), remote) for part in parts]


def part_from_a2a(part: A2APart, remote: str) -> Part:
    return _theirs(lambda: our_part(part), remote)


def artifact_from_a2a(artifact: A2AArtifact, remote: str) -> TaskArtifact:
    if not artifact.artifact_id:
        raise BadRemoteAnswer(f"remote agent {remote} sent an artifact without an id.")
    return _theirs(lambda: our_artifact(artifact), remote)


def part_to_a2a(part: Part) -> A2APart:
    return a2a_part(part)


def user_message(
    message_id: str, parts: list[Part], *, task_id: str | None = None, context_id: str | None = None
) -> A2AMessage:
    """Our mail as the A2A message the remote receives. Its id is our message's id, so a send
    tried again after a failure is the same message to the remote, not a second one."""
    message = A2AMessage(role=Role.ROLE_USER, message_id=message_id, parts=[a2a_part(p) for p in parts])
    if task_id:
        message.task_id = task_id
    if context_id:
        message.context_id = context_id
    return message


def _theirs(convert: Callable[[], T], remote: str) -> T:
    """``convert()``; what it refuses is the remote's broken answer."""
    try:
        return convert()
    except (CallboardError, ValueError) as problem:  # pydantic's errors are ValueErrors
        text = problem.message if isinstance(problem, CallboardError) else str(problem).splitlines()[0]
        raise BadRemoteAnswer(f"remote agent {remote} sent something that is not A2A 1.0: {text}") from None
