"""Mailbox signals: in-process publish, and other processes' commits seen through the store."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from callboard.service.events import MailboxEvents
from callboard.store.sqlite.store import SQLiteStore

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_publish_wakes_only_that_mailboxs_waiters():
    events = MailboxEvents()
    with events.subscribe("w", "bob") as bob, events.subscribe("w", "carol") as carol:
        events.publish("w", "bob")
        assert bob.wait(5)
        assert not carol.wait(0)


def test_a_signal_sent_before_the_wait_is_not_lost():
    events = MailboxEvents()
    with events.subscribe("w", "bob") as bob:
        events.publish("w", "bob")  # between "mailbox looked empty" and "wait"
        assert bob.wait(5)
        assert not bob.wait(0)  # and it is consumed by that wait


def test_a_publish_from_another_thread_wakes_a_blocked_waiter():
    events = MailboxEvents()
    with events.subscribe("w", "bob") as bob:
        threading.Thread(target=events.publish, args=("w", "bob")).start()
        assert bob.wait(10)


def test_a_commit_through_another_connection_wakes_waiters(tmp_path):
    path = tmp_path / "s.db"
    watched, other = SQLiteStore(path), SQLiteStore(path)
    try:
        events = MailboxEvents(watched.change_counter)
        with events.subscribe("w", "bob") as bob:
            other.directory.ensure_workspace("w", NOW)  # a commit the watching process did not make
            assert bob.wait(10)
    finally:
        watched.close()
        other.close()


def test_the_poller_runs_only_while_someone_waits(tmp_path):
    store = SQLiteStore(tmp_path / "s.db")
    try:
        events = MailboxEvents(store.change_counter)
        with events.subscribe("w", "bob"):
            poller = events._poller
            assert poller is not None and poller.is_alive()
        poller.join(timeout=10)
        assert not poller.is_alive()
    finally:
        store.close()


def test_a_pushed_delivery_is_the_json_of_its_mailbox_item_task_mail_too():
    from datetime import UTC, datetime

    from callboard.model import DeliveryState, Message, Part, mail_item
    from callboard.service.events import PushedDelivery
    from callboard.tasks import TaskState

    at = datetime(2026, 12, 2, tzinfo=UTC)
    plain = Message(
        id="m1", workspace="w", sender="a", recipients=["b"], parts=[Part(text="hi")], thread_id="m1", created_at=at
    )
    task_mail = plain.model_copy(update={"task_id": "t1"})
    for message, state in ((plain, None), (task_mail, TaskState.INPUT_REQUIRED)):
        item = mail_item(3, DeliveryState.delivered, message, state)
        pushed = PushedDelivery(
            3, "delivered", message.model_dump_json(), None, message.task_id, state.value if state else None
        )
        assert pushed.mail_item_json() == item.model_dump_json()
