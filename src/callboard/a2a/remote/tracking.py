"""Following one outside task: what the remote sends (stream events or polled snapshots) turned
into the updates we have not passed on yet.

A stream says each change once; a poll shows the whole task each time. The tracker remembers
what it has passed on (the state, the status message, how many parts of each artifact) so both
give the same updates, each once, and a follower that takes over from a stream (or from another
process, seeded with what the task already holds) repeats nothing.

After we answer a task that waits on us, the remote often shows the task as it was first: a
stream that opens with the stored task (still input-required, with the question we answered),
a poll that comes before the remote took our answer up. That is not the remote asking again:
the tracker passes it over (``Answered``) and goes on reading until the task moves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from a2a.types import Artifact as A2AArtifact
from a2a.types import StreamResponse, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent
from a2a.types import Task as A2ATask

from callboard.a2a.remote.parts import artifact_from_a2a, parts_from_a2a, state_from_a2a
from callboard.errors import BadRemoteAnswer
from callboard.model import Part
from callboard.tasks import FINAL, WAITING_ON_REQUESTER, TaskArtifact, TaskState


@dataclass(frozen=True)
class RemoteUpdate:
    """One change of an outside task, in our terms: the remote took the message (once, first:
    from then on the message is the remote's, and its task has an id), a status (a state,
    perhaps with a message) or an artifact (whole, or a chunk appended to one passed on before)."""

    kind: Literal["taken", "status", "artifact"]  # taken: the remote made (or continued) its task
    remote_task_id: str  # "" when the remote answered with a plain message and made no task
    context_id: str
    state: TaskState
    parts: list[Part] = field(default_factory=list)
    message_id: str | None = None
    artifact: TaskArtifact | None = None
    append: bool = False
    last_chunk: bool = True


@dataclass(frozen=True)
class Answered:
    """The question a follow-up of ours answers: the state it left the task in (input-required,
    auth-required) and its status message (parts; the remote's message id, when known). Until
    the remote shows the task moving on, a status just like it is the task as it was before our
    answer, not news."""

    state: TaskState
    parts: list[Part] = field(default_factory=list)
    message_id: str | None = None


class TaskTracker:
    """What has been passed on about one outside task."""

    def __init__(
        self,
        remote: str,
        *,
        task_id: str = "",
        context_id: str = "",
        state: TaskState = TaskState.SUBMITTED,
        status_message_id: str | None = None,
        artifact_parts: dict[str, int] | None = None,
        answered: Answered | None = None,
    ) -> None:
        self.remote = remote
        self.task_id = task_id
        self.context_id = context_id
        self.state = state
        self.status_message_id = status_message_id
        self.status_parts: list[Part] = []  # the last status message passed on
        self.artifact_parts = dict(artifact_parts or {})
        self.taken = False  # whether the remote answered the message this tracker sends
        self.answered = answered  # the question our follow-up answers, until the task moves on

    @property
    def settled(self) -> bool:
        """The remote is done, or waits on us: nothing more comes until we answer."""
        return self.state in FINAL or self.state in WAITING_ON_REQUESTER

    def answer(self) -> None:
        """Our answer to the question the task waits on goes out: the remote takes the task up
        again, and until it shows that, the question it asked is no news (``Answered``)."""
        if self.state in WAITING_ON_REQUESTER:
            self.answered = Answered(self.state, list(self.status_parts), self.status_message_id)
            self.state = TaskState.SUBMITTED

    def take(self, event: StreamResponse) -> list[RemoteUpdate]:
        """The updates one streamed (or sent) response holds; the first response also says
        that the remote took the message."""
        first = not self.taken
        updates = self._take(event)
        if first:
            self.taken = True
            return [RemoteUpdate("taken", self.task_id, self.context_id, self.state), *updates]
        return updates

    def _take(self, event: StreamResponse) -> list[RemoteUpdate]:
        kind = event.WhichOneof("payload")
        if kind == "task":
            return self.take_task(event.task)
        if kind == "status_update":
            return self._take_status_event(event.status_update)
        if kind == "artifact_update":
            return [self._take_artifact_event(event.artifact_update)]
        if kind == "message":
            # A plain reply and no task: the remote is done, and its message is the answer.
            message = event.message
            self._own(message.task_id, message.context_id)
            self.state = TaskState.COMPLETED
            return [self._status(parts_from_a2a(message.parts, self.remote), message.message_id or None)]
        raise BadRemoteAnswer(f"remote agent {self.remote} sent an empty A2A response (no task, message or update).")

    def take_task(self, task: A2ATask) -> list[RemoteUpdate]:
        """The updates a snapshot of the task holds beyond what was passed on."""
        if not task.id:
            raise BadRemoteAnswer(f"remote agent {self.remote} sent a task without an id.")
        self._own(task.id, task.context_id)
        updates = [update for artifact in task.artifacts if (update := self._artifact_beyond(artifact))]
        status = self._status_beyond(task.status)
        return [*updates, status] if status else updates

    def _take_status_event(self, event: TaskStatusUpdateEvent) -> list[RemoteUpdate]:
        self._own(event.task_id, event.context_id)
        status = self._status_beyond(event.status)
        return [status] if status else []

    def _take_artifact_event(self, event: TaskArtifactUpdateEvent) -> RemoteUpdate:
        self._own(event.task_id, event.context_id)
        artifact = artifact_from_a2a(event.artifact, self.remote)
        known = self.artifact_parts.get(artifact.artifact_id, 0)
        self.artifact_parts[artifact.artifact_id] = known + len(artifact.parts) if event.append else len(artifact.parts)
        return self._artifact(artifact, append=event.append, last_chunk=event.last_chunk)

    def _artifact_beyond(self, raw: A2AArtifact) -> RemoteUpdate | None:
        artifact = artifact_from_a2a(raw, self.remote)
        known = self.artifact_parts.get(artifact.artifact_id)
        self.artifact_parts[artifact.artifact_id] = len(artifact.parts)
        if known is None:
            return self._artifact(artifact, append=False, last_chunk=True)
        if len(artifact.parts) > known:
            # Chunks appended since we last looked: pass on only the new parts.
            chunk = artifact.model_copy(update={"parts": artifact.parts[known:]})
            return self._artifact(chunk, append=True, last_chunk=True)
        return None

    def _status_beyond(self, status: TaskStatus) -> RemoteUpdate | None:
        state = state_from_a2a(status.state, self.remote)
        if self._before_our_answer(state, status):
            return None
        self.answered = None  # the task moved on: from here on a question is a new one
        has_message = status.HasField("message")
        message_id = status.message.message_id if has_message else None
        new_message = has_message and (not message_id or message_id != self.status_message_id)
        if state == self.state and not new_message:
            return None
        self.state = state
        self.status_message_id = message_id or self.status_message_id
        parts = parts_from_a2a(status.message.parts, self.remote) if new_message else []
        if new_message:
            self.status_parts = parts
        return self._status(parts, message_id or None)

    def _before_our_answer(self, state: TaskState, status: TaskStatus) -> bool:
        """Whether ``status`` is the question our follow-up answered, shown again."""
        answered = self.answered
        if answered is None or state != answered.state:
            return False
        if not status.HasField("message"):
            return True  # the same state, and nothing said: nothing new
        message_id = status.message.message_id
        if message_id and answered.message_id:
            return message_id == answered.message_id
        return parts_from_a2a(status.message.parts, self.remote) == answered.parts

    def _own(self, task_id: str, context_id: str) -> None:
        """Take the remote's ids; a different task id than the one followed is a broken answer."""
        if task_id and self.task_id and task_id != self.task_id:
            raise BadRemoteAnswer(
                f"remote agent {self.remote} answered about task {task_id} while following task {self.task_id}."
            )
        self.task_id = self.task_id or task_id
        self.context_id = self.context_id or context_id

    def _status(self, parts: list[Part], message_id: str | None) -> RemoteUpdate:
        return RemoteUpdate("status", self.task_id, self.context_id, self.state, parts=parts, message_id=message_id)

    def _artifact(self, artifact: TaskArtifact, *, append: bool, last_chunk: bool) -> RemoteUpdate:
        return RemoteUpdate(
            "artifact",
            self.task_id,
            self.context_id,
            self.state,
            artifact=artifact,
            append=append,
            last_chunk=last_chunk,
        )
