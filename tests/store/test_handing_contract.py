"""The Store contract for handed mail: handing to a session, confirming it surfaced, returning
it, receipts, and the history each step leaves (every store: see conftest)."""

from __future__ import annotations

from callboard.model import DeliveryState
from tests.support.store_data import WS, agents, at, ids, send, status_of


def test_handing_marks_mail_handed_to_the_session_and_records_it(store):
    agents(store, WS, "alice", "bob")
    sent = send(store, WS, "alice", ["bob"], state=DeliveryState.delivered)
    taken = store.mailbox.surface(WS, "bob", "socket", False, 10, at(1), session="s1", hand=True)
    assert ids(taken) == [sent.id] and taken[0].state == DeliveryState.handed
    row = status_of(store, WS, sent.id, "bob")
    assert (row.state, row.via, row.handed_to, row.handed_at, row.surfaced_at) == (
        "handed",
        "socket",
        "s1",
        at(1),
        None,
    )
    assert [(e.event, e.session, e.via) for e in row.history] == [("handed", "s1", "socket")]
    # Handed mail is not taken again, by any path, and stays unread.
    assert store.mailbox.surface(WS, "bob", "hook", False, 10, at(2)) == []
    assert store.mailbox.surface(WS, "bob", "hook", False, 10, at(2), peek=True) == []
    assert store.mailbox.unread_count(WS, "bob") == 1
    assert store.handing.handed_sessions(WS, "bob") == ["s1"]


def test_a_hooks_surface_is_surfaced_at_once(store):
    agents(store, WS, "alice", "bob")
    sent = send(store, WS, "alice", ["bob"])
    assert [i.state for i in store.mailbox.surface(WS, "bob", "hook", False, 10, at(1))] == [DeliveryState.surfaced]
    row = status_of(store, WS, sent.id, "bob")
    assert (row.state, row.via, row.surfaced_at, row.handed_to) == ("surfaced", "hook", at(1), None)
    assert [e.event for e in row.history] == ["surfaced"]


def test_confirm_surfaced_moves_only_handed_mail_and_records_the_evidence(store):
    agents(store, WS, "alice", "bob", "carol")
    handed = send(store, WS, "alice", ["bob"])
    store.mailbox.surface(WS, "bob", "waiter", False, 10, at(1), session="s1", hand=True)
    waiting = send(store, WS, "alice", ["bob"])  # not handed: a transcript naming it proves nothing here
    others = send(store, WS, "alice", ["carol"])
    store.mailbox.surface(WS, "carol", "socket", False, 10, at(1), session="s9", hand=True)
    assert store.handing.confirm_surfaced(WS, "bob", [handed.id, waiting.id, others.id], "transcript", at(2)) == [
        handed.id
    ]
    row = status_of(store, WS, handed.id, "bob")
    assert (row.state, row.surfaced_at, row.via) == ("surfaced", at(2), "waiter")
    assert [(e.event, e.session, e.via, e.detail) for e in row.history][-1] == (
        "surfaced",
        "s1",
        "waiter",
        "transcript",
    )
    assert status_of(store, WS, waiting.id, "bob").state == "queued"
    assert status_of(store, WS, others.id, "carol").state == "handed"
    assert store.handing.confirm_surfaced(WS, "bob", [handed.id], "transcript", at(3)) == []  # once


def test_returning_puts_handed_mail_back_unread_for_the_next_take(store):
    agents(store, WS, "alice", "bob")
    first, second = send(store, WS, "alice", ["bob"]), send(store, WS, "alice", ["bob"])
    store.mailbox.surface(WS, "bob", "socket", False, 10, at(1), session="s1", hand=True)
    store.handing.confirm_surfaced(WS, "bob", [first.id], "transcript", at(2))
    returned = store.handing.return_handed(WS, "bob", "s1", DeliveryState.queued, "its session ended", at(3))
    assert returned == [second.id]  # the surfaced one stays surfaced
    row = status_of(store, WS, second.id, "bob")
    assert (row.state, row.handed_to, row.handed_at, row.via) == ("queued", None, None, None)
    assert [(e.event, e.session, e.detail) for e in row.history] == [
        ("handed", "s1", None),
        ("returned", "s1", "its session ended"),
    ]
    assert store.handing.handed_sessions(WS, "bob") == []
    again = store.mailbox.surface(WS, "bob", "socket", False, 10, at(4), session="s2", hand=True)
    assert ids(again) == [second.id]
    assert store.handing.return_handed(WS, "bob", "s1", DeliveryState.queued, "again", at(5)) == []


def test_returning_only_named_messages(store):
    agents(store, WS, "alice", "bob")
    first, second = send(store, WS, "alice", ["bob"]), send(store, WS, "alice", ["bob"])
    store.mailbox.surface(WS, "bob", "socket", False, 10, at(1), session="s1", hand=True)
    assert store.handing.return_handed(WS, "bob", "s1", DeliveryState.delivered, "refused", at(2), [second.id]) == [
        second.id
    ]
    assert status_of(store, WS, first.id, "bob").state == "handed"
    assert status_of(store, WS, second.id, "bob").state == "delivered"


def test_receipts_are_recorded_for_a_delivery_that_exists_only(store):
    agents(store, WS, "alice", "bob")
    sent = send(store, WS, "alice", ["bob"])
    assert store.handing.record_delivery_event(
        WS, "bob", sent.id, "held", at(1), "s1", "socket", "permission-mode parity"
    )
    assert not store.handing.record_delivery_event(WS, "carol", sent.id, "held", at(1))
    (event,) = status_of(store, WS, sent.id, "bob").history
    assert (event.event, event.at, event.detail) == ("held", at(1), "permission-mode parity")


def test_reading_handed_mail_marks_it_read(store):
    agents(store, WS, "alice", "bob")
    sent = send(store, WS, "alice", ["bob"])
    store.mailbox.surface(WS, "bob", "socket", False, 10, at(1), session="s1", hand=True)
    assert ids(store.mailbox.claim(WS, "bob", None, 10, at(2))) == [sent.id]
    assert status_of(store, WS, sent.id, "bob").state == "read"
    assert store.handing.return_handed(WS, "bob", "s1", DeliveryState.queued, "ended", at(3)) == []


def test_deleting_an_agent_drops_its_history(store):
    agents(store, WS, "alice", "bob")
    sent = send(store, WS, "alice", ["bob"])
    store.mailbox.surface(WS, "bob", "socket", False, 10, at(1), session="s1", hand=True)
    assert store.directory.delete_agent(WS, "bob") == 1
    store.directory.ensure_agent(WS, "bob", at(2))
    assert store.sent.delivery_statuses(WS, sent.id) == []
