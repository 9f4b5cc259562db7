"""Following a task (Tasking.get_task with after_generation and wait): the follower waits while
the task stays where it saw it, wakes when the worker moves it, never waits on a final task, and
bad options are refused before anything is looked up. TaskFollow in the client (follow_task):
to the end, or canceled at its timeout."""

from __future__ import annotations

import pytest

from callboard.client.local import LocalClient
from callboard.coord.delegation import follow_task
from callboard.errors import BadRequest, TimedOut, UnknownTask
from callboard.requests import TaskRequest
from callboard.service.door import Service
from callboard.tasks import TASK_KEY_PREFIX, TaskState
from tests.support.service_setup import WS
from tests.support.threads import in_thread
from tests.support.waiting import DEADLINE, wait_until


def _asked(alice: LocalClient, text: str = "please review") -> str:
    return alice.open_task(TaskRequest(to="bob", text=text)).task.id


def test_a_follower_waits_until_the_worker_moves_the_task(
    service: Service, alice: LocalClient, bob: LocalClient
) -> None:
    task_id = _asked(alice)
    seen = alice.get_task(task_id).generation
    thread, box = in_thread(lambda: alice.get_task(task_id, after_generation=seen, wait=DEADLINE))
    wait_until(lambda: service.subscriptions.waiting(WS, TASK_KEY_PREFIX + task_id) == 1, what="the follower waiting")
    assert "result" not in box, "it waits while the task stays at the generation it saw"
    bob.update_task(task_id, state="working", parts=[{"text": "on it"}])
    thread.join(DEADLINE)
    moved = box["result"]
    assert (moved.state, moved.generation) == (TaskState.WORKING, seen + 1)
    assert [p.text for p in moved.status_parts] == ["on it"]


def test_a_follower_of_a_moved_or_final_task_is_answered_at_once(alice: LocalClient, bob: LocalClient) -> None:
    task_id = _asked(alice)
    bob.update_task(task_id, state="completed", parts=[{"text": "done"}])
    final = alice.get_task(task_id)
    assert alice.get_task(task_id, after_generation=1, wait=DEADLINE).generation == final.generation  # moved past 1
    # final: it will not move again, so nobody waits on it (an hour here would hang the test)
    assert alice.get_task(task_id, after_generation=final.generation, wait=3600).state == TaskState.COMPLETED


def test_a_follow_that_sees_no_move_returns_the_task_as_it_is_at_its_wait(alice: LocalClient) -> None:
    task_id = _asked(alice)
    seen = alice.get_task(task_id)
    same = alice.get_task(task_id, after_generation=seen.generation, wait=0.05)
    assert (same.state, same.generation) == (seen.state, seen.generation)


@pytest.mark.parametrize(
    ("after", "wait", "said"),
    [
        (None, 5.0, "give after_generation too"),
        (-1, 0.0, "0 or more"),
        (99, 0.0, "resume after a generation you saw"),
        (1, -1.0, "wait must be"),
        (1, float("nan"), "wait must be"),
        (1, 10_000.0, "wait must be"),
    ],
)
def test_bad_follow_options_are_refused(alice: LocalClient, after: int | None, wait: float, said: str) -> None:
    task_id = _asked(alice)
    with pytest.raises(BadRequest, match=said):
        alice.get_task(task_id, after_generation=after, wait=wait)


def test_nobody_but_its_parties_follows_a_task(alice: LocalClient, carol: LocalClient) -> None:
    task_id = _asked(alice)
    with pytest.raises(UnknownTask):
        carol.get_task(task_id, after_generation=1, wait=0.05)


def test_follow_task_tells_each_move_and_returns_the_final_task(alice: LocalClient, bob: LocalClient) -> None:
    sent = alice.open_task(TaskRequest(to="bob", text="write a haiku"))
    told: list[str] = []

    def work() -> None:
        wait_until(lambda: len(told) == 0 and bob.list_tasks().tasks, what="bob sees the task")
        bob.update_task(sent.task.id, state="working")
        wait_until(lambda: told == ["working"], what="the follower told of working")
        artifact = {"name": "haiku.txt", "parts": [{"text": "agents in a row"}]}
        bob.update_task(sent.task.id, state="completed", artifacts=[artifact])

    worker, outcome = in_thread(work)
    final = follow_task(alice, sent.task, DEADLINE, lambda task: told.append(str(task.state)))
    worker.join(DEADLINE)
    assert "error" not in outcome, outcome
    assert told == ["working", "completed"] and final.state == TaskState.COMPLETED
    assert final.artifacts[0].parts[0].text == "agents in a row"


def test_follow_task_cancels_the_task_at_its_timeout_and_the_worker_is_told(
    alice: LocalClient, bob: LocalClient
) -> None:
    sent = alice.open_task(TaskRequest(to="bob", text="never answered"))
    bob.read()
    with pytest.raises(TimedOut) as timed_out:
        follow_task(alice, sent.task, 0.2)
    assert timed_out.value.code == "timed_out" and "canceled" in timed_out.value.message
    assert alice.get_task(sent.task.id).state == TaskState.CANCELED
    told = bob.read().items
    assert [item.task_state for item in told] == ["canceled"]
