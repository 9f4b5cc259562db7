"""Tasks through the Service, on a real SQLite file and a real PostgreSQL schema: a task is mail
with a lifecycle, each move of it mail in its thread, its row and events written with that mail.

No mocks: the store is real; a crash is a real process that dies inside the transaction.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest

from callboard.errors import (
    BadRequest,
    BadTaskState,
    BadWebhook,
    CallboardError,
    Forbidden,
    TaskFinished,
    UnknownTask,
)
from callboard.hub.replicas import Notifying, replica_wakeups
from callboard.model import Caller, Message, Part, utcnow
from callboard.requests import SendRequest, SurfaceQuery, TaskListQuery, TaskRequest
from callboard.service.door import Service
from callboard.service.events import MailboxEvents
from callboard.service.task_changes import move_write
from callboard.store.opening import open_store
from callboard.store.records import TaskConflict, TaskWrite
from callboard.tasks import TaskArtifact, TaskState

WS = "team"
MACHINE = "box"
BOSS = Caller(workspace=WS, agent="boss")
WORKER = Caller(workspace=WS, agent="worker")
STRANGER = Caller(workspace=WS, agent="stranger")
ELSEWHERE = Caller(workspace="other", agent="boss")
PUBLIC_HOOK = "https://93.184.216.34/hook"  # a public address, written as one: nothing is resolved


def text(words: str) -> list[Part]:
    return [Part(text=words)]


@pytest.fixture
def service(db: str) -> Iterator[Service]:
    store = open_store(db)
    try:
        service = Service(store, machine=MACHINE)
        for caller in (BOSS, WORKER, STRANGER, ELSEWHERE):
            service.directory.enter(caller)
        yield service
    finally:
        store.close()


def opened(service: Service, words: str = "write the report") -> str:
    return service.tasking.open_task(BOSS, TaskRequest(to="worker", parts=text(words))).task.id


def test_a_task_is_mail_to_its_worker_naming_the_task(service: Service) -> None:
    sent = service.tasking.open_task(BOSS, TaskRequest(to="worker", parts=text("write the report"), subject="report"))
    task = sent.task
    assert (task.state, task.requester, task.worker, task.generation) == (TaskState.SUBMITTED, "boss", "worker", 1)
    assert task.context_id == sent.send.thread_id  # the task's context is its mail thread
    (item,) = service.mailbox.read(WORKER).items
    assert item.message.id == sent.send.message_id
    assert (item.message.task_id, item.task_id, item.task_state) == (task.id, task.id, TaskState.SUBMITTED)
    shown = json.loads(item.model_dump_json())
    assert (shown["task_id"], shown["task_state"], shown["message"]["task_id"]) == (task.id, "submitted", task.id)
    plain = service.sending.send(BOSS, SendRequest(to="worker", text="not a task"))
    (other,) = [i for i in service.mailbox.read(WORKER).items if i.message.id == plain.message_id]
    assert "task_id" not in json.loads(other.model_dump_json())  # other mail's JSON is as before


def test_the_workers_updates_move_the_task_and_reach_the_requester_as_mail(service: Service) -> None:
    task_id = opened(service)
    working = service.tasking.update_task(WORKER, task_id, state="working")
    assert (working.state, working.generation) == (TaskState.WORKING, 2)
    report = TaskArtifact(artifact_id="r1", name="report.md", parts=[Part(text="# Report")])
    done = service.tasking.update_task(
        WORKER, task_id, state=TaskState.COMPLETED, parts=text("here it is"), artifacts=[report]
    )
    assert (done.state, done.generation) == (TaskState.COMPLETED, 4)  # the artifact, then the status
    assert done.status_parts == text("here it is") and done.artifacts == [report]
    events = service.tasking.task_events(BOSS, task_id, 0)
    assert [(e.generation, e.kind, e.state) for e in events] == [
        (1, "status", TaskState.SUBMITTED),
        (2, "status", TaskState.WORKING),
        (3, "artifact", TaskState.COMPLETED),
        (4, "status", TaskState.COMPLETED),
    ]
    assert events[2].artifact == report
    assert [e.generation for e in service.tasking.task_events(WORKER, task_id, 2)] == [3, 4]
    mail = service.mailbox.read(BOSS).items
    assert [(i.task_id, i.message.thread_id) for i in mail] == [(task_id, done.context_id)] * 2
    assert mail[0].message.text == f"task {task_id}: working"  # no words given: a line saying what happened
    assert mail[1].message.parts == [*text("here it is"), Part(text="# Report")]  # the artifact rides along
    # each mail is headed with the state its own move made, not the task's state when read
    assert [i.task_state for i in mail] == [TaskState.WORKING, TaskState.COMPLETED]
    assert service.tasking.get_task(BOSS, task_id) == done


def test_events_resume_only_from_a_generation_the_task_reached(service: Service) -> None:
    task_id = opened(service)
    service.tasking.update_task(WORKER, task_id, state="working")
    assert service.tasking.task_events(BOSS, task_id, 2) == []  # seen it all: nothing missed
    for bad, said in ((3, "at generation 2, not 3"), (-1, "0 or more"), ("1", "whole number"), (True, "whole number")):
        with pytest.raises(BadRequest, match=said):
            service.tasking.task_events(BOSS, task_id, bad)  # type: ignore[arg-type]


def test_an_artifact_in_chunks_is_appended(service: Service) -> None:
    task_id = opened(service)
    service.tasking.update_task(
        WORKER, task_id, artifacts=[{"artifact_id": "log", "parts": [{"text": "one"}]}], last_chunk=False
    )
    task = service.tasking.update_task(
        WORKER, task_id, artifacts=[{"artifact_id": "log", "parts": [{"text": "two"}]}], append=True
    )
    assert task.state == TaskState.SUBMITTED  # artifacts alone keep the state
    assert [a.artifact_id for a in task.artifacts] == ["log"]
    assert task.artifacts[0].parts == [Part(text="one"), Part(text="two")]
    chunks = service.tasking.task_events(BOSS, task_id, 1)
    assert [(e.kind, e.append, e.last_chunk, e.artifact.parts if e.artifact else None) for e in chunks] == [
        ("artifact", False, False, [Part(text="one")]),
        ("artifact", True, True, [Part(text="two")]),
    ]


def test_a_follow_up_answers_a_task_that_asked_for_input(service: Service) -> None:
    first = service.tasking.open_task(BOSS, TaskRequest(to="worker", parts=text("write the report")))
    task_id = first.task.id
    service.tasking.update_task(WORKER, task_id, state="input-required", parts=text("which quarter?"))
    answer = service.tasking.open_task(BOSS, TaskRequest(to="worker", parts=text("Q3"), task_id=task_id))
    # submitted (1), taken up as the worker asked (2), input-required (3), answered: submitted (4)
    assert (answer.task.id, answer.task.state, answer.task.generation) == (task_id, TaskState.SUBMITTED, 4)
    assert answer.send.thread_id == first.task.context_id == answer.task.context_id
    items = service.mailbox.read(WORKER).items
    assert [(i.message.text, i.task_id) for i in items] == [("write the report", task_id), ("Q3", task_id)]
    with pytest.raises(BadRequest):  # a follow-up in another context is refused
        service.tasking.open_task(
            BOSS, TaskRequest(to="worker", parts=text("Q4"), task_id=task_id, context_id=first.send.message_id + "0")
        )
    history = service.tasking.get_task(BOSS, task_id, history_length=10).history
    assert [m.text for m in history] == ["write the report", "which quarter?", "Q3"]
    assert [m.text for m in service.tasking.get_task(BOSS, task_id, history_length=1).history] == ["Q3"]
    assert service.tasking.get_task(BOSS, task_id).history == []


def test_a_cancel_tells_the_worker_and_a_finished_task_moves_no_more(service: Service) -> None:
    task_id = opened(service)
    service.mailbox.read(WORKER)
    canceled = service.tasking.cancel_task(BOSS, task_id)
    assert canceled.state == TaskState.CANCELED
    (told,) = service.mailbox.read(WORKER).items
    assert (told.task_id, told.task_state, told.message.sender) == (task_id, TaskState.CANCELED, "boss")
    assert "canceled by boss" in told.message.text
    for move in (
        lambda: service.tasking.update_task(WORKER, task_id, state="working"),
        lambda: service.tasking.update_task(WORKER, task_id, parts=text("late words")),
        lambda: service.tasking.cancel_task(BOSS, task_id),
        lambda: service.tasking.open_task(BOSS, TaskRequest(to="worker", parts=text("again?"), task_id=task_id)),
    ):
        with pytest.raises(TaskFinished) as refused:
            move()
        assert refused.value.code == "task_finished"
    assert service.tasking.get_task(BOSS, task_id).generation == 2  # nothing was written


def test_whose_move_it_is_and_who_may_see_a_task(service: Service) -> None:
    task_id = opened(service)
    with pytest.raises(Forbidden, match="only it updates"):
        service.tasking.update_task(BOSS, task_id, state="working")
    with pytest.raises(Forbidden, match="only it may cancel"):
        service.tasking.cancel_task(WORKER, task_id)
    with pytest.raises(Forbidden):
        service.tasking.open_task(WORKER, TaskRequest(to="boss", parts=text("me too"), task_id=task_id))
    with pytest.raises(BadTaskState):
        service.tasking.update_task(WORKER, task_id, state="canceled")  # the requester's move
    with pytest.raises(BadTaskState):
        service.tasking.update_task(WORKER, task_id, state="done")
    with pytest.raises(BadRequest):
        service.tasking.update_task(WORKER, task_id)  # nothing to say
    for caller in (STRANGER, ELSEWHERE):  # neither party, or another workspace: no such task
        for look in (
            lambda caller=caller: service.tasking.get_task(caller, task_id),
            lambda caller=caller: service.tasking.task_events(caller, task_id, 0),
            lambda caller=caller: service.tasking.update_task(caller, task_id, state="working"),
            lambda caller=caller: service.tasking.cancel_task(caller, task_id),
            lambda caller=caller: service.tasking.list_push_configs(caller, task_id),
            lambda caller=caller: service.tasking.set_push_config(caller, task_id, PUBLIC_HOOK),
        ):
            with pytest.raises(UnknownTask) as unknown:
                look()
            assert unknown.value.code == "unknown_task"
    assert service.tasking.list_tasks(STRANGER).tasks == [] and service.tasking.list_tasks(ELSEWHERE).total_size == 0
    with pytest.raises(UnknownTask):
        service.tasking.get_task(BOSS, "not-a-task")
    with pytest.raises(BadRequest):
        service.tasking.open_task(BOSS, TaskRequest(to="#general", parts=text("to a channel?")))


def test_tasks_are_listed_newest_updated_first_a_page_at_a_time(service: Service) -> None:
    ids = [opened(service, f"task {n}") for n in range(5)]
    service.tasking.update_task(WORKER, ids[1], state="working")  # now the newest updated
    expected = [ids[1], ids[4], ids[3], ids[2], ids[0]]
    seen: list[str] = []
    token: str | None = None
    while True:
        page = service.tasking.list_tasks(WORKER, TaskListQuery(page_size=2, page_token=token))
        assert page.total_size == 5 and page.page_size == 2
        seen += [t.id for t in page.tasks]
        if not page.next_page_token:
            break
        token = page.next_page_token
    assert seen == expected
    assert [t.id for t in service.tasking.list_tasks(BOSS, TaskListQuery(state="working")).tasks] == [ids[1]]
    assert (
        service.tasking.list_tasks(
            BOSS, TaskListQuery(context_id=service.tasking.get_task(BOSS, ids[2]).context_id)
        ).total_size
        == 1
    )
    later = service.tasking.get_task(BOSS, ids[4]).updated_at
    assert [t.id for t in service.tasking.list_tasks(BOSS, TaskListQuery(updated_after=later)).tasks] == [ids[1]]
    with_history = service.tasking.list_tasks(BOSS, TaskListQuery(page_size=1, history_length=5)).tasks[0]
    assert [m.text for m in with_history.history] == ["task 1", f"task {ids[1]}: working"]
    for bad in ("garbage!", "eyJ4IjoxfQ"):
        with pytest.raises(BadRequest, match="page token"):
            service.tasking.list_tasks(BOSS, TaskListQuery(page_token=bad))
    with pytest.raises(BadRequest):
        service.tasking.list_tasks(BOSS, TaskListQuery(page_size=0))


def test_a_retried_a2a_message_is_the_same_task(service: Service) -> None:
    first = service.tasking.open_task(BOSS, TaskRequest(to="worker", parts=text("do it"), message_id="client-msg-1"))
    again = service.tasking.open_task(BOSS, TaskRequest(to="worker", parts=text("do it"), message_id="client-msg-1"))
    assert again.task.id == first.task.id and again.send.duplicate
    assert service.tasking.list_tasks(BOSS).total_size == 1
    assert len(service.mailbox.read(WORKER).items) == 1


def test_push_configs_are_kept_checked_and_fill_the_outbox(service: Service) -> None:
    task_id = opened(service)
    config = service.tasking.set_push_config(BOSS, task_id, PUBLIC_HOOK, token="secret-1")
    assert (config.id, config.task_id, config.url, config.token) == (task_id, task_id, PUBLIC_HOOK, "secret-1")
    other = service.tasking.set_push_config(
        WORKER, task_id, PUBLIC_HOOK + "2", config_id="second", auth_scheme="Bearer"
    )
    assert sorted(c.id for c in service.tasking.list_push_configs(BOSS, task_id)) == sorted([task_id, "second"])
    assert service.tasking.get_push_config(BOSS, task_id, "second") == other
    for bad in (
        "ftp://93.184.216.34/x",
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "https://user:pw@93.184.216.34/hook",
        "not a url",
    ):
        with pytest.raises(BadWebhook) as refused:
            service.tasking.set_push_config(BOSS, task_id, bad)
        assert refused.value.code == "bad_webhook"
    service.tasking.update_task(WORKER, task_id, state="working")  # generation 2: one post per config
    store = service.store
    claimed = store.tasks.claim_push_deliveries(utcnow() + timedelta(seconds=1), 30.0, 10)
    assert sorted((d.config_id, d.generation, d.attempts) for d in claimed) == sorted(
        [(task_id, 2, 1), ("second", 2, 1)]
    )
    assert json.loads(claimed[0].payload)["state"] == "working"
    assert store.tasks.claim_push_deliveries(utcnow() + timedelta(seconds=2), 30.0, 10) == []  # leased
    first, second = claimed
    store.tasks.push_delivered(first.id, utcnow())
    store.tasks.push_failed(second.id, "connection refused", utcnow() + timedelta(seconds=5))
    again = store.tasks.claim_push_deliveries(utcnow() + timedelta(seconds=10), 30.0, 10)
    assert [(d.id, d.attempts) for d in again] == [(second.id, 2)]
    store.tasks.push_failed(second.id, "gone for good", None)
    assert store.tasks.claim_push_deliveries(utcnow() + timedelta(days=3650), 30.0, 10) == []
    service.tasking.delete_push_config(BOSS, task_id, "second")
    assert [c.id for c in service.tasking.list_push_configs(WORKER, task_id)] == [task_id]
    with pytest.raises(UnknownTask):
        service.tasking.get_push_config(BOSS, task_id, "second")
    with pytest.raises(UnknownTask):
        service.tasking.delete_push_config(BOSS, task_id, "second")


def test_private_webhooks_are_for_a_service_told_to_allow_them(db: str) -> None:
    store = open_store(db)
    try:
        service = Service(store, machine=MACHINE, allow_private_webhooks=True)
        service.directory.enter(BOSS)
        task_id = opened(service)
        assert (
            service.tasking.set_push_config(BOSS, task_id, "http://127.0.0.1:9/hook").url == "http://127.0.0.1:9/hook"
        )
        with pytest.raises(BadWebhook):
            service.tasking.set_push_config(BOSS, task_id, "file:///etc/passwd")
    finally:
        store.close()


def test_a_subscriber_wakes_on_every_change_of_its_task(service: Service) -> None:
    task_id = opened(service)

    async def follow() -> list[int]:
        seen: list[int] = []
        with service.tasking.subscribe_task(WS, task_id) as subscription:
            for state in ("working", "completed"):
                mover = threading.Thread(
                    target=service.tasking.update_task, args=(WORKER, task_id), kwargs={"state": state}
                )
                mover.start()
                assert await subscription.wait(20.0), "no wake-up for the update"
                await asyncio.to_thread(mover.join)
                seen.append(service.tasking.get_task(BOSS, task_id).generation)
        return seen

    assert asyncio.run(follow()) == [2, 3]


def test_racing_updates_each_win_once_in_generation_order(service: Service) -> None:
    task_id = opened(service)
    errors: list[BaseException] = []

    def note(n: int) -> None:
        try:
            service.tasking.update_task(WORKER, task_id, parts=text(f"note {n}"))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=note, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    events = service.tasking.task_events(BOSS, task_id, 0)
    assert [e.generation for e in events] == list(range(1, 10))
    assert sorted(e.parts[0].text for e in events[1:]) == sorted(f"note {n}" for n in range(8))
    assert len(service.mailbox.read(BOSS).items) == 8


def test_a_stale_task_write_stores_nothing_of_its_mail(service: Service) -> None:
    task_id = opened(service)
    stale = service.tasking.get_task(BOSS, task_id).model_copy(update={"generation": 0})  # another move came first

    def write(message: Message) -> TaskWrite:
        return move_write(stale, message, TaskState.WORKING, status_parts=[])

    mail = SendRequest(to="boss", text="lost words", thread_id=stale.context_id)
    pending = service.sending.submit(WORKER, mail, task=write, task_id=task_id)
    with pytest.raises(TaskConflict):
        pending.result()
    assert service.mailbox.read(BOSS).items == []
    assert service.tasking.get_task(BOSS, task_id).generation == 1


CRASH = """
import os, sys
from callboard.model import Caller, Part
from callboard.service.door import Service
from callboard.store.opening import open_store
from callboard.store.parts import tasks

real = tasks.write_task
def dying(conn, write):
    real(conn, write)   # the task row and its events are written, the transaction is open
    os._exit(9)         # and the process dies before it commits
tasks.write_task = dying
service = Service(open_store(sys.argv[1]), machine="box")
service.tasking.update_task(Caller(workspace="team", agent="worker"), sys.argv[2], state="working", parts=[Part(text="x")])
"""


def test_a_crash_inside_the_transaction_writes_nothing(service: Service, db: str) -> None:
    task_id = opened(service)
    kind = "postgres" if db.startswith("postgres") else "sqlite"
    died = subprocess.run([sys.executable, "-c", CRASH.format(kind=kind), db, task_id], timeout=60)
    assert died.returncode == 9
    task = service.tasking.get_task(BOSS, task_id)
    assert (task.state, task.generation) == (TaskState.SUBMITTED, 1)
    assert [e.generation for e in service.tasking.task_events(BOSS, task_id, 0)] == [1]
    assert service.mailbox.read(BOSS).items == []  # nor its mail
    assert service.tasking.update_task(WORKER, task_id, state="working").generation == 2  # and the task goes on


def test_errors_carry_codes_a_model_can_act_on(service: Service) -> None:
    task_id = opened(service)
    with pytest.raises(CallboardError) as error:
        service.tasking.update_task(BOSS, task_id, state="working")
    body = error.value.to_dict()
    assert body["code"] == "forbidden" and "worker" in str(body["message"])


def test_a_subscriber_wakes_on_a_change_made_through_another_store(db: str) -> None:
    """Another process on the SQLite file (its change counter), or another hub replica on the
    PostgreSQL schema (its notification naming the task)."""
    near, far = open_store(db), open_store(db)
    try:
        events = MailboxEvents(None if isinstance(near, Notifying) else near.change_counter)
        if isinstance(near, Notifying):
            near.add_listener(replica_wakeups(events, near.replica, near))
        watching = Service(near, machine=MACHINE, events=events)
        moving = Service(far, machine=MACHINE)
        for caller in (BOSS, WORKER):
            moving.directory.enter(caller)
        task_id = opened(moving)

        async def follow() -> int:
            with watching.tasking.subscribe_task(WS, task_id) as subscription:
                await asyncio.sleep(0)  # subscribed: now the change is made elsewhere
                mover = threading.Thread(
                    target=moving.tasking.update_task, args=(WORKER, task_id), kwargs={"state": "working"}
                )
                mover.start()
                assert await subscription.wait(20.0), "no wake-up for another store's update"
                await asyncio.to_thread(mover.join)
            return watching.tasking.get_task(BOSS, task_id).generation

        assert asyncio.run(follow()) == 2
    finally:
        far.close()
        near.close()


def test_bad_task_input_is_refused_before_anything_is_written(service: Service) -> None:
    for bad in ({"x": float("nan")}, ["not", "an", "object"]):
        with pytest.raises(BadRequest):
            service.tasking.open_task(BOSS, TaskRequest(to="worker", parts=text("go"), metadata=bad))  # type: ignore[arg-type]
    task_id = opened(service)
    for artifacts in (
        [{"artifact_id": "a", "parts": []}],
        [{"artifact_id": "a", "parts": [{"text": "x", "data": 1}]}],
        [{"artifact_id": "a", "parts": [{"data": float("inf")}]}],
        [{"parts": [{"text": "x"}], "metadata": {"n": float("nan")}}],
    ):
        with pytest.raises(BadRequest):
            service.tasking.update_task(WORKER, task_id, state="working", artifacts=artifacts)
    with pytest.raises(BadRequest):
        service.tasking.update_task(WORKER, task_id, parts=[{"text": "x", "url": "http://x"}])
    with pytest.raises(BadRequest):
        service.tasking.list_tasks(BOSS, TaskListQuery(history_length=-1))
    assert service.tasking.list_tasks(BOSS).total_size == 1
    assert service.tasking.get_task(BOSS, task_id).generation == 1 and service.mailbox.read(BOSS).items == []
    made = service.tasking.update_task(WORKER, task_id, artifacts=[{"name": "no id", "parts": [{"text": "x"}]}])
    assert made.artifacts[0].artifact_id  # one without an id is given one


def test_a_task_surfaced_into_its_workers_context_is_working_and_its_requester_hears_so(service: Service) -> None:
    task_id = opened(service)
    (surfaced,) = service.surface(WORKER, SurfaceQuery(via="hook")).items  # a hook put it before the worker's model
    assert surfaced.task_id == task_id
    task = service.tasking.get_task(BOSS, task_id)
    assert (task.state, task.generation) == (TaskState.WORKING, 2)
    (heard,) = service.mailbox.read(BOSS).items
    assert (heard.task_id, heard.message.sender) == (task_id, "worker")
    assert "working" in heard.message.text
    # Taken up once: surfacing it again, or after the worker moved it on, changes nothing.
    service.tasking.update_task(WORKER, task_id, state="input-required", parts=text("which branch?"))
    service.tasking.open_task(
        BOSS, TaskRequest(to="worker", parts=text("main"), task_id=task_id)
    )  # the answer: submitted again
    service.surface(WORKER, SurfaceQuery(via="hook"))
    assert service.tasking.get_task(BOSS, task_id).state == TaskState.WORKING  # the answer was taken up too
    assert service.surface(WORKER, SurfaceQuery(via="hook")).items == []
    assert [e.state for e in service.tasking.task_events(BOSS, task_id, 0)] == [
        TaskState.SUBMITTED,
        TaskState.WORKING,
        TaskState.INPUT_REQUIRED,
        TaskState.SUBMITTED,
        TaskState.WORKING,
    ]


def test_a_peek_or_a_requesters_surfacing_does_not_take_a_task_up(service: Service) -> None:
    task_id = opened(service)
    service.surface(WORKER, SurfaceQuery(via="hook", peek=True))
    service.tasking.update_task(WORKER, task_id, parts=text("a note, no move"))
    service.surface(BOSS, SurfaceQuery(via="hook"))  # the requester's own mail of the task surfaced
    assert service.tasking.get_task(BOSS, task_id).state == TaskState.SUBMITTED


def test_an_answer_to_a_task_not_yet_taken_up_says_working_first_in_the_same_write(service: Service) -> None:
    task_id = opened(service)
    done = service.tasking.update_task(WORKER, task_id, state="completed", parts=text("done"))
    assert (done.state, done.generation) == (TaskState.COMPLETED, 3)
    events = service.tasking.task_events(BOSS, task_id, 0)
    assert [(e.generation, e.state) for e in events] == [
        (1, TaskState.SUBMITTED),
        (2, TaskState.WORKING),
        (3, TaskState.COMPLETED),
    ]
    assert events[1].message_id == events[2].message_id  # one mail carries both moves
    assert len(service.mailbox.read(BOSS).items) == 1


def test_a_list_with_an_agent_takes_only_the_tasks_between_the_two(service: Service) -> None:
    to_worker = opened(service)
    to_stranger = service.tasking.open_task(BOSS, TaskRequest(to="stranger", parts=text("other work"))).task.id
    assert [t.id for t in service.tasking.list_tasks(BOSS, TaskListQuery(with_agent="worker")).tasks] == [to_worker]
    assert [t.id for t in service.tasking.list_tasks(BOSS, TaskListQuery(with_agent="stranger")).tasks] == [to_stranger]
    assert [t.id for t in service.tasking.list_tasks(WORKER, TaskListQuery(with_agent="boss")).tasks] == [
        to_worker
    ]  # either side
    assert service.tasking.list_tasks(STRANGER, TaskListQuery(with_agent="worker")).tasks == []  # never another's
