"""The PostgreSQL store under concurrent writers, as several hub replicas make them: every
mailbox stays numbered 1..n, and a race ends as one of the racers' outcomes, never a mix."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import pytest

from callboard.model import DeliveryState
from callboard.store.records import DuplicateIdempotencyKey, NewDelivery, RecipientsGone
from tests.support.store_data import WS, agents, at, build, ids, send

DEADLINE = 60.0


def race(count: int, work: Callable[[int], object]) -> tuple[list[object], list[BaseException]]:
    """Run ``work(i)`` on ``count`` threads released together; what each returned or raised."""
    start = threading.Barrier(count)
    results: list[object] = [None] * count
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            start.wait(timeout=DEADLINE)
            results[index] = work(index)
        except BaseException as error:  # the test decides which are expected
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=DEADLINE)
    assert not any(t.is_alive() for t in threads), "a racer never finished"
    return results, errors


def test_concurrent_sends_from_several_replicas_number_every_mailbox_1_to_n(open_postgres):
    replicas = [open_postgres(), open_postgres(), open_postgres()]
    names = [f"agent-{i}" for i in range(6)]
    agents(replicas[0], WS, "alice", *names)
    per_thread = 25

    def sender(index: int) -> list[dict[str, int]]:
        chooser = random.Random(index)
        store = replicas[index % len(replicas)]
        return [
            send(store, WS, "alice", chooser.sample(names, chooser.randint(1, len(names)))).seqs
            for _ in range(per_thread)
        ]

    results, errors = race(8, sender)
    assert errors == []
    answered: dict[str, list[int]] = {name: [] for name in names}
    for seqs in (s for thread in results for s in thread):  # type: ignore[union-attr]
        for name, seq in seqs.items():
            answered[name].append(seq)
    for name in names:
        total = len(answered[name])
        assert sorted(answered[name]) == list(range(1, total + 1)), f"{name}'s numbers have a gap or a repeat"
        assert replicas[1].mailbox.last_seq(WS, name) == total
        assert [i.seq for i in replicas[2].mailbox.peek(WS, name, 0, 1000)] == list(range(1, total + 1))


def test_two_sends_creating_the_same_new_recipient_both_land_in_its_mailbox(open_postgres):
    first, second = open_postgres(), open_postgres()
    agents(first, WS, "alice", "bob")
    stores = [first, second] * 4

    results, errors = race(len(stores), lambda i: send(stores[i], WS, "alice", ["newbie"], create=["newbie"]))
    assert errors == []
    assert sorted(r.seqs["newbie"] for r in results) == list(range(1, len(stores) + 1))  # type: ignore[union-attr]
    assert len(first.mailbox.peek(WS, "newbie", 0, 100)) == len(stores)


def test_racing_sends_with_one_idempotency_key_store_exactly_one(open_postgres):
    stores = [open_postgres(), open_postgres()]
    agents(stores[0], WS, "alice", "bob")

    def attempt(index: int) -> dict[str, int]:
        message, result = build(WS, "alice", ["bob", "fresh"])
        deliveries = [
            NewDelivery("bob", DeliveryState.queued),
            NewDelivery("fresh", DeliveryState.queued, create_agent=True),
        ]
        return stores[index % 2].submit_message(message, deliveries, result, "same-key", "h").result()

    results, errors = race(6, attempt)
    assert [r for r in results if r is not None] == [{"bob": 1, "fresh": 1}]
    assert len(errors) == 5 and all(isinstance(e, DuplicateIdempotencyKey) for e in errors)
    assert stores[1].mailbox.last_seq(WS, "bob") == 1
    assert len(stores[1].mailbox.peek(WS, "bob", 0, 100)) == 1


def test_an_agent_deleted_while_sends_race_to_it_leaves_no_delivery_behind(open_postgres):
    senders, deleter = open_postgres(), open_postgres()
    agents(senders, WS, "alice", "bob", "carol")

    def sender() -> int:
        stored = 0
        for _ in range(40):
            try:
                send(senders, WS, "alice", ["carol", "bob"])
                stored += 1
            except RecipientsGone:  # bob is gone: the send stored nothing
                pass
        return stored

    def work(index: int) -> object:
        if index == 0:
            return deleter.directory.delete_agent(WS, "bob")
        return sender()

    results, errors = race(5, work)
    assert errors == []
    assert results[0] is not None  # deleted (with however many unread messages it held)
    stored = sum(r for r in results[1:])  # type: ignore[misc]
    assert senders.mailbox.last_seq(WS, "carol") == stored  # a send that failed stored nothing, not even carol's
    assert len(senders.mailbox.peek(WS, "carol", 0, 1000)) == stored
    senders.directory.ensure_agent(WS, "bob", at(60))
    assert senders.mailbox.peek(WS, "bob", 0, 1000) == []  # no delivery of a send that raced the delete
    fresh = send(senders, WS, "alice", ["bob"])
    assert fresh.seqs == {"bob": 1}


@pytest.mark.parametrize("hidden", [(), ("session-x",)])
def test_claimers_and_surfacers_racing_on_one_mailbox_each_see_it_in_order(open_postgres, hidden):
    stores = [open_postgres(), open_postgres(), open_postgres()]
    agents(stores[0], WS, "alice", "bob")
    sent = [send(stores[0], WS, "alice", ["bob"], text=f"m{i}").id for i in range(120)]

    def reader(index: int) -> list[str]:
        store, seen = stores[index % 3], []
        while True:
            if index % 2:
                batch = store.mailbox.surface(WS, "bob", "hook", False, 5, at(1), hidden=hidden)
                if not batch and store.mailbox.unread_count(WS, "bob") == 0:
                    return seen
            else:
                batch = store.mailbox.claim(WS, "bob", None, 5, at(1), hidden=hidden)
                if not batch:
                    return seen
            seen.extend(ids(batch))

    results, errors = race(4, reader)
    assert errors == []
    claimed = [m for i, r in enumerate(results) if i % 2 == 0 for m in r]  # type: ignore[union-attr]
    assert sorted(claimed, key=sent.index) == sent and len(set(claimed)) == len(sent), "claimed once each"
    for seen in results:
        assert seen == sorted(seen, key=sent.index), "a reader saw its mail out of order"  # type: ignore[arg-type]
    assert stores[0].mailbox.unread_count(WS, "bob") == 0
