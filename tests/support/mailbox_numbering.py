"""The check every write mode of the SQLite store must pass: many threads sending at once leave
every mailbox numbered 1..N, no number skipped or given twice."""

from __future__ import annotations

from callboard.store.sqlite.store import SQLiteStore
from tests.support.store_data import WS, agents, ids, send
from tests.support.threads import join_all, run_threads


def many_threads_send_at_once_and_every_mailbox_is_numbered_1_to_n(store: SQLiteStore) -> int:
    """32 threads send 25 messages each to a common mailbox and one of 4 others, reading as they
    go; every mailbox must hold its messages numbered 1..N, no number skipped or given twice.
    Returns how many sends were made."""
    threads, sends, boxes = 32, 25, 4
    agents(store, WS, "all", *(f"box-{b}" for b in range(boxes)), *(f"sender-{t}" for t in range(threads)))

    def sender(index: int) -> list:
        sent = []
        for i in range(sends):
            sent.append(send(store, WS, f"sender-{index}", ["all", f"box-{index % boxes}"], text=f"{index}/{i}"))
            store.mailbox.unread_count(WS, "all")  # and read meanwhile, on this thread's own connection
        return sent

    outcomes, running = run_threads(threads, sender)
    join_all(running)
    assert not [o for o in outcomes if isinstance(o, BaseException)]
    sent = [s for outcome in outcomes for s in outcome]  # type: ignore[union-attr]

    for box in ["all", *(f"box-{b}" for b in range(boxes))]:
        given = sorted(s.seqs[box] for s in sent if box in s.seqs)
        assert given == list(range(1, len(given) + 1)), f"{box}: numbers skipped or given twice"
        stored = store.mailbox.peek(WS, box, 0, 10_000)
        assert [i.seq for i in stored] == given
        assert sorted(ids(stored)) == sorted(s.id for s in sent if box in s.seqs)
    assert len(given) == threads * sends // boxes
    return threads * sends
