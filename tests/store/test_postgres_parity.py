"""What the contract suite does not pin down yet — surfacing, urgent mail, deliveries pushed to
one session, mark_read — done the same by the PostgreSQL store as by SQLite: one scenario runs
on both and must leave the same trace."""

from __future__ import annotations

from collections.abc import Callable

from callboard.model import DeliveryState, MailItem
from callboard.store.base import Store
from callboard.store.records import NewDelivery
from callboard.store.sqlite.store import SQLiteStore
from tests.support.store_data import WS, agents, at, build


def scenario(store: Store) -> list[object]:
    """Mail for bob, some urgent, some pushed to one of his sessions; every look and mark of it,
    as labels (message ids differ from one run to the next)."""
    agents(store, WS, "alice", "bob")
    labels: dict[str, str] = {}

    def post(label: str, *, urgent: bool = False, target: str | None = None, state=DeliveryState.queued) -> str:
        message, result = build(WS, "alice", ["bob"], text=label, created_at=at(len(labels)))
        message = message.model_copy(update={"urgent": urgent})
        delivery = NewDelivery("bob", state, sessions=[target] if target else [], target_session=target)
        store.submit_message(message, [delivery], result, None, None).result()
        labels[message.id] = label
        return message.id

    def shown(items: list[MailItem]) -> list[tuple[str, int, str, bool]]:
        return [(labels[i.message.id], i.seq, i.state.value, i.message.urgent) for i in items]

    def statuses() -> list[tuple]:
        return [
            (labels[m], s.state.value, s.surfaced_at, s.read_at, s.acked_at, s.delivered_at, s.via, s.sessions)
            for m in labels
            for s in store.sent.delivery_statuses(WS, m)
        ]

    plain = post("plain")
    post("urgent", urgent=True)
    mine = post("to s1", target="s1", state=DeliveryState.delivered)
    post("to s2", target="s2", state=DeliveryState.delivered)
    post("urgent to s2", urgent=True, target="s2")
    later = post("later")
    trace: list[object] = []
    log: Callable[[object], None] = trace.append

    log(shown(store.mailbox.peek(WS, "bob", None, 100, hidden=["s2"])))
    log(store.mailbox.unread_count(WS, "bob", hidden=["s2"]))
    log(store.mailbox.unread_count(WS, "bob", hidden=["s1", "s2"]))
    log(shown(store.mailbox.surface(WS, "bob", "hook", True, 10, at(10), peek=True)))
    log(shown(store.mailbox.surface(WS, "bob", "hook", True, 10, at(10), hidden=["s2"])))
    log(shown(store.mailbox.surface(WS, "bob", "hook", True, 10, at(11))))
    log(shown(store.mailbox.surface(WS, "bob", "socket", False, 2, at(12), hidden=["s1"])))
    log(shown(store.mailbox.surface(WS, "bob", "waiter", False, 10, at(13), peek=True)))
    log(store.mailbox.mark_read(WS, "bob", [plain, "missing"], at(14)))
    log(store.mailbox.mark_read(WS, "bob", [plain, mine], at(15)))
    log(store.mailbox.ack(WS, "bob", [mine], at(16)))
    log(store.mailbox.mark_read(WS, "bob", [mine], at(17)))  # acked stays acked
    log(shown(store.mailbox.claim(WS, "bob", None, 10, at(18), hidden=["s2"])))
    log(shown(store.mailbox.surface(WS, "bob", "hook", False, 10, at(19))))
    log(shown(store.mailbox.claim(WS, "bob", 2, 3, at(20), hidden=["s1"])))
    log(shown(store.mailbox.newest(WS, "bob", False, 100)))
    log(shown(store.mailbox.claim(WS, "bob", None, 10, at(21))))
    log(store.mailbox.ack(WS, "bob", [later, plain], at(22)))
    log(shown(store.mailbox.newest(WS, "bob", True, 3)))
    log(statuses())
    return trace


def test_the_postgres_store_leaves_the_same_trace_as_sqlite(open_postgres, tmp_path):
    sqlite = SQLiteStore(tmp_path / "callboard.db")
    try:
        expected = scenario(sqlite)
    finally:
        sqlite.close()
    assert scenario(open_postgres()) == expected
