"""The task lifecycle rule (tasks.py): states, moves, and whose each move is."""

from __future__ import annotations

import pytest

from callboard.errors import BadTaskState, Invalid, Refused, TaskFinished
from callboard.tasks import (
    FINAL,
    WAITING_ON_REQUESTER,
    TaskState,
    parse_state,
    requester_answers,
    requester_cancels,
    worker_moves,
)

OPEN = [state for state in TaskState if state not in FINAL]


@pytest.mark.parametrize("text", ["input-required", "input_required", "TASK_STATE_INPUT_REQUIRED", " Input-Required "])
def test_a_state_is_read_as_people_models_and_a2a_clients_write_it(text: str) -> None:
    assert parse_state(text) is TaskState.INPUT_REQUIRED


@pytest.mark.parametrize("text", ["done", "", "task-state-", "input required"])
def test_an_unknown_state_is_refused_naming_the_states(text: str) -> None:
    with pytest.raises(BadTaskState) as refused:
        parse_state(text)
    assert isinstance(refused.value, Invalid) and "input-required" in refused.value.message


@pytest.mark.parametrize("current", OPEN)
@pytest.mark.parametrize(
    "wanted", [TaskState.WORKING, TaskState.INPUT_REQUIRED, TaskState.COMPLETED, TaskState.REJECTED]
)
def test_a_worker_moves_an_open_task_where_it_says(current: TaskState, wanted: TaskState) -> None:
    assert worker_moves("t1", current, wanted) is wanted


@pytest.mark.parametrize("wanted", [TaskState.SUBMITTED, TaskState.CANCELED])
def test_submitted_and_canceled_are_not_the_workers_to_set(wanted: TaskState) -> None:
    with pytest.raises(BadTaskState, match="not the worker's"):
        worker_moves("t1", TaskState.WORKING, wanted)


@pytest.mark.parametrize("current", sorted(FINAL))
def test_nothing_moves_a_final_task(current: TaskState) -> None:
    for move in (
        lambda: worker_moves("t1", current, TaskState.WORKING),
        lambda: requester_cancels("t1", current),
        lambda: requester_answers("t1", current),
    ):
        with pytest.raises(TaskFinished) as refused:
            move()
        assert isinstance(refused.value, Refused)
        assert refused.value.details == {"task_id": "t1", "state": current.value}


@pytest.mark.parametrize("current", OPEN)
def test_a_requester_cancels_any_open_task(current: TaskState) -> None:
    assert requester_cancels("t1", current) is TaskState.CANCELED


@pytest.mark.parametrize("current", OPEN)
def test_an_answer_to_a_task_waiting_on_its_requester_submits_it_again(current: TaskState) -> None:
    expected = TaskState.SUBMITTED if current in WAITING_ON_REQUESTER else current
    assert requester_answers("t1", current) is expected


def test_only_a_task_waiting_to_be_taken_up_moves_to_working_when_taken_up() -> None:
    from callboard.tasks import taken_up

    assert taken_up(TaskState.SUBMITTED) is TaskState.WORKING
    assert [s for s in TaskState if taken_up(s) is not None] == [TaskState.SUBMITTED]
