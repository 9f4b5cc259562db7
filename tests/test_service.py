"""The Service on a real SQLite file: what agents see when they message each other.

Clients are ``LocalClient``s on one Service (one store connection) unless a test names
threads or processes; processes are real (``python -c``) and open their own store on the
same file. Time that liveness depends on comes from an injected clock moved by hand.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from callboard.client.local import LocalClient
from callboard.errors import (
    AlreadyExists,
    BadAddress,
    BadName,
    BadRequest,
    CallboardError,
    IdempotencyConflict,
    NoLiveSession,
    NotMember,
    TooLarge,
    UnknownAgent,
    UnknownChannel,
    UnknownMessage,
    UnknownRecipient,
    UnknownSession,
)
from callboard.model import (
    AgentPresence,
    Caller,
    DeliveryState,
    MessageStatus,
    ReadResult,
    RecipientOutcome,
    RecipientStatus,
    SendResult,
    WhoReport,
    new_id,
)
from callboard.procs import process_start_time
from callboard.requests import SendRequest
from callboard.service.door import Service
from callboard.store.opening import is_postgres, open_store
from tests.support.postgres import table_rows
from tests.support.waiting import wait_until

WS = "acme"
MACHINE = "testhost"
LIVENESS = 60.0

# A process that opens its own store on the database file and acts as one agent.
_CHILD_PRELUDE = f"""
import json, sys
from callboard.client.local import LocalClient
from callboard.model import Caller
from callboard.requests import SendRequest
from callboard.service.door import Service
from callboard.store.opening import open_store
db, workspace, agent = sys.argv[1:4]
client = LocalClient(Service(open_store(db), machine={MACHINE!r}), Caller(workspace=workspace, agent=agent))
client.service.enter(client.caller)  # the agent exists before the test goes on (looking creates nothing)
"""

SEND_SCRIPT = (
    _CHILD_PRELUDE
    + """
to, text = sys.argv[4:6]
print(client.send(SendRequest(to=to, text=text)).message_id, flush=True)
"""
)

DRAIN_SCRIPT = (
    _CHILD_PRELUDE
    + """
print("ready", flush=True)
sys.stdin.readline()  # go
got = []
while items := client.read(limit=5).items:
    got.extend(item.message.id for item in items)
print(json.dumps(got), flush=True)
"""
)


# --- helpers -------------------------------------------------------------------------------


class Clock:
    """The service's clock: stands still until a test moves it."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def snapshot(db: str) -> list[str]:
    """Every row of the database, as text, read through a connection of its own."""
    if is_postgres(db):
        return table_rows(db)
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


@contextmanager
def writes_nothing(db: str) -> Iterator[None]:
    before = snapshot(db)
    yield
    assert snapshot(db) == before, "the failed call changed the database"


def python(script: str, *args: object, **popen: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], text=True, **popen)  # type: ignore[call-overload]


def ids(result: ReadResult) -> list[str]:
    return [item.message.id for item in result.items]


def everything(client: LocalClient) -> list[str]:
    """Every message in the client's mailbox, read or not, without marking anything."""
    return ids(client.read(peek=True, after=0, limit=1000))


def outcome(result: SendResult, address: str) -> RecipientOutcome:
    (found,) = [o for o in result.recipients if o.address == address]
    return found


def row(status: MessageStatus, address: str) -> RecipientStatus:
    (found,) = [r for r in status.recipients if r.address == address]
    return found


def presence(report: WhoReport, name: str) -> AgentPresence:
    (found,) = [a for a in report.agents if a.name == name]
    return found


def in_thread(target: Callable[[], object]) -> tuple[threading.Thread, dict[str, object]]:
    """Run ``target`` on a thread; its answer (or error) lands in the returned dict."""
    box: dict[str, object] = {}

    def run() -> None:
        box["started"] = time.monotonic()
        try:
            box["result"] = target()
        except BaseException as error:
            box["error"] = error
        box["finished"] = time.monotonic()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(db: str, clock: Clock) -> Iterator[Service]:
    store = open_store(db)
    try:
        yield Service(store, machine=MACHINE, liveness_seconds=LIVENESS, clock=clock)
    finally:
        store.close()


def _agent(service: Service, name: str) -> LocalClient:
    client = LocalClient(service, Caller(workspace=WS, agent=name))
    client.create_agent(name)  # created here: looking (whoami, who, a read) creates nobody
    return client


@pytest.fixture
def alice(service: Service) -> LocalClient:
    return _agent(service, "alice")


@pytest.fixture
def bob(service: Service) -> LocalClient:
    return _agent(service, "bob")


@pytest.fixture
def carol(service: Service) -> LocalClient:
    return _agent(service, "carol")


@pytest.fixture
def dave(service: Service) -> LocalClient:
    return _agent(service, "dave")


@pytest.fixture
def team(alice: LocalClient, bob: LocalClient, carol: LocalClient) -> str:
    """#team: alice (its creator), bob and carol."""
    alice.create_channel("team", "the team")
    bob.join_channel("team")
    carol.join_channel("team")
    return "#team"


def test_whoami_says_who_where_and_in_which_session_from_the_service(service, db, bob):
    me = service.whoami(Caller(workspace=WS, agent="bob"), "given")
    assert (me.workspace, me.agent, me.source, me.machine, me.session) == (WS, "bob", "given", MACHINE, None)
    assert me.store == service.store.location and me.liveness_seconds == LIVENESS
    session = bob.register_session(runtime="claude-code")
    in_session = Caller(workspace=WS, agent="bob", session_id=session.id)
    assert service.whoami(in_session, "bob token", "https://hub.example").session == session.address
    assert service.whoami(in_session, "bob token", "https://hub.example").store == "https://hub.example"
    assert bob.whoami() == service.whoami(bob.caller, bob.identity_source)  # the local client's is the service's


# --- conversations ---------------------------------------------------------------------------


def test_two_agents_exchange_messages_and_a_reply_joins_the_parents_thread(alice, bob):
    sent = alice.send(SendRequest(to="bob", text="can you review #42?", subject="review"))
    assert sent.thread_id == sent.message_id  # a new message starts its own thread

    (item,) = bob.read().items
    first = item.message
    assert (first.id, first.sender, first.text, first.subject, first.thread_id) == (
        sent.message_id,
        "alice",
        "can you review #42?",
        "review",
        sent.message_id,
    )
    assert first.recipients == ["bob"]

    reply = bob.send(SendRequest(to="alice", text="on it", reply_to=first.id))
    assert reply.thread_id == sent.thread_id
    (item,) = alice.read().items
    assert (item.message.id, item.message.sender, item.message.reply_to, item.message.thread_id) == (
        reply.message_id,
        "bob",
        first.id,
        sent.thread_id,
    )

    again = alice.send(
        SendRequest(to="bob", text="thanks", reply_to=reply.message_id)
    )  # a reply to a reply stays in the thread
    assert again.thread_id == sent.thread_id
    assert bob.read().items[0].message.reply_to == reply.message_id


def test_a_send_to_a_comma_list_reaches_each_recipient_once(alice, bob, carol, dave):
    sent = alice.send(SendRequest(to="bob, carol,BOB", text="standup in 5"))
    assert [o.address for o in sent.recipients] == ["bob", "carol"]
    assert all(o.state == "queued" for o in sent.recipients)
    for client in (bob, carol):
        assert ids(client.read()) == [sent.message_id]
    assert dave.read().items == []
    assert alice.read().items == []


def test_a_send_to_a_list_of_addresses_reaches_each_recipient_once(alice, bob, carol, dave):
    sent = alice.send(SendRequest(to=["bob", "carol,dave", "bob"], text="release is out"))
    assert [o.address for o in sent.recipients] == ["bob", "carol", "dave"]
    for client in (bob, carol, dave):
        (item,) = client.read().items
        assert item.message.id == sent.message_id
        assert item.message.recipients == ["bob", "carol", "dave"]


def test_a_channel_post_reaches_every_member_except_the_sender_exactly_once(alice, bob, carol, dave, team):
    sent = alice.send(SendRequest(to=team, text="deploy at noon"))
    assert sorted((o.agent, o.address, o.channel) for o in sent.recipients) == [
        ("bob", "#team", "team"),
        ("carol", "#team", "team"),
    ]
    for client in (bob, carol):
        (item,) = client.read().items
        assert (item.message.id, item.message.channel, item.message.recipients) == (sent.message_id, "team", ["#team"])
        assert client.read(after=0).items[0].message.id == sent.message_id  # and only that one
        assert len(everything(client)) == 1
    assert everything(alice) == []
    assert everything(dave) == []

    reply = bob.send(SendRequest(to=team, text="noted"))  # any member may post; the creator is a member
    assert sorted(o.agent for o in reply.recipients) == ["alice", "carol"]
    assert ids(alice.read()) == [reply.message_id]


@pytest.mark.parametrize("to", ["bob,#team", "#team,bob", "#team,bob,#team"])
def test_an_agent_addressed_directly_and_through_the_channel_gets_one_copy(alice, bob, carol, team, to):
    sent = alice.send(SendRequest(to=to, text="one copy each"))
    assert sorted(o.agent for o in sent.recipients) == ["bob", "carol"]
    assert everything(bob) == [sent.message_id]
    assert everything(carol) == [sent.message_id]


def test_posting_to_a_channel_you_did_not_join_raises_not_member_and_stores_nothing(db, alice, bob, dave, team):
    with writes_nothing(db), pytest.raises(NotMember) as raised:
        dave.send(SendRequest(to=f"bob,{team}", text="let me in"))
    assert raised.value.code == "not_member"
    assert everything(bob) == []


def test_a_member_who_left_no_longer_gets_the_channels_posts(alice, bob, carol, team):
    left = carol.leave_channel("team")
    assert (left.joined, left.members) == (False, 2)
    sent = alice.send(SendRequest(to=team, text="after carol left"))
    assert [o.agent for o in sent.recipients] == ["bob"]
    assert everything(carol) == []


# --- drain: read once ---------------------------------------------------------------------------


def test_drain_never_returns_a_message_twice(alice, bob):
    sent = [alice.send(SendRequest(to="bob", text=f"m{i}")).message_id for i in range(10)]
    assert ids(bob.read(peek=True)) == sent  # peeking marks nothing
    batches = [bob.read(limit=3) for _ in range(5)]
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
    first = bob.read(after=0, limit=2)
    assert (ids(first), first.cursor) == (sent[:2], 2)

    assert ids(bob.read()) == [sent[2]]  # another reader drains the rest in between
    sent += [alice.send(SendRequest(to="bob", text=f"m{i}")).message_id for i in range(3, 5)]

    resumed = bob.read(after=first.cursor)
    assert (ids(resumed), resumed.cursor) == (sent[2:], 5)  # read or not, nothing past the cursor is skipped
    assert [item.seq for item in resumed.items] == [3, 4, 5]
    tail = bob.read(after=resumed.cursor)
    assert (tail.items, tail.cursor) == ([], 5)
    assert bob.read().cursor == 5  # with nothing to give, the cursor is the mailbox's newest


@pytest.mark.parametrize("peek", [False, True])
def test_an_empty_reads_cursor_is_where_the_mailbox_stood_before_it_looked(service, alice, bob, monkeypatch, peek):
    # Mail that lands between the look and the answer must lie past the cursor, or a reader
    # resuming from it would never get that mail.
    look = service.store.peek if peek else service.store.claim
    landed: list[str] = []

    def look_then_mail_lands(*args, **kwargs):
        found = look(*args, **kwargs)
        if not landed:
            landed.append(alice.send(SendRequest(to="bob", text="just now")).message_id)
        return found

    monkeypatch.setattr(service.store, "peek" if peek else "claim", look_then_mail_lands)
    empty = bob.read(peek=peek)
    assert (empty.items, empty.cursor) == ([], 0)
    assert ids(bob.read(after=empty.cursor)) == landed


# --- waiting for mail -----------------------------------------------------------------------------


def test_read_with_wait_returns_as_soon_as_another_thread_sends(alice, bob):
    wait = 20.0
    reader, box = in_thread(lambda: bob.read(wait=wait))
    assert wait_until(lambda: "started" in box)
    sent = alice.send(SendRequest(to="bob", text="wake up"))
    reader.join(timeout=wait + 10)
    assert not reader.is_alive()
    assert "error" not in box, box.get("error")
    assert ids(box["result"]) == [sent.message_id]
    assert box["finished"] - box["started"] < wait  # woken, not timed out


def test_read_with_wait_returns_as_soon_as_another_process_sends(db, bob):
    wait = 20.0
    reader, box = in_thread(lambda: bob.read(wait=wait))
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
    result = bob.read(wait=0.3)
    assert result.items == []
    assert time.monotonic() - started >= 0.3
    assert (result.unread, result.cursor) == (0, 0)


# --- idempotent send --------------------------------------------------------------------------------


def test_an_idempotent_resend_returns_the_same_message_id_and_stores_no_copy(db, alice, bob):
    first = alice.send(SendRequest(to="bob", text="deploy v2", idempotency_key="deploy-v2"))
    assert first.duplicate is False
    with writes_nothing(db):
        again = alice.send(SendRequest(to="bob", text="deploy v2", idempotency_key="deploy-v2"))
    assert again.duplicate is True
    assert again.model_copy(update={"duplicate": False}) == first
    assert ids(bob.read()) == [first.message_id]
    assert (
        alice.send(SendRequest(to="bob", text="deploy v2", idempotency_key="deploy-v2")).message_id == first.message_id
    )  # after the read too
    assert everything(bob) == [first.message_id]


@pytest.mark.parametrize(
    "change",
    [{"text": "deploy v3"}, {"to": "carol"}, {"subject": "urgent"}, {"require_live": True}],
    ids=["body", "recipients", "subject", "require_live"],
)
def test_the_same_idempotency_key_for_a_different_message_raises_idempotency_conflict(db, alice, bob, carol, change):
    alice.send(SendRequest(to="bob", text="deploy v2", idempotency_key="deploy-v2"))
    request = {"to": "bob", "text": "deploy v2", **change}
    with writes_nothing(db), pytest.raises(IdempotencyConflict) as raised:
        alice.send(SendRequest(to=request.pop("to"), text=request.pop("text"), idempotency_key="deploy-v2", **request))
    assert raised.value.code == "idempotency_conflict"


def test_the_same_idempotency_key_from_another_sender_is_another_message(alice, bob, carol):
    a = alice.send(SendRequest(to="bob", text="hi", idempotency_key="k"))
    c = carol.send(SendRequest(to="bob", text="hi", idempotency_key="k"))
    assert a.message_id != c.message_id and not c.duplicate
    assert everything(bob) == [a.message_id, c.message_id]


def test_racing_sends_with_one_idempotency_key_store_one_message(alice, bob):
    start = threading.Barrier(6)

    def send() -> object:
        start.wait(timeout=30)
        return alice.send(SendRequest(to="bob", text="exactly once", idempotency_key="race"))

    racers = [in_thread(send) for _ in range(6)]
    for thread, _ in racers:
        thread.join(timeout=30)
    boxes = [box for _, box in racers]
    assert all("error" not in box for box in boxes), [box.get("error") for box in boxes]
    results = [box["result"] for box in boxes]
    assert len({r.message_id for r in results}) == 1
    assert sorted(r.duplicate for r in results) == [False] + [True] * 5
    assert everything(bob) == [results[0].message_id]


# --- order ------------------------------------------------------------------------------------------


def test_messages_from_one_sender_to_one_recipient_are_read_in_send_order(alice, bob, carol):
    sent: dict[str, list[str]] = {}

    def burst(client: LocalClient) -> None:
        sent[client.caller.agent] = [
            client.send(SendRequest(to="bob", text=f"{client.caller.agent} {i}")).message_id for i in range(40)
        ]

    senders = [in_thread(lambda c=c: burst(c)) for c in (alice, carol)]  # interleaved with each other
    for thread, box in senders:
        thread.join(timeout=30)
        assert "error" not in box, box.get("error")

    items = bob.read(limit=1000).items
    assert [i.seq for i in items] == list(range(1, 81))
    for sender in ("alice", "carol"):
        assert [i.message.id for i in items if i.message.sender == sender] == sent[sender]


# --- what a send answers: queued, delivered, new agent, require_live ------------------------------------


def test_a_send_to_an_existing_agent_with_no_session_is_queued(alice, bob):
    sent = alice.send(SendRequest(to="bob", text="when you are back"))
    bob_outcome = outcome(sent, "bob")
    assert (bob_outcome.state, bob_outcome.agent, bob_outcome.sessions, bob_outcome.new_agent) == (
        "queued",
        "bob",
        [],
        False,
    )
    assert bob_outcome.reason
    assert ids(bob.read()) == [sent.message_id]


def test_a_send_to_a_new_name_is_queued_and_creates_the_agent(service, alice):
    assert [a.name for a in alice.list_agents()] == ["alice"]
    sent = alice.send(SendRequest(to="newbie", text="welcome"))
    newbie = outcome(sent, "newbie")
    assert (newbie.state, newbie.new_agent, newbie.sessions) == ("queued", True, [])
    assert alice.describe_agent("newbie").name == "newbie"
    assert ids(alice.as_agent("newbie").read()) == [sent.message_id]


def test_require_live_with_a_live_session_answers_delivered_naming_the_session(alice, bob):
    session = bob.register_session(runtime="claude-code")  # this test process: alive
    assert session.live
    sent = alice.send(SendRequest(to="bob", text="are you there?", require_live=True))
    bob_outcome = outcome(sent, "bob")
    assert (bob_outcome.state, bob_outcome.sessions) == ("delivered", [f"bob@{MACHINE}#{os.getpid()}"])
    assert session.address == f"bob@{MACHINE}#{os.getpid()}"
    assert row(alice.message_status(sent.message_id), "bob").state == DeliveryState.delivered
    assert ids(bob.read()) == [sent.message_id]


def test_require_live_with_no_live_session_raises_and_stores_nothing(db, alice, bob):
    with writes_nothing(db), pytest.raises(NoLiveSession) as raised:
        alice.send(SendRequest(to="bob", text="urgent", require_live=True))
    assert raised.value.code == "no_live_session"
    assert everything(bob) == []


def test_require_live_to_a_new_name_raises_and_creates_no_agent(db, alice):
    with writes_nothing(db), pytest.raises(NoLiveSession) as raised:
        alice.send(SendRequest(to="newbie", text="urgent", require_live=True))
    assert raised.value.code == "no_live_session"
    assert [a.name for a in alice.list_agents()] == ["alice"]


def test_require_live_to_a_channel_with_one_member_not_live_raises_and_stores_nothing(db, alice, bob, carol, team):
    bob.register_session(runtime="claude-code")
    with writes_nothing(db), pytest.raises(NoLiveSession) as raised:
        alice.send(SendRequest(to=team, text="all hands", require_live=True))
    assert raised.value.code == "no_live_session"
    assert raised.value.details["recipients"] == ["carol"]
    assert everything(bob) == [] and everything(carol) == []


def test_require_live_to_a_large_channel_names_a_few_members_in_its_message_and_all_in_its_details(
    service, db, alice, team
):
    members = [f"member-{i}" for i in range(8)]
    for name in members:
        _agent(service, name).join_channel("team")
    with writes_nothing(db), pytest.raises(NoLiveSession) as raised:
        alice.send(SendRequest(to=team, text="all hands", require_live=True))
    assert "bob (in #team), carol (in #team), member-0 (in #team)" in raised.value.message
    assert "and 5 more;" in raised.value.message
    assert raised.value.details["recipients"] == ["bob", "carol", *members]


# --- unknown recipients ----------------------------------------------------------------------------


def test_a_send_with_an_address_that_names_nobody_fails_whole_naming_each_and_stores_nothing(
    db, alice, bob, carol, dave
):
    bob.register_session(runtime="claude-code")  # bob is known on this machine, as this process
    with writes_nothing(db), pytest.raises(UnknownRecipient) as raised:
        alice.send(SendRequest(to=["carol", "dave@nomachine", f"bob@{MACHINE}#99999999"], text="hello?"))
    assert raised.value.details["addresses"] == ["dave@nomachine", f"bob@{MACHINE}#99999999"]
    assert [r["address"] for r in raised.value.details["refused"]] == raised.value.details["addresses"]
    assert "dave" in raised.value.message and "99999999" in raised.value.message
    assert raised.value.message.count("Nothing was sent to anyone.") == 1
    assert everything(carol) == [] and everything(bob) == [] and everything(dave) == []


def test_a_send_with_refusals_of_several_kinds_fails_with_the_first_ones_code_and_lists_each(db, alice, carol, dave):
    dave.create_channel("closed")
    with writes_nothing(db), pytest.raises(UnknownChannel) as raised:
        alice.send(SendRequest(to=["carol", "#ghost", "#closed", "dave@nomachine"], text="hello?"))
    assert [(r["address"], r["code"]) for r in raised.value.details["refused"]] == [
        ("#ghost", "unknown_channel"),
        ("#closed", "not_member"),
        ("dave@nomachine", "unknown_recipient"),
    ]
    assert "no channel #ghost" in raised.value.message and "not a member of #closed" in raised.value.message
    assert everything(carol) == []


@pytest.mark.parametrize("to", ["#nochannel", "carol,#nochannel", "#nochannel,bob@nomachine"])
def test_a_send_to_a_channel_that_does_not_exist_says_so_and_stores_nothing(db, alice, bob, carol, to):
    with writes_nothing(db), pytest.raises(UnknownChannel) as raised:
        alice.send(SendRequest(to=to, text="anyone?"))
    assert raised.value.code == "unknown_channel"
    assert "no channel #nochannel" in raised.value.message and "channel create nochannel" in raised.value.message
    assert everything(bob) == [] and everything(carol) == []


@pytest.mark.parametrize(
    "to",
    ["bob@nomachine", f"bob@{MACHINE}#12345", f"bob@nomachine,bob@{MACHINE}#12345"],
)
def test_a_send_where_every_recipient_is_unknown_raises_unknown_recipient_and_stores_nothing(db, alice, bob, to):
    with writes_nothing(db), pytest.raises(UnknownRecipient) as raised:
        alice.send(SendRequest(to=to, text="anyone?"))
    assert raised.value.code == "unknown_recipient"
    assert everything(bob) == []


def test_a_recipient_deleted_while_the_message_is_sent_is_an_unknown_recipient(service, alice, bob, monkeypatch):
    submit = service.store.submit_message

    def deleted_meanwhile(message, deliveries, *rest):  # after the service found bob
        service.store.delete_agent(WS, "bob")
        return submit(message, deliveries, *rest)

    monkeypatch.setattr(service.store, "submit_message", deleted_meanwhile)
    with pytest.raises(UnknownRecipient) as raised:
        alice.send(SendRequest(to="bob", text="hi"))
    assert raised.value.code == "unknown_recipient"
    assert raised.value.message == "agent bob was deleted while this message was being sent; nothing was stored."
    assert raised.value.details == {"addresses": ["bob"]}
    assert service.store.get_agent(WS, "bob") is None  # not created again by the send


def test_a_channel_with_no_member_but_the_sender_is_an_unknown_recipient(db, alice):
    alice.create_channel("lonely")
    with writes_nothing(db), pytest.raises(UnknownRecipient):
        alice.send(SendRequest(to="#lonely", text="echo"))


# --- liveness --------------------------------------------------------------------------------------


def test_a_session_whose_process_has_exited_is_not_live(service, alice, bob):
    child = python("import sys; sys.stdin.read()", stdin=subprocess.PIPE)
    try:
        session = service.register_session(
            bob.caller, pid=child.pid, runtime="codex", proc_start=process_start_time(child.pid)
        )
        assert session.live
        assert outcome(alice.send(SendRequest(to="bob", text="while it runs")), "bob").state == "delivered"
    finally:
        child.stdin.close()
        child.wait(timeout=30)

    assert presence(bob.who(), "bob").live is False
    assert [s.live for s in presence(bob.who(), "bob").sessions] == [False]
    assert outcome(alice.send(SendRequest(to="bob", text="after it exited")), "bob").state == "queued"
    with pytest.raises(NoLiveSession):
        alice.send(SendRequest(to="bob", text="urgent", require_live=True))


def test_a_session_on_another_machine_goes_stale_after_the_liveness_window(alice, bob, clock):
    session = bob.register_session(runtime="codex", machine="farhost", pid=4242)
    assert session.live
    assert outcome(alice.send(SendRequest(to="bob", text="now")), "bob").sessions == ["bob@farhost#4242"]

    clock.advance(LIVENESS - 1)
    assert presence(alice.who(), "bob").live is True

    clock.advance(2)  # past the window with no report
    report = alice.who()
    assert presence(report, "bob").live is False
    assert [(m.name, m.up) for m in report.machines] == [("farhost", False)]
    assert outcome(alice.send(SendRequest(to="bob", text="later")), "bob").state == "queued"

    assert bob.heartbeat(session.id).live is True  # a report brings it back
    assert outcome(alice.send(SendRequest(to="bob", text="again")), "bob").state == "delivered"


def test_an_ended_session_is_not_live(alice, bob):
    session = bob.register_session(runtime="claude-code")
    ended = bob.end_session(session.id)
    assert (ended.id, ended.live) == (session.id, False)
    assert ended.ended_at is not None
    assert presence(alice.who(), "bob").live is False
    assert outcome(alice.send(SendRequest(to="bob", text="bye?")), "bob").state == "queued"


def test_registering_the_same_process_again_returns_the_same_session(bob, clock):
    first = bob.register_session(runtime="claude-code")
    clock.advance(5)
    again = bob.register_session(runtime="claude-code")
    assert again.id == first.id
    assert again.last_seen == clock.now


def test_a_session_named_with_this_machines_name_in_capitals_is_still_checked_by_process(bob):
    session = bob.register_session(runtime="claude-code", machine=MACHINE.upper())
    assert session.machine == MACHINE
    assert session.proc_start == process_start_time(os.getpid())


# --- who ------------------------------------------------------------------------------------------


def test_who_reports_agents_sessions_unread_counts_and_machines(alice, bob, carol, clock):
    carol.register_session(runtime="codex", machine="farhost", pid=7)
    clock.advance(LIVENESS + 10)  # farhost has not reported since
    bob.register_session(runtime="claude-code")
    alice.send(SendRequest(to="bob", text="one"))
    alice.send(SendRequest(to="bob", text="two"))
    alice.send(SendRequest(to="carol", text="three"))
    bob.read(limit=1)

    report = alice.who()
    assert (report.workspace, report.liveness_seconds) == (WS, LIVENESS)
    assert [a.name for a in report.agents] == ["alice", "bob", "carol"]
    assert [(a.live, a.unread, len(a.sessions)) for a in report.agents] == [(False, 0, 0), (True, 1, 1), (False, 1, 1)]
    (bob_session,) = presence(report, "bob").sessions
    assert (bob_session.live, bob_session.machine, bob_session.pid) == (True, MACHINE, os.getpid())
    (carol_session,) = presence(report, "carol").sessions
    assert (carol_session.live, carol_session.machine) == (False, "farhost")
    assert [(m.name, m.up) for m in report.machines] == [("farhost", False), (MACHINE, True)]


# --- message status -----------------------------------------------------------------------------------


def test_message_status_shows_each_recipients_states_and_times_as_they_happen(alice, bob, carol, clock):
    bob.register_session(runtime="claude-code")
    sent_at = clock.now
    sent = alice.send(SendRequest(to="bob,carol", text="status check", subject="s"))

    def status_rows() -> dict[str, tuple]:
        status = alice.message_status(sent.message_id)
        assert (status.message_id, status.sender, status.subject, status.thread_id, status.created_at) == (
            sent.message_id,
            "alice",
            "s",
            sent.thread_id,
            sent_at,
        )
        return {r.address: (r.state, r.queued_at, r.delivered_at, r.read_at, r.acked_at) for r in status.recipients}

    assert status_rows() == {
        "bob": (DeliveryState.delivered, sent_at, sent_at, None, None),
        "carol": (DeliveryState.queued, sent_at, None, None, None),
    }
    assert row(alice.message_status(sent.message_id), "bob").sessions == [f"bob@{MACHINE}#{os.getpid()}"]

    carol_read = clock.advance(10)
    carol.read()
    bob_read = clock.advance(10)
    bob.read()
    assert status_rows() == {
        "bob": (DeliveryState.read, sent_at, sent_at, bob_read, None),
        "carol": (DeliveryState.read, sent_at, carol_read, carol_read, None),
    }

    bob_acked = clock.advance(10)
    bob.ack([sent.message_id])
    carol_acked = clock.advance(10)
    carol.ack([sent.message_id])
    assert status_rows() == {
        "bob": (DeliveryState.acked, sent_at, sent_at, bob_read, bob_acked),
        "carol": (DeliveryState.acked, sent_at, carol_read, carol_read, carol_acked),
    }


def test_the_sender_sees_channel_recipients_under_the_address_it_used(alice, bob, carol, team):
    sent = alice.send(SendRequest(to=team, text="hi all"))
    status = alice.message_status(sent.message_id)
    assert sorted((r.address, r.agent, r.channel) for r in status.recipients) == [
        ("#team", "bob", "team"),
        ("#team", "carol", "team"),
    ]


def test_a_recipient_sees_only_its_own_status_row(alice, bob, carol):
    sent = alice.send(SendRequest(to="bob,carol", text="hi"))
    for client in (bob, carol):
        status = client.message_status(sent.message_id)
        assert [(r.agent, r.state) for r in status.recipients] == [(client.caller.agent, DeliveryState.queued)]


def test_a_third_agent_cannot_see_a_messages_status(alice, bob, dave):
    sent = alice.send(SendRequest(to="bob", text="private"))
    with pytest.raises(UnknownMessage) as raised:
        dave.message_status(sent.message_id)
    assert raised.value.code == "unknown_message"


# --- ack --------------------------------------------------------------------------------------------


def test_ack_takes_messages_out_of_the_inbox(alice, bob):
    first, second = (alice.send(SendRequest(to="bob", text=text)).message_id for text in ("one", "two"))
    assert [i.message.id for i in bob.inbox()] == [first, second]
    assert bob.ack([first, first]).acked == [first]
    assert [i.message.id for i in bob.inbox()] == [second]
    assert [i.message.id for i in bob.inbox(include_acked=True)] == [first, second]
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


# --- bad input: the right error, and nothing written ------------------------------------------------------


@dataclass
class World:
    alice: LocalClient
    bob: LocalClient
    carol: LocalClient
    dave: LocalClient  # in no channel
    to_bob: str  # a message from alice to bob
    bob_session: str


@pytest.fixture
def world(alice, bob, carol, dave, team) -> World:
    message_id = alice.send(SendRequest(to="bob", text="hello")).message_id
    session = bob.register_session(runtime="claude-code")
    return World(alice, bob, carol, dave, message_id, session.id)


def _case(label: str, call: Callable[[World], object], error: type[CallboardError], code: str) -> Any:
    return pytest.param(call, error, code, id=f"{code}: {label}")


BAD_INPUTS = [
    _case(
        "malformed address",
        lambda w: w.alice.send(SendRequest(to="not an address!", text="hi")),
        BadAddress,
        "bad_address",
    ),
    _case("empty address", lambda w: w.alice.send(SendRequest(to="", text="hi")), BadAddress, "bad_address"),
    _case("no recipients", lambda w: w.alice.send(SendRequest(to=[], text="hi")), BadAddress, "bad_address"),
    _case("stray comma", lambda w: w.alice.send(SendRequest(to="bob,,carol", text="hi")), BadAddress, "bad_address"),
    _case(
        "a2a address",
        lambda w: w.alice.send(SendRequest(to="a2a:ftp://x.test/agent", text="hi")),
        BadAddress,
        "bad_address",
    ),
    _case("agent name", lambda w: w.alice.create_agent("Bad Name!"), BadName, "bad_name"),
    _case("channel name", lambda w: w.alice.create_channel("no spaces"), BadName, "bad_name"),
    _case("describe name", lambda w: w.alice.describe_agent("-bob"), BadName, "bad_name"),
    _case("runtime name", lambda w: w.bob.register_session(runtime="Claude Code"), BadName, "bad_name"),
    _case(
        "machine name",
        lambda w: w.bob.register_session(runtime="codex", machine="bad host!", pid=5),
        BadName,
        "bad_name",
    ),
    _case("empty text", lambda w: w.alice.send(SendRequest(to="newbie", text="")), BadRequest, "bad_request"),
    _case("blank text", lambda w: w.alice.send(SendRequest(to="newbie", text="  \n ")), BadRequest, "bad_request"),
    _case("no content", lambda w: w.alice.send(SendRequest(to="newbie")), BadRequest, "bad_request"),
    _case(
        "part with two contents",
        lambda w: w.alice.send(SendRequest(to="newbie", parts=[{"text": "a", "url": "https://x.test"}])),
        BadRequest,
        "bad_request",
    ),
    _case(
        "part with no content",
        lambda w: w.alice.send(SendRequest(to="newbie", text="hi", parts=[{"filename": "a.txt"}])),
        BadRequest,
        "bad_request",
    ),
    _case(
        "part with unknown field",
        lambda w: w.alice.send(SendRequest(to="newbie", parts=[{"txt": "a"}])),
        BadRequest,
        "bad_request",
    ),
    _case(
        "empty idempotency key",
        lambda w: w.alice.send(SendRequest(to="newbie", text="hi", idempotency_key="")),
        BadRequest,
        "bad_request",
    ),
    _case("read limit 0", lambda w: w.bob.read(limit=0), BadRequest, "bad_request"),
    _case("read after -1", lambda w: w.bob.read(after=-1), BadRequest, "bad_request"),
    _case("read wait -1", lambda w: w.bob.read(wait=-1), BadRequest, "bad_request"),
    _case("inbox limit 0", lambda w: w.bob.inbox(limit=0), BadRequest, "bad_request"),
    _case("ack nothing", lambda w: w.bob.ack([]), BadRequest, "bad_request"),
    _case(
        "pid 0", lambda w: w.bob.register_session(runtime="codex", machine="farhost", pid=0), BadRequest, "bad_request"
    ),
    _case("empty skill", lambda w: w.alice.create_agent("helper", skills=[""]), BadRequest, "bad_request"),
    _case(
        "oversized body",
        lambda w: w.alice.send(SendRequest(to="newbie", text="x" * (256 * 1024))),
        TooLarge,
        "too_large",
    ),
    _case(
        "too many parts",
        lambda w: w.alice.send(SendRequest(to="newbie", parts=[{"text": "x"}] * 33)),
        TooLarge,
        "too_large",
    ),
    _case(
        "too long subject",
        lambda w: w.alice.send(SendRequest(to="newbie", text="hi", subject="s" * 257)),
        TooLarge,
        "too_large",
    ),
    _case(
        "too many recipients",
        lambda w: w.alice.send(SendRequest(to=[f"r{i}" for i in range(101)], text="hi")),
        TooLarge,
        "too_large",
    ),
    _case("too long description", lambda w: w.alice.create_agent("helper", "d" * 2001), TooLarge, "too_large"),
    _case(
        "too many skills",
        lambda w: w.alice.update_agent("bob", skills=[f"s{i}" for i in range(65)]),
        TooLarge,
        "too_large",
    ),
    # Values JSON cannot carry: stored, they came back as null, and the mailbox stopped reading.
    *(
        _case(
            label, lambda w, part=part: w.alice.send(SendRequest(to="newbie", parts=[part])), BadRequest, "bad_request"
        )
        for label, part in [
            ("NaN in a data part", {"data": {"x": float("nan")}}),
            ("Infinity in a data part", {"data": [float("inf")]}),
            ("1e400 as a data part", {"data": json.loads("1e400")}),
            ("NaN in a part's metadata", {"text": "t", "metadata": {"m": float("nan")}}),
            ("a data part JSON has no form for", {"data": {"when": object()}}),
        ]
    ),
    # Numbers and text past their bounds (bounds.py), refused before anything is stored.
    *(
        _case(
            f"pid {pid}",
            lambda w, pid=pid: w.bob.register_session(runtime="codex", machine="far", pid=pid),
            BadRequest,
            "bad_request",
        )
        for pid in (2**31, 2**63, 2**70)
    ),
    _case(
        "a process start time past 2**63-1",
        lambda w: w.bob.service.register_session(
            Caller(workspace=WS, agent="bob"), pid=5, runtime="codex", machine="far", proc_start=2**64
        ),
        BadRequest,
        "bad_request",
    ),
    _case(
        "too long terminal",
        lambda w: w.bob.register_session(runtime="codex", machine="far", pid=5, terminal="t" * 201),
        TooLarge,
        "too_large",
    ),
    _case(
        "terminal with a NUL",
        lambda w: w.bob.register_session(runtime="codex", machine="far", pid=5, terminal="tmux:\x00"),
        BadRequest,
        "bad_request",
    ),
    _case("too long delivery error", lambda w: w.bob.heartbeat(w.bob_session, "e" * 501), TooLarge, "too_large"),
    _case("read after past 2**63-1", lambda w: w.bob.read(after=2**63), BadRequest, "bad_request"),
    _case("ack of 1001 ids", lambda w: w.bob.ack([new_id() for _ in range(1001)]), TooLarge, "too_large"),
    _case(
        "subject with a NUL",
        lambda w: w.alice.send(SendRequest(to="newbie", text="hi", subject="a\x00b")),
        BadRequest,
        "bad_request",
    ),
    _case("too long skill", lambda w: w.alice.create_agent("helper", skills=["s" * 101]), TooLarge, "too_large"),
    _case("malformed id to ack", lambda w: w.bob.ack(["not-an-id"]), UnknownMessage, "unknown_message"),
    _case("unknown id to ack", lambda w: w.bob.ack([new_id()]), UnknownMessage, "unknown_message"),
    _case("malformed id for status", lambda w: w.alice.message_status("42"), UnknownMessage, "unknown_message"),
    _case("unknown id for status", lambda w: w.alice.message_status(new_id()), UnknownMessage, "unknown_message"),
    _case(
        "reply to a malformed id",
        lambda w: w.alice.send(SendRequest(to="bob", text="re", reply_to="nope")),
        UnknownMessage,
        "unknown_message",
    ),
    _case(
        "reply to an unknown id",
        lambda w: w.alice.send(SendRequest(to="bob", text="re", reply_to=new_id())),
        UnknownMessage,
        "unknown_message",
    ),
    _case(
        "reply to a message not yours",
        lambda w: w.carol.send(SendRequest(to="alice", text="re", reply_to=w.to_bob)),
        UnknownMessage,
        "unknown_message",
    ),
    _case(
        "malformed thread id",
        lambda w: w.alice.send(SendRequest(to="bob", text="hi", thread_id="t-1")),
        UnknownMessage,
        "unknown_message",
    ),
    _case("describe", lambda w: w.alice.describe_agent("ghost"), UnknownAgent, "unknown_agent"),
    _case("update", lambda w: w.alice.update_agent("ghost", "boo"), UnknownAgent, "unknown_agent"),
    _case("delete", lambda w: w.alice.delete_agent("ghost"), UnknownAgent, "unknown_agent"),
    _case("join", lambda w: w.alice.join_channel("nochan"), UnknownChannel, "unknown_channel"),
    _case("leave", lambda w: w.alice.leave_channel("nochan"), UnknownChannel, "unknown_channel"),
    _case("members", lambda w: w.alice.channel_members("#nochan"), UnknownChannel, "unknown_channel"),
    _case("agent", lambda w: w.alice.create_agent("bob", "another bob"), AlreadyExists, "already_exists"),
    _case("channel", lambda w: w.bob.create_channel("team", "mine now"), AlreadyExists, "already_exists"),
    _case("heartbeat unknown", lambda w: w.bob.heartbeat(new_id()), UnknownSession, "unknown_session"),
    _case("end unknown", lambda w: w.bob.end_session(new_id()), UnknownSession, "unknown_session"),
    _case("heartbeat another agent's", lambda w: w.alice.heartbeat(w.bob_session), UnknownSession, "unknown_session"),
    _case("end another agent's", lambda w: w.alice.end_session(w.bob_session), UnknownSession, "unknown_session"),
    _case("leave a channel not joined", lambda w: w.dave.leave_channel("team"), NotMember, "not_member"),
    _case(
        "post to a channel not joined",
        lambda w: w.dave.send(SendRequest(to="#team", text="hi")),
        NotMember,
        "not_member",
    ),
    _case(
        "post to no channel",
        lambda w: w.alice.send(SendRequest(to="#nochannel", text="hi")),
        UnknownChannel,
        "unknown_channel",
    ),
    _case(
        "one of two unknown",
        lambda w: w.alice.send(SendRequest(to="bob,carol@nomachine", text="hi")),
        UnknownRecipient,
        "unknown_recipient",
    ),
]


@pytest.mark.parametrize("call, error, code", BAD_INPUTS)
def test_bad_input_raises_its_error_with_its_code_and_writes_nothing(db, world, call, error, code):
    with writes_nothing(db), pytest.raises(error) as raised:
        call(world)
    assert raised.value.code == code
    assert raised.value.message


def test_another_agent_cannot_take_over_a_live_process_session(alice, bob):
    session = bob.register_session(runtime="claude-code")  # this test process: alive
    with pytest.raises(AlreadyExists, match="live session of bob"):
        alice.register_session(runtime="claude-code")
    assert bob.heartbeat(session.id).live


@pytest.mark.parametrize(
    "machine, proc_start",
    [
        (MACHINE, 1),  # this machine: bob's process runs, whatever start time the claim gives
        ("laptop", 222),  # another machine: bob's session reported within the window
    ],
)
def test_a_claim_over_another_agents_live_session_is_refused_whatever_start_time_it_gives(
    service, db, alice, bob, machine, proc_start
):
    start = process_start_time(os.getpid()) if machine == MACHINE else 111
    bobs = service.register_session(
        Caller(workspace=WS, agent="bob"), pid=os.getpid(), runtime="script", machine=machine, proc_start=start
    )
    with writes_nothing(db), pytest.raises(AlreadyExists) as refused:
        service.register_session(
            Caller(workspace=WS, agent="alice"),
            pid=os.getpid(),
            runtime="script",
            machine=machine,
            proc_start=proc_start,
        )
    assert "live session of bob" in refused.value.message and "register" in refused.value.message
    (listed,) = presence(bob.who(), "bob").sessions
    assert (listed.id, listed.live, listed.ended_at) == (bobs.id, True, None)


def test_another_agents_session_past_the_window_or_ended_may_be_taken_over(service, clock, alice, bob):
    bob_caller, alice_caller = Caller(workspace=WS, agent="bob"), Caller(workspace=WS, agent="alice")
    quiet = service.register_session(bob_caller, pid=4242, runtime="script", machine="laptop", proc_start=111)
    clock.advance(LIVENESS + 1)  # bob's process stopped reporting: its pid may have been handed out again
    taken = service.register_session(alice_caller, pid=4242, runtime="script", machine="laptop", proc_start=222)
    assert taken.agent == "alice" and taken.live
    assert service.store.get_session(WS, quiet.id).ended_at is not None
    ended = service.register_session(bob_caller, pid=5151, runtime="script", machine="laptop", proc_start=333)
    service.end_session(bob_caller, ended.id)
    assert service.register_session(alice_caller, pid=5151, runtime="script", machine="laptop").live


def test_closing_the_events_ends_a_waiting_read_with_nothing_instead_of_waiting_out_its_time(service, bob):
    bob.who()
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(bob.read, wait=60)
        service.events.close()  # a stopping hub does this: before or during the wait, the read ends
        assert waiting.result(timeout=10).items == []
    assert service.events.closed


def test_a_name_close_to_an_existing_agent_is_met_with_a_guess_whatever_face_sends(alice, bob):
    bob.who()
    reason = outcome(alice.send(SendRequest(to="bobb", text="typo")), "bobb").reason
    assert reason is not None and "was created" in reason and "Did you mean 'bob'?" in reason
    with pytest.raises(UnknownRecipient) as raised:
        alice.send(SendRequest(to="bobx@nowhere#1", text="x"))
    assert "Did you mean 'bob' or 'bobb'?" in raised.value.message
    known = outcome(alice.send(SendRequest(to="bob", text="right")), "bob").reason
    assert known is not None and "Did you mean" not in known  # a known name gets no guess
