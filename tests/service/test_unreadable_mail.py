"""A stored message that cannot be rendered — written by an older version (a data part of NaN
was stored as ``null``), by hand, or damaged — is shown as such (its id, its sender, a note),
and the rest of the mailbox reads normally: every reader of the service, on both stores.

The bad row is planted directly in the store, under the service's feet."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from callboard.client.local import LocalClient
from callboard.model import Caller, MailItem
from callboard.requests import ReadQuery, SendRequest, SurfaceQuery
from callboard.service.door import Service
from callboard.store.opening import is_postgres, open_store
from callboard.store.rows import UNREADABLE_NOTE
from tests.support.service_setup import MACHINE, WS, Clock

DAMAGE = {
    "a data part stored as null (how NaN was kept)": '[{"data":null}]',
    "NaN written by hand": '[{"data":NaN}]',
    "a number past a double": '[{"data":[1e400]}]',
    "NaN in a part's metadata": '[{"text":"t","metadata":{"m":NaN}}]',
    "parts that are not JSON": "not json at all",
    "a part of an unknown shape": '[{"text":"t","colour":"red"}]',
}


@pytest.fixture
def service(db: str) -> Iterator[Service]:
    store = open_store(db)
    try:
        yield Service(store, machine=MACHINE, clock=Clock())
    finally:
        store.close()


def plant(db: str, message_id: str, parts: str) -> None:
    """Overwrite a stored message's parts with ``parts``, as a hand or an older version might."""
    if is_postgres(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            assert conn.execute("UPDATE messages SET parts = %s WHERE id = %s", (parts, message_id)).rowcount == 1
        return
    conn = sqlite3.connect(db, timeout=10)
    try:
        with conn:
            assert conn.execute("UPDATE messages SET parts = ? WHERE id = ?", (parts, message_id)).rowcount == 1
    finally:
        conn.close()


def shown_as_unreadable(item: MailItem, message_id: str, sender: str) -> bool:
    (part,) = item.message.parts
    return (
        item.message.id == message_id
        and item.message.sender == sender
        and part.text is not None
        and part.text.startswith(UNREADABLE_NOTE.split("{", 1)[0])
        and message_id in part.text
        and sender in part.text
        and bool(part.metadata and part.metadata.get("unreadable"))
    )


@pytest.mark.parametrize("parts", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_message_that_cannot_be_rendered_is_shown_as_such_and_the_rest_reads(
    db: str, service: Service, parts: str
) -> None:
    alice = LocalClient(service, Caller(workspace=WS, agent="alice"))
    bob = LocalClient(service, Caller(workspace=WS, agent="bob"))
    bob.create_agent("bob")
    before = alice.send(SendRequest(to="bob", text="before")).message_id
    bad = alice.send(SendRequest(to="bob", text="to be damaged")).message_id
    after = alice.send(SendRequest(to="bob", text="after")).message_id
    plant(db, bad, parts)

    def check(items: list[MailItem]) -> None:
        assert [item.message.id for item in items] == [before, bad, after]
        assert [items[0].message.text, items[2].message.text] == ["before", "after"]
        assert shown_as_unreadable(items[1], bad, "alice"), items[1]

    check(bob.read(ReadQuery(peek=True, after=0)).items)
    check(bob.inbox())
    check(service.mailbox.deliveries_since(Caller(workspace=WS, agent="bob"), 0))  # what an SSE stream sends
    check(service.surface(Caller(workspace=WS, agent="bob"), SurfaceQuery(via="hook", peek=True)).items)
    check(service.surface(Caller(workspace=WS, agent="bob"), SurfaceQuery(via="hook")).items)  # hooks mark it surfaced
    assert alice.message_status(bad).recipients[0].state == "surfaced"
    check(bob.read().items)  # draining marks it read like any other
    assert bob.read().items == [] and alice.message_status(bad).recipients[0].state == "read"
