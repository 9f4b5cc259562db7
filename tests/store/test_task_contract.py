"""The Store contract for tasks: a task's change rides on its message's transaction, the task is
read back whole with its artifacts in order, its events by generation, its mail by task; push
configs and the outbox of their posts, claimed under a lease (every store: see conftest)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from callboard.model import DeliveryState, Message, Part, new_id
from callboard.service.task_changes import move_write, new_task_write
from callboard.store.base import Store
from callboard.store.records import NewDelivery, TaskConflict, TaskQuery, TaskWrite
from callboard.tasks import PushConfig, Task, TaskArtifact, TaskState
from tests.support.store_data import OTHER_WS, WS, agents, at, build, ids


def mail(store: Store, sender: str, to: str, write, *, seconds: float = 0, thread_id: str | None = None, task_id: str):
    """Store one message from ``sender`` to ``to`` carrying ``write(message)``; the message and the write."""
    message, result = build(WS, sender, [to], created_at=at(seconds), thread_id=thread_id)
    message = message.model_copy(update={"task_id": task_id})
    change = write(message)
    delivery = [NewDelivery(recipient=to, state=DeliveryState.queued)]
    pending = store.submit_message(message, delivery, result, None, None, change)
    return message, change, pending


def open_task(store: Store, *, seconds: float = 0) -> Task:
    task_id = new_id()
    _, change, pending = mail(
        store,
        "boss",
        "worker",
        lambda m: new_task_write(m, task_id=task_id, worker="worker", metadata={"k": 1}, a2a_message_id="c-1"),
        seconds=seconds,
        task_id=task_id,
    )
    pending.result()
    return change.task


def move(store: Store, task: Task, state: TaskState, *, seconds: float, **options) -> Task:
    _, change, pending = mail(
        store,
        "worker",
        "boss",
        lambda m: move_write(task, m, state, **{"status_parts": [], **options}),
        seconds=seconds,
        thread_id=task.context_id,
        task_id=task.id,
    )
    pending.result()
    return change.task


def test_a_task_is_stored_with_its_mail_and_read_back_whole(store):
    agents(store, WS, "boss", "worker")
    task = open_task(store)
    assert store.tasks.get_task(WS, task.id) == task
    assert store.tasks.get_task(OTHER_WS, task.id) is None  # another workspace's
    (item,) = store.mailbox.peek(WS, "worker", None, 10)
    assert (item.message.task_id, item.task_id, item.task_state) == (task.id, task.id, TaskState.SUBMITTED)
    assert [(e.generation, e.kind, e.state) for e in store.tasks.task_events(WS, task.id, 0)] == [
        (1, "status", TaskState.SUBMITTED)
    ]
    assert store.tasks.task_events(OTHER_WS, task.id, 0) == []
    report = TaskArtifact(artifact_id="a", name="a.md", parts=[Part(text="A")])
    second = TaskArtifact(artifact_id="b", parts=[Part(data={"n": 2})])
    moved = move(store, task, TaskState.WORKING, seconds=1, artifacts=[report, second], status_parts=[Part(text="go")])
    again = move(
        store,
        moved,
        TaskState.COMPLETED,
        seconds=2,
        artifacts=[TaskArtifact(artifact_id="a", parts=[Part(text="A2")])],
        append=True,
    )
    stored = store.tasks.get_task(WS, task.id)
    assert stored == again and stored.generation == 6
    assert [(a.artifact_id, [p.text or p.data for p in a.parts]) for a in stored.artifacts] == [
        ("a", ["A", "A2"]),  # appended, and still first
        ("b", [{"n": 2}]),
    ]
    (item,) = store.mailbox.peek(WS, "worker", None, 10)
    assert item.task_state == TaskState.SUBMITTED  # the state its own message made, not the task's now
    assert [i.task_state for i in store.mailbox.peek(WS, "boss", None, 10)] == [TaskState.WORKING, TaskState.COMPLETED]
    assert [m.sender for m in store.tasks.task_messages(WS, task.id, 10)] == ["boss", "worker", "worker"]
    assert [m.sender for m in store.tasks.task_messages(WS, task.id, 1)] == ["worker"]
    assert [e.generation for e in store.tasks.task_events(WS, task.id, 4)] == [5, 6]


def test_a_stale_or_repeated_task_write_stores_nothing_of_its_message(store):
    agents(store, WS, "boss", "worker")
    task = open_task(store)
    moved = move(store, task, TaskState.WORKING, seconds=1)
    message, _, pending = mail(
        store,
        "worker",
        "boss",
        lambda m: move_write(task, m, TaskState.FAILED, status_parts=[]),  # read before the move above
        seconds=2,
        thread_id=task.context_id,
        task_id=task.id,
    )
    with pytest.raises(TaskConflict):
        pending.result()
    _, _, again = mail(
        store,
        "boss",
        "worker",
        lambda m: TaskWrite(task=task, events=[]),  # a new task with an id already taken
        task_id=task.id,
    )
    with pytest.raises(TaskConflict):
        again.result()
    assert store.sent.get_message(WS, message.id) is None
    assert store.tasks.get_task(WS, task.id) == moved
    assert [i.message.sender for i in store.mailbox.peek(WS, "boss", None, 10)] == ["worker"]
    assert len(store.mailbox.peek(WS, "worker", None, 10)) == 1


def test_racing_writes_of_one_generation_let_exactly_one_win(store_factory):
    first = store_factory.open()
    agents(first, WS, "boss", "worker")
    task = open_task(first)
    stores = [first, store_factory.open()]

    def attempt(n: int) -> bool:
        store = stores[n % 2]
        _, _, pending = mail(
            store,
            "worker",
            "boss",
            lambda m: move_write(task, m, TaskState.WORKING, status_parts=[Part(text=str(n))]),
            seconds=1,
            thread_id=task.context_id,
            task_id=task.id,
        )
        try:
            pending.result()
        except TaskConflict:
            return False
        return True

    with ThreadPoolExecutor(6) as pool:
        won = list(pool.map(attempt, range(6)))
    assert won.count(True) == 1
    assert first.tasks.get_task(WS, task.id).generation == 2
    assert len(first.mailbox.peek(WS, "boss", None, 10)) == 1


def test_tasks_are_listed_by_party_newest_updated_first_by_keyset(store):
    agents(store, WS, "boss", "worker", "other")
    tasks = [open_task(store, seconds=n) for n in range(4)]
    move(store, tasks[0], TaskState.WORKING, seconds=10)
    everyone = TaskQuery(workspace=WS, agent="worker", limit=2)
    page, total = store.tasks.list_tasks(everyone)
    assert total == 4 and [t.id for t in page] == [tasks[0].id, tasks[3].id]
    last = page[-1]
    rest, _ = store.tasks.list_tasks(
        TaskQuery(workspace=WS, agent="boss", limit=10, after=(last.updated_at.timestamp(), last.id))
    )
    assert [t.id for t in rest] == [tasks[2].id, tasks[1].id]
    working, count = store.tasks.list_tasks(TaskQuery(workspace=WS, agent="boss", limit=10, state="working"))
    assert ([t.id for t in working], count) == ([tasks[0].id], 1)
    assert store.tasks.list_tasks(TaskQuery(workspace=WS, agent="other", limit=10)) == ([], 0)
    assert store.tasks.list_tasks(TaskQuery(workspace=OTHER_WS, agent="boss", limit=10)) == ([], 0)
    by_context, _ = store.tasks.list_tasks(
        TaskQuery(workspace=WS, agent="boss", limit=10, context_id=tasks[2].context_id)
    )
    assert [t.id for t in by_context] == [tasks[2].id]
    recent, _ = store.tasks.list_tasks(
        TaskQuery(workspace=WS, agent="boss", limit=10, updated_after=at(2.5).timestamp())
    )
    assert [t.id for t in recent] == [tasks[0].id, tasks[3].id]


def test_push_configs_queue_one_post_per_event_and_a_claim_leases_it(store_factory):
    store = store_factory.open()
    agents(store, WS, "boss", "worker")
    task = open_task(store)
    hook = PushConfig(id="h1", task_id=task.id, url="https://93.184.216.34/a", token="t", created_at=at(0))
    assert store.tasks.set_push_config(WS, hook) == hook
    replaced = hook.model_copy(update={"url": "https://93.184.216.34/b"})
    store.tasks.set_push_config(WS, replaced)
    store.tasks.set_push_config(WS, hook.model_copy(update={"id": "h2"}))
    assert store.tasks.get_push_config(WS, task.id, "h1") == replaced
    assert store.tasks.get_push_config(OTHER_WS, task.id, "h1") is None
    assert [c.id for c in store.tasks.list_push_configs(WS, task.id)] == ["h1", "h2"]
    assert store.tasks.list_push_configs(OTHER_WS, task.id) == []
    move(store, task, TaskState.WORKING, seconds=1)
    other = store_factory.open()  # another process or replica claims at once
    with ThreadPoolExecutor(2) as pool:
        claims = list(pool.map(lambda s: s.tasks.claim_push_deliveries(at(5), 60.0, 10), [store, other]))
    taken = [d for claim in claims for d in claim]
    assert sorted((d.config_id, d.generation, d.attempts) for d in taken) == [("h1", 2, 1), ("h2", 2, 1)]
    assert {d.url for d in taken} == {"https://93.184.216.34/b", "https://93.184.216.34/a"}
    assert store.tasks.claim_push_deliveries(at(6), 60.0, 10) == []  # leased
    h1 = next(d for d in taken if d.config_id == "h1")
    h2 = next(d for d in taken if d.config_id == "h2")
    store.tasks.push_delivered(h1.id, at(7))
    assert [d.id for d in store.tasks.claim_push_deliveries(at(70), 60.0, 10)] == [h2.id]  # its lease ran out
    store.tasks.push_failed(h2.id, "503", at(200))
    assert store.tasks.claim_push_deliveries(at(199), 60.0, 10) == []
    assert [d.attempts for d in store.tasks.claim_push_deliveries(at(200), 60.0, 10)] == [3]
    assert store.tasks.delete_push_config(WS, task.id, "h2") and not store.tasks.delete_push_config(WS, task.id, "h2")
    assert not store.tasks.delete_push_config(OTHER_WS, task.id, "h1")
    assert store.tasks.claim_push_deliveries(at(10_000), 60.0, 10) == []  # h2's posts went with it


def test_plain_mail_is_no_task(store):
    agents(store, WS, "alice", "bob")
    message, result = build(WS, "alice", ["bob"])
    store.submit_message(
        message, [NewDelivery(recipient="bob", state=DeliveryState.queued)], result, None, None
    ).result()
    (item,) = store.mailbox.peek(WS, "bob", None, 10)
    assert (item.task_id, item.task_state, item.message.task_id) == (None, None, None)
    assert ids(store.mailbox.claim(WS, "bob", None, 10, at(1))) == [message.id]
    assert isinstance(message, Message)


def test_the_tasks_of_messages_are_named_once_each_and_plain_mail_has_none(store):
    agents(store, WS, "boss", "worker")
    task = open_task(store)
    moved = move(store, task, TaskState.WORKING, seconds=1)
    [first, second] = [m.id for m in store.tasks.task_messages(WS, task.id, 10)]
    plain, _, pending = mail(store, "boss", "worker", lambda m: None, seconds=2, task_id=None)
    pending.result()
    assert store.sent.task_ids_of(WS, [first, second, plain.id, "no-such-message"]) == [moved.id]
    assert store.sent.task_ids_of(WS, [plain.id]) == [] and store.sent.task_ids_of(WS, []) == []
    assert store.sent.task_ids_of(OTHER_WS, [first]) == []  # never another workspace's
