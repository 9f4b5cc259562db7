"""A task: its types, and its lifecycle, the rule once (the moves between states, whose each is).

A task is mail with a lifecycle (an A2A 1.0 task): a requester asks, a worker answers. The
worker moves it to working, input-required, auth-required, completed, failed or rejected; the
requester may cancel it, or answer a task that waits on it (input-required, auth-required),
which goes on with the same task. Completed, failed, canceled and rejected are final. Each
accepted move counts the task's generation one up (as the A2A 1.1 draft's ``generation``), so a
subscriber that reconnects knows exactly what it missed. Pure: no I/O. TaskState is the
model's (mail carries it); the types of a task and its events are here (outside agents: ``remotes``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from callboard.errors import BadTaskState, TaskFinished
from callboard.model import Message, Model, Part, SendResult, TaskState

FINAL = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED})
# The task waits on its requester: an answer from it goes on with the same task.
WAITING_ON_REQUESTER = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})
# Where a worker may move a task. Submitted is where a task starts; canceling is the requester's.
WORKER_STATES = frozenset(TaskState) - {TaskState.SUBMITTED, TaskState.CANCELED}
# A task's own key beside the mailboxes: (workspace, "task:" + its id) wakes its subscribers.
TASK_KEY_PREFIX = "task:"


def parse_state(text: str) -> TaskState:
    """A state as a person, a model or an A2A client writes it: ``input-required``,
    ``input_required``, ``TASK_STATE_INPUT_REQUIRED`` (any case)."""
    folded = text.strip().lower().replace("_", "-").removeprefix("task-state-")
    try:
        return TaskState(folded)
    except ValueError:
        known = ", ".join(state.value for state in TaskState)
        raise BadTaskState(f"{text!r} is not a task state; one of: {known}.") from None


def moved_past(task: Task, generation: int) -> bool:
    """Whether a follower that saw ``generation`` has something new to see: the task moved past
    it, or it is final (it will not move again, so a follower waits no longer)."""
    return task.generation > generation or task.state in FINAL


def worker_moves(task_id: str, current: TaskState, wanted: TaskState) -> TaskState:
    """The state a worker's update leaves the task in, or why it cannot."""
    _still_open(task_id, current)
    if wanted not in WORKER_STATES:
        allowed = ", ".join(state.value for state in TaskState if state in WORKER_STATES)
        raise BadTaskState(
            f"a task's worker moves it to {allowed}; {wanted.value} is not the worker's "
            "(a task starts submitted, and its requester cancels it)."
        )
    return wanted


def worker_notes(task_id: str, current: TaskState) -> TaskState:
    """The state a worker's message or artifact with no new state leaves the task in: the same,
    on a task still open."""
    _still_open(task_id, current)
    return current


def requester_cancels(task_id: str, current: TaskState) -> TaskState:
    """The state a requester's cancel leaves the task in, or why it cannot."""
    _still_open(task_id, current)
    return TaskState.CANCELED


def requester_answers(task_id: str, current: TaskState) -> TaskState:
    """The state a requester's follow-up message leaves the task in: one that waited on the
    requester is submitted again, for its worker to take up; one being worked on stays so."""
    _still_open(task_id, current)
    return TaskState.SUBMITTED if current in WAITING_ON_REQUESTER else current


def taken_up(current: TaskState) -> TaskState | None:
    """The state a task moves to once its worker's model has its mail in context: one that
    waited to be taken up (submitted) is working; any other stays as it is (None)."""
    return TaskState.WORKING if current is TaskState.SUBMITTED else None


def _still_open(task_id: str, current: TaskState) -> None:
    if current in FINAL:
        raise TaskFinished(
            f"task {task_id} is {current.value}: nothing moves it any more. Start a new task to go on.",
            task_id=task_id,
            state=current.value,
        )


# --- a task's types (TaskState is the model's: the mail carries it) -------------------------------------


class TaskArtifact(Model):
    """What a task's worker hands over: parts under an id (a later update may append to it)."""

    artifact_id: str
    name: str | None = None
    description: str | None = None
    parts: list[Part]
    metadata: dict[str, Any] | None = None


class Task(Model):
    """A task: mail with a lifecycle between a requester and a worker of one workspace."""

    id: str
    workspace: str
    context_id: str = Field(description="the mail thread the task's messages go in")
    requester: str = Field(description="the agent that asked")
    worker: str = Field(description="the agent that works on it")
    state: TaskState
    status_parts: list[Part] = Field(default_factory=list, description="the latest status message's parts")
    status_message_id: str | None = Field(default=None, description="the mail that carried the latest status")
    status_at: datetime
    artifacts: list[TaskArtifact] = Field(default_factory=list)
    generation: int = Field(description="counts every event of the task: a subscriber knows what it missed")
    metadata: dict[str, Any] | None = None
    created_at: datetime
    updated_at: datetime
    history: list[Message] = Field(default_factory=list, description="the task's mail, oldest first, when asked")


TaskEventKind = Literal["status", "artifact"]


class TaskEvent(Model):
    """One change of a task, numbered by its generation (what a subscriber replays)."""

    task_id: str
    generation: int
    kind: TaskEventKind
    state: TaskState = Field(description="the task's state after this event")
    message_id: str | None = Field(default=None, description="the mail that carried it")
    parts: list[Part] = Field(default_factory=list, description="a status event's message parts")
    artifact: TaskArtifact | None = Field(default=None, description="an artifact event's artifact (or chunk)")
    append: bool = Field(default=False, description="the artifact's parts add to an earlier chunk of it")
    last_chunk: bool = True
    at: datetime


class TaskPage(Model):
    tasks: list[Task]
    next_page_token: str = Field(description='pass it back for the next page; "" on the last page')
    page_size: int
    total_size: int


class TaskSent(Model):
    """A task opened or followed up, and the mail that carried it."""

    task: Task
    send: SendResult


class PushConfig(Model):
    """Where a task's updates are posted (an A2A push-notification config)."""

    id: str
    task_id: str
    url: str
    token: str | None = None
    auth_scheme: str | None = None
    auth_credentials: str | None = None
    created_at: datetime
