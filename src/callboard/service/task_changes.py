"""What one move does to a task, worked out before anything is stored: the task as it will be,
the events that say so (one per artifact, then one for the status), and the words of the mail
that carries it. Pure: no I/O; ``delivery.tasking`` stores what these give."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from callboard.address import json_problem
from callboard.errors import BadRequest, TooLarge
from callboard.limits import Limits
from callboard.model import Message, Part, built, new_id
from callboard.service.content import check_part_values, message_parts
from callboard.store.records import TaskWrite
from callboard.tasks import Task, TaskArtifact, TaskEvent, TaskState


def checked_parts(parts: Sequence[Part | dict], limits: Limits) -> list[Part]:
    """A status message's parts (may be none), each checked as a message's are."""
    return message_parts(None, parts, limits) if parts else []


def checked_artifacts(artifacts: Sequence[TaskArtifact | dict[str, Any]], limits: Limits) -> list[TaskArtifact]:
    """The artifacts of an update, each valid (an id is made for one that has none)."""
    checked: list[TaskArtifact] = []
    if len(artifacts) > limits.parts:
        raise TooLarge(f"{len(artifacts)} artifacts; the limit is {limits.parts}.")
    for index, artifact in enumerate(artifacts):
        if isinstance(artifact, dict) and not artifact.get("artifact_id"):
            artifact = {**artifact, "artifact_id": new_id()}
        try:
            valid = artifact if isinstance(artifact, TaskArtifact) else TaskArtifact.model_validate(artifact)
        except ValueError as error:
            first = str(error).splitlines()[0:3]
            raise BadRequest(f"artifact {index + 1} is not valid: {' '.join(first)}") from None
        if not valid.parts:
            raise BadRequest(f"artifact {index + 1} has no parts: give it at least one (text, data, url or raw).")
        for part in valid.parts:
            check_part_values(part, index)
        problem = json_problem(valid.metadata, "metadata") if valid.metadata is not None else None
        if problem is not None:
            raise BadRequest(f"artifact {index + 1} cannot be stored: its {problem}.")
        checked.append(valid)
    return checked


def merged(current: Sequence[TaskArtifact], new: TaskArtifact, append: bool) -> TaskArtifact:
    """The artifact as it stands after ``new``: a chunk appended to the one of its id, or ``new`` whole."""
    if not append:
        return new
    earlier = next((a for a in current if a.artifact_id == new.artifact_id), None)
    if earlier is None:
        return new
    return earlier.model_copy(
        update={
            "parts": [*earlier.parts, *new.parts],
            "name": new.name or earlier.name,
            "description": new.description or earlier.description,
            "metadata": new.metadata or earlier.metadata,
        }
    )


def mail_words(task_id: str, state: TaskState, parts: list[Part], artifacts: list[TaskArtifact]) -> list[Part]:
    """The parts of the mail that carries an update: the message's own (a line saying what
    happened leads them when they hold no text), then every artifact's."""
    words = list(parts)
    if not any(p.text is not None and p.text.strip() for p in parts):
        line = f"task {task_id}: {state.value}"
        if artifacts:
            line += "; artifact " + ", ".join(a.name or a.artifact_id for a in artifacts)
        words.insert(0, built(Part, text=line))
    return words + [p for a in artifacts for p in a.parts]


def new_task_write(
    message: Message,
    *,
    task_id: str,
    worker: str,
    metadata: dict[str, Any] | None,
    a2a_message_id: str | None,
) -> TaskWrite:
    """A task opened by ``message`` (the requester's mail to the worker): submitted, generation 1."""
    now = message.created_at
    task = built(
        Task,
        id=task_id,
        workspace=message.workspace,
        context_id=message.thread_id,
        requester=message.sender,
        worker=worker,
        state=TaskState.SUBMITTED,
        status_parts=[],
        status_message_id=None,
        status_at=now,
        artifacts=[],
        generation=1,
        metadata=metadata,
        created_at=now,
        updated_at=now,
        history=[],
    )
    event = _event(task, 1, "status", message.id, now)
    return TaskWrite(task=task, events=[event], a2a_message_id=a2a_message_id)


def move_write(
    current: Task,
    message: Message,
    state: TaskState,
    *,
    status_parts: list[Part] | None,
    artifacts: Sequence[TaskArtifact] = (),
    append: bool = False,
    last_chunk: bool = True,
    a2a_message_id: str | None = None,
    take_up: bool = False,
) -> TaskWrite:
    """``current`` moved by ``message``: first, with ``take_up``, a status event saying it is
    working; each artifact an event; then — when the state changes or a status message is given
    (``status_parts`` not None) — a status event."""
    now = message.created_at
    generation = current.generation
    events: list[TaskEvent] = []
    if take_up:
        generation += 1
        events.append(_event(current, generation, "status", message.id, now, state=TaskState.WORKING))
    # By id, in the order first handed over: a dict keeps a changed artifact in its place.
    whole_by_id = {a.artifact_id: a for a in current.artifacts}
    stored: dict[str, TaskArtifact] = {}
    for artifact in artifacts:
        whole = merged(list(whole_by_id.values()), artifact, append)
        whole_by_id[whole.artifact_id] = stored[whole.artifact_id] = whole
        generation += 1
        event = _event(current, generation, "artifact", message.id, now, state=state)
        events.append(event.model_copy(update={"artifact": artifact, "append": append, "last_chunk": last_chunk}))
    status = status_parts is not None or state != current.state or not artifacts
    if status:
        generation += 1
        events.append(_event(current, generation, "status", message.id, now, state=state, parts=status_parts or []))
    changes: dict[str, Any] = {
        "state": state,
        "generation": generation,
        "updated_at": now,
        "artifacts": list(whole_by_id.values()),
    }
    if status:
        changes |= {"status_parts": status_parts or [], "status_message_id": message.id, "status_at": now}
    task = current.model_copy(update=changes)
    return TaskWrite(
        task=task,
        events=events,
        expected_generation=current.generation,
        artifacts=list(stored.values()),
        a2a_message_id=a2a_message_id,
    )


def _event(
    task: Task,
    generation: int,
    kind: str,
    message_id: str,
    at: datetime,
    *,
    state: TaskState | None = None,
    parts: list[Part] | None = None,
) -> TaskEvent:
    return built(
        TaskEvent,
        task_id=task.id,
        generation=generation,
        kind=kind,
        state=state if state is not None else task.state,
        message_id=message_id,
        parts=parts or [],
        artifact=None,
        append=False,
        last_chunk=True,
        at=at,
    )
