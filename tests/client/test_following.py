"""Following a mailbox (callboard.client.following) on the embedded store: every message once, in order;
mail pushed to a sibling session that died unread is handed on late, once."""

from __future__ import annotations

import threading
from pathlib import Path

from callboard.client.following import follow
from callboard.client.local import LocalClient
from callboard.model import Caller, MailItem
from callboard.requests import SendRequest, SessionRequest
from callboard.service.door import Service
from callboard.store.sqlite.store import SQLiteStore
from tests.support.service_setup import Clock
from tests.support.waiting import wait_until

WS = "acme"


def _follower(client: LocalClient, **options: object) -> tuple[list[MailItem], threading.Event, threading.Thread]:
    got: list[MailItem] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=follow, args=(client, got.append), kwargs={"stop": stop, "wait": 0.2, **options}, daemon=True
    )
    thread.start()
    return got, stop, thread


def test_a_follower_hands_on_each_message_once_in_order_and_marks_it_read(tmp_path: Path) -> None:
    service = Service(SQLiteStore(tmp_path / "db"), machine="here")
    alice = LocalClient(service, Caller(workspace=WS, agent="alice"))
    bob = LocalClient(service, Caller(workspace=WS, agent="bob"))
    early = alice.send(SendRequest(to="bob", text="before following")).message_id
    got, stop, thread = _follower(bob)
    later = [alice.send(SendRequest(to="bob", text=f"message {i}")).message_id for i in range(5)]
    wait_until(lambda: len(got) >= 6, what="six messages")
    stop.set()
    thread.join(timeout=5)
    assert [item.message.id for item in got] == [early, *later]
    assert bob.unread_count() == 0


def test_mail_of_a_sibling_session_that_died_unread_is_handed_on_late_once(tmp_path: Path) -> None:
    clock = Clock()
    service = Service(SQLiteStore(tmp_path / "db"), machine="here", liveness_seconds=60, clock=clock)
    bob = Caller(workspace=WS, agent="bob")
    service.directory.enter(bob)
    service.register_session(bob, SessionRequest(pid=100, runtime="script", machine="m1"))
    clock.advance(1)
    second = service.register_session(bob, SessionRequest(pid=200, runtime="script", machine="m1"))
    alice = LocalClient(service, Caller(workspace=WS, agent="alice"))
    for_first = alice.send(SendRequest(to="bob@m1#100", text="for the first pane")).message_id
    for_second = alice.send(SendRequest(to="bob@m1#200", text="for the second pane")).message_id

    in_second = LocalClient(service, bob.model_copy(update={"session_id": second.id}))
    got, stop, thread = _follower(in_second, after=0, sweep=0.1)
    wait_until(lambda: len(got) >= 1, what="the second pane's own mail")
    clock.advance(45)
    service.directory.heartbeat(bob, second.id)
    clock.advance(30)  # the first pane went quiet past the window: its unread mail is anyone's
    wait_until(lambda: len(got) >= 2, what="the first pane's mail, late")
    newer = alice.send(SendRequest(to="bob", text="after")).message_id
    wait_until(lambda: len(got) >= 3, what="new mail after that")
    stop.set()
    thread.join(timeout=5)
    assert [item.message.id for item in got] == [for_second, for_first, newer]
