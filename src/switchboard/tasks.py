"""A task's lifecycle, the rule once: its states, the moves between them, and whose each move is.

A task is mail with a lifecycle (an A2A 1.0 task): a requester asks, a worker answers. The
worker moves it to working, input-required, auth-required, completed, failed or rejected; the
requester may cancel it, or answer a task that waits on it (input-required, auth-required),
which goes on with the same task. Completed, failed, canceled and rejected are final. Each
accepted move counts the task's generation one up (as the A2A 1.1 draft's ``generation``), so a
subscriber that reconnects knows exactly what it missed. Pure: no I/O.
"""

from __future__ import annotations

from enum import StrEnum

from switchboard.errors import BadTaskState, TaskFinished


class TaskState(StrEnum):
    """A2A 1.0's task states, spelled as A2A's JSON spells them (``input-required``)."""

    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required"
    AUTH_REQUIRED = "auth-required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    REJECTED = "rejected"


FINAL = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED})
# The task waits on its requester: an answer from it goes on with the same task.
WAITING_ON_REQUESTER = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})
# Where a worker may move a task. Submitted is where a task starts; canceling is the requester's.
WORKER_STATES = frozenset(TaskState) - {TaskState.SUBMITTED, TaskState.CANCELED}


def parse_state(text: str) -> TaskState:
    """A state as a person, a model or an A2A client writes it: ``input-required``,
    ``input_required``, ``TASK_STATE_INPUT_REQUIRED`` (any case)."""
    folded = text.strip().lower().replace("_", "-").removeprefix("task-state-")
    try:
        return TaskState(folded)
    except ValueError:
        known = ", ".join(state.value for state in TaskState)
        raise BadTaskState(f"{text!r} is not a task state; one of: {known}.") from None


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
