"""Deciding a send from memory (``service/from_memory``): an ordinary send is decided from what
the service keeps, and one that needs the store stops before it changed anything, so that the
same send decided where the store may be read does it once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from callboard.errors import UnknownRecipient
from callboard.guards import Exchange
from callboard.model import Caller, SendResult
from callboard.pending import Pending
from callboard.requests import ReadQuery, SendRequest
from callboard.service import holds, liveness, remotes, unread_counts
from callboard.service.door import Service
from callboard.service.from_memory import NotInMemory, from_memory
from callboard.store.opening import open_store
from tests.support.waiting import wait_until

WS = "team"
ALICE = Caller(workspace=WS, agent="alice")
BOB = Caller(workspace=WS, agent="bob")


PARTS = ("directory", "sessions", "sent", "mailbox", "handing", "guard_facts", "audit", "tokens", "tasks", "remotes")


class Reads:
    """The store (and each of its parts), with every call but a send's commit counted."""

    def __init__(self, store: Any, calls: list[str] | None = None, part: str = "") -> None:
        self.store = store
        self.calls: list[str] = [] if calls is None else calls
        self.part = part

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.store, name)
        if name in PARTS:
            return Reads(attribute, self.calls, f"{name}.")
        if not callable(attribute) or name in ("submit_message", "change_counter", "wait_for_change"):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(self.part + name)
            return attribute(*args, **kwargs)

        return counted


def submit(service: Service, caller: Caller, to: str, text: str, **options: Any) -> Pending[SendResult]:
    return service.sending.submit(caller, SendRequest(to=to, text=text, **options))


def send(service: Service, caller: Caller, to: str, text: str, **options: Any) -> SendResult:
    return submit(service, caller, to, text, **options).result()


@pytest.fixture
def service(db: str) -> Iterator[Service]:
    store = open_store(db)
    try:
        service = Service(Reads(store), machine="box")  # type: ignore[arg-type]
        for caller in (ALICE, BOB):
            service.directory.enter(caller)
        yield service
    finally:
        store.close()


@pytest.fixture
def fresh_for_long(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the service keeps stays fresh while the test runs, however slow the machine."""
    monkeypatch.setattr(liveness, "SESSIONS_FRESH_SECONDS", 3600.0)
    monkeypatch.setattr(holds, "TRAFFIC_REUSE_SECONDS", 3600.0)
    monkeypatch.setattr(remotes, "REMOTE_NAMES_FRESH_SECONDS", 3600.0)
    monkeypatch.setattr(unread_counts, "UNREAD_FRESH_SECONDS", 3600.0)


def test_a_send_whose_facts_are_kept_reads_nothing_from_the_store(service: Service, fresh_for_long: None) -> None:
    send(service, ALICE, "bob", "first")  # where the store may be read: the facts are kept from here
    assert service.mailbox.unread_count(ALICE) == 0
    store: Reads = service.store  # type: ignore[assignment]
    assert "mailbox.unread_count" in store.calls  # counted where the store may be read
    store.calls.clear()
    with from_memory():
        sent = submit(service, ALICE, "bob", "second", idempotency_key="k-2").result()
        assert service.mailbox.unread_count(ALICE) == 0
    assert store.calls == []
    assert [(r.agent, r.state) for r in sent.recipients] == [("bob", "queued")]
    assert [item.message.text for item in service.mailbox.read(BOB).items] == ["first", "second"]


def test_a_send_that_needs_the_store_stops_before_it_changed_anything(service: Service, fresh_for_long: None) -> None:
    send(service, ALICE, "bob", "first")
    for to in ("carol", "bob@box", "#general"):  # an unknown name, a machine, a channel
        with pytest.raises(NotInMemory), from_memory():
            submit(service, ALICE, to, "not yet")
    with pytest.raises(NotInMemory), from_memory():
        submit(service, ALICE, "bob", "a reply", reply_to=service.mailbox.read(BOB).items[0].message.id)
    traffic = service.guards._traffic[(WS, "alice", "bob")][1]
    assert [e.sender for e in traffic.exchanges] == ["alice"]  # the guards saw one send, not five
    assert service.mailbox.read(BOB).items == []
    with pytest.raises(UnknownRecipient):  # decided where the store may be read: as always
        submit(service, Caller(workspace=WS, agent="alice", person=False), "carol", "hi")


def test_a_repeated_key_decided_from_memory_gets_its_original(service: Service, fresh_for_long: None) -> None:
    first = send(service, ALICE, "bob", "once", idempotency_key="same")
    with from_memory():
        again = submit(service, ALICE, "bob", "once", idempotency_key="same").result()
    assert again.duplicate and again.message_id == first.message_id
    assert [item.message.text for item in service.mailbox.read(BOB).items] == ["once"]


def test_a_refused_keyed_send_is_decided_again_where_its_original_can_be_found(
    service: Service, fresh_for_long: None
) -> None:
    send(service, ALICE, "bob", "first")
    with pytest.raises(NotInMemory), from_memory():  # require_live refuses it: its key is looked up first
        submit(service, ALICE, "bob", "live only", require_live=True, idempotency_key="k")


def test_a_kept_unread_count_follows_this_services_sends_and_reads(service: Service, fresh_for_long: None) -> None:
    assert service.mailbox.unread_count(BOB) == 0  # counted: kept from now on
    send(service, ALICE, "bob", "one")
    send(service, ALICE, "bob", "two")
    with from_memory():
        assert service.mailbox.unread_count(BOB) == 2
    service.mailbox.read(BOB, ReadQuery(limit=1))
    with from_memory():
        assert service.mailbox.unread_count(BOB) == 1  # the read's own count, kept
    service.mailbox.mark_read(BOB, [service.mailbox.read(BOB, ReadQuery(peek=True)).items[0].message.id])
    with pytest.raises(NotInMemory), from_memory():
        service.mailbox.unread_count(BOB)  # marked read: counted again where the store may be read
    assert service.mailbox.unread_count(BOB) == 0


def test_another_processs_change_is_seen_once_a_kept_count_is_old(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unread_counts, "UNREAD_FRESH_SECONDS", 0.0)
    first, second = open_store(db), open_store(db)
    try:
        here, there = Service(first, machine="box"), Service(second, machine="box")
        here.directory.enter(BOB)
        assert here.mailbox.unread_count(BOB) == 0
        send(there, ALICE, "bob", "from elsewhere")
        with pytest.raises(NotInMemory), from_memory():
            here.mailbox.unread_count(BOB)
        assert here.mailbox.unread_count(BOB) == 1
    finally:
        first.close()
        second.close()


def test_a_count_past_half_its_freshness_is_counted_again_behind_the_sends(service: Service) -> None:
    assert service.mailbox.unread_count(ALICE) == 0
    kept = service.mailbox.unread._kept[(WS, "alice")][()]
    kept.at -= unread_counts.UNREAD_FRESH_SECONDS * 0.6  # past half its freshness, not stale
    with from_memory():
        assert service.mailbox.unread_count(ALICE) == 0  # served from memory, and counted again on the side
    wait_until(lambda: service.mailbox.unread._kept[(WS, "alice")][()] is not kept, what="the count taken again")


def test_a_pairs_traffic_read_again_keeps_this_services_sends_the_store_does_not_have_yet(
    service: Service,
) -> None:
    send(service, ALICE, "bob", "first")
    key = (WS, "alice", "bob")
    read_at, traffic = service.guards._traffic[key]
    on_its_way = Exchange("alice", read_at + 0.1)  # decided here, not committed yet
    traffic.add(on_its_way)
    service.guards._read_again(key, datetime.fromtimestamp(read_at + 0.5, UTC))
    again = service.guards._traffic[key][1].exchanges
    assert again[0] is on_its_way and [e.sender for e in again] == ["alice", "alice"]
