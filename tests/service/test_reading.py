"""Reading a mailbox through the service: read-once drain (two processes at once too), cursors,
waiting for mail (woken by another thread or process, ended by closing the events), ack."""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from callboard.errors import (
    UnknownMessage,
)
from callboard.requests import InboxQuery, ReadQuery, SendRequest
from tests.support.agent_process import DRAIN_SCRIPT, SEND_SCRIPT, python
from tests.support.answers import ids, row
from tests.support.service_setup import WS
from tests.support.store_rows import writes_nothing
from tests.support.threads import in_thread
from tests.support.waiting import wait_until

# --- drain: read once ---------------------------------------------------------------------------


def test_drain_never_returns_a_message_twice(alice, bob):
    sent = [alice.send(SendRequest(to="bob", text=f"m{i}")).message_id for i in range(10)]
    assert ids(bob.read(ReadQuery(peek=True))) == sent  # peeking marks nothing
    batches = [bob.read(ReadQuery(limit=3)) for _ in range(5)]
    assert [len(b.items) for b in batches] == [3, 3, 3, 1, 0]
    assert [i for b in batches for i in ids(b)] == sent
    assert [b.unread for b in batches] == [7, 4, 1, 0, 0]
    assert [b.cursor for b in batches] == [3, 6, 9, 10, 10]

    late = alice.send(SendRequest(to="bob", text="late")).message_id
    assert ids(bob.read()) == [late]
    assert bob.read().items == []


def test_two_reader_processes_draining_one_mailbox_get_every_message_exactly_once(db, alice, bob):
    sent = [alice.send(SendRequest(to="bob", text=f"m{i}")).message_id for i in range(300)]
    readers = [python(DRAIN_SCRIPT, db, WS, "bob", stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(2)]
    try:
        for reader in readers:
            assert reader.stdout.readline().strip() == "ready"
        for reader in readers:  # start both at once
            reader.stdin.write("go\n")
            reader.stdin.flush()
        outputs = [reader.communicate(timeout=60)[0] for reader in readers]
    finally:
        for reader in readers:
            if reader.poll() is None:
                reader.kill()
                reader.wait()
    assert [reader.returncode for reader in readers] == [0, 0]

    claimed = [json.loads(output.strip().splitlines()[-1]) for output in outputs]
    assert not set(claimed[0]) & set(claimed[1]), "both processes got the same message"
    together = claimed[0] + claimed[1]
    assert len(together) == len(set(together)), "one process got a message twice"
    assert sorted(together) == sorted(sent), "a message was never read"
    assert bob.read().items == []


def test_read_after_a_cursor_resumes_without_loss(alice, bob):
    sent = [alice.send(SendRequest(to="bob", text=f"m{i}")).message_id for i in range(3)]
    first = bob.read(ReadQuery(after=0, limit=2))
    assert (ids(first), first.cursor) == (sent[:2], 2)

    assert ids(bob.read()) == [sent[2]]  # another reader drains the rest in between
    sent += [alice.send(SendRequest(to="bob", text=f"m{i}")).message_id for i in range(3, 5)]

    resumed = bob.read(ReadQuery(after=first.cursor))
    assert (ids(resumed), resumed.cursor) == (sent[2:], 5)  # read or not, nothing past the cursor is skipped
    assert [item.seq for item in resumed.items] == [3, 4, 5]
    tail = bob.read(ReadQuery(after=resumed.cursor))
    assert (tail.items, tail.cursor) == ([], 5)
    assert bob.read().cursor == 5  # with nothing to give, the cursor is the mailbox's newest


@pytest.mark.parametrize("peek", [False, True])
def test_an_empty_reads_cursor_is_where_the_mailbox_stood_before_it_looked(service, alice, bob, monkeypatch, peek):
    # Mail that lands between the look and the answer must lie past the cursor, or a reader
    # resuming from it would never get that mail.
    look = service.store.mailbox.peek if peek else service.store.mailbox.claim
    landed: list[str] = []

    def look_then_mail_lands(*args, **kwargs):
        found = look(*args, **kwargs)
        if not landed:
            landed.append(alice.send(SendRequest(to="bob", text="just now")).message_id)
        return found

    monkeypatch.setattr(service.store.mailbox, "peek" if peek else "claim", look_then_mail_lands)
    empty = bob.read(ReadQuery(peek=peek))
    assert (empty.items, empty.cursor) == ([], 0)
    assert ids(bob.read(ReadQuery(after=empty.cursor))) == landed


# --- waiting for mail -----------------------------------------------------------------------------


def test_read_with_wait_returns_as_soon_as_another_thread_sends(alice, bob):
    wait = 20.0
    reader, box = in_thread(lambda: bob.read(ReadQuery(wait=wait)))
    assert wait_until(lambda: "started" in box)
    sent = alice.send(SendRequest(to="bob", text="wake up"))
    reader.join(timeout=wait + 10)
    assert not reader.is_alive()
    assert "error" not in box, box.get("error")
    assert ids(box["result"]) == [sent.message_id]
    assert box["finished"] - box["started"] < wait  # woken, not timed out


def test_read_with_wait_returns_as_soon_as_another_process_sends(db, bob):
    wait = 20.0
    reader, box = in_thread(lambda: bob.read(ReadQuery(wait=wait)))
    assert wait_until(lambda: "started" in box)
    sender = python(SEND_SCRIPT, db, WS, "alice", "bob", "from another process", stdout=subprocess.PIPE)
    out, _ = sender.communicate(timeout=30)
    assert sender.returncode == 0
    reader.join(timeout=wait + 10)
    assert not reader.is_alive()
    assert "error" not in box, box.get("error")
    result = box["result"]
    assert ids(result) == [out.strip()]
    assert result.items[0].message.sender == "alice"
    assert box["finished"] - box["started"] < wait  # woken, not timed out


def test_read_with_wait_and_nothing_arriving_returns_empty_after_the_wait(alice, bob):
    alice.send(SendRequest(to="carol", text="not for bob"))
    started = time.monotonic()
    result = bob.read(ReadQuery(wait=0.3))
    assert result.items == []
    assert time.monotonic() - started >= 0.3
    assert (result.unread, result.cursor) == (0, 0)


# --- ack --------------------------------------------------------------------------------------------


def test_ack_takes_messages_out_of_the_inbox(alice, bob):
    first, second = (alice.send(SendRequest(to="bob", text=text)).message_id for text in ("one", "two"))
    assert [i.message.id for i in bob.inbox()] == [first, second]
    assert bob.ack([first, first]).acked == [first]
    assert [i.message.id for i in bob.inbox()] == [second]
    assert [i.message.id for i in bob.inbox(InboxQuery(include_acked=True))] == [first, second]
    assert ids(bob.read()) == [second]  # an ack also counts as read


def test_ack_of_a_message_not_in_your_mailbox_raises_unknown_message_and_acks_nothing(db, alice, bob, carol):
    mine = alice.send(SendRequest(to="bob", text="for bob")).message_id
    not_mine = alice.send(SendRequest(to="carol", text="for carol")).message_id
    with writes_nothing(db), pytest.raises(UnknownMessage) as raised:
        bob.ack([mine, not_mine])
    assert raised.value.code == "unknown_message"
    assert raised.value.details["missing"] == [not_mine]
    assert [i.message.id for i in bob.inbox()] == [mine]
    assert row(bob.message_status(mine), "bob").acked_at is None


def test_closing_the_events_ends_a_waiting_read_with_nothing_instead_of_waiting_out_its_time(service, bob):
    bob.who()
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(bob.read, ReadQuery(wait=60))
        service.events.close()  # a stopping hub does this: before or during the wait, the read ends
        assert waiting.result(timeout=10).items == []
    assert service.events.closed
