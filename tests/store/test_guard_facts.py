"""The store's part in the loop and flood guards, on every store: the pair's recent traffic,
the holds stored with deliveries, held mail, and held mail not surfaced before its time."""

from __future__ import annotations

from callboard.model import DeliveryState
from callboard.store.base import Store
from callboard.store.records import NewDelivery
from tests.support.store_data import WS, agents, at, build, ids


def send(store: Store, sender: str, recipient: str, seconds: float, held: tuple[float, str] | None = None) -> str:
    message, result = build(WS, sender, [recipient], created_at=at(seconds))
    until, reason = held if held else (None, None)
    delivery = NewDelivery(
        recipient=recipient,
        state=DeliveryState.queued,
        held_until=at(until).timestamp() if until is not None else None,
        held_reason=reason,
    )
    store.submit_message(message, [delivery], result, None, None).result()
    return message.id


def test_pair_traffic_is_both_directions_newest_first_within_the_limit_and_time(store: Store) -> None:
    agents(store, WS, "a", "b", "c")
    for i in range(5):
        send(store, "a", "b", i * 10)
        send(store, "b", "a", i * 10 + 5)
    send(store, "a", "c", 47)  # another pair
    send(store, "c", "b", 48)
    traffic = store.guard_facts.pair_traffic(WS, "a", "b", at(10), 3)
    assert [(e.sender, e.at - at(0).timestamp()) for e in traffic] == [
        ("b", 45.0),
        ("a", 40.0),
        ("b", 35.0),
        ("a", 30.0),
        ("b", 25.0),
        ("a", 20.0),
    ]
    assert store.guard_facts.pair_traffic(WS, "b", "a", at(41), 10) == traffic[:1]


def test_a_hold_is_kept_with_the_delivery_and_shown_in_its_status(store: Store) -> None:
    agents(store, WS, "a", "b")
    message_id = send(store, "a", "b", 0, held=(60, "flood"))
    (exchange,) = store.guard_facts.pair_traffic(WS, "a", "b", at(-1), 5)
    assert (exchange.held_until, exchange.held_reason) == (at(60).timestamp(), "flood")
    (status,) = store.sent.delivery_statuses(WS, message_id)
    assert status.held is not None and (status.held.reason, status.held.until) == ("flood", at(60))
    held = store.guard_facts.held_mail(WS, ["b"], at(30))
    assert [(h.message_id, h.sender, h.recipient, h.reason, h.until) for h in held] == [
        (message_id, "a", "b", "flood", at(60))
    ]
    assert store.guard_facts.held_mail(WS, None, at(30)) == held
    assert store.guard_facts.held_mail(WS, ["b"], at(60)) == [] and store.guard_facts.held_mail(WS, ["a"], at(30)) == []


def test_held_mail_is_not_surfaced_before_its_time_but_stays_unread(store: Store) -> None:
    agents(store, WS, "a", "b")
    held = send(store, "a", "b", 0, held=(60, "echo_loop"))
    free = send(store, "a", "b", 1)
    assert ids(store.mailbox.surface(WS, "b", "hook", False, 10, at(30), peek=True)) == [free]
    assert ids(store.mailbox.surface(WS, "b", "hook", False, 10, at(30))) == [free]
    assert store.mailbox.surface(WS, "b", "hook", False, 10, at(59)) == []
    assert store.mailbox.unread_count(WS, "b") == 2  # stored and queued: nothing lost
    assert ids(store.mailbox.surface(WS, "b", "waiter", False, 10, at(60))) == [held]  # let through at its time
    assert store.guard_facts.held_mail(WS, ["b"], at(30)) == []  # surfaced: no longer held
