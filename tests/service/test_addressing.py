"""Reaching the session meant: ``name`` → the agent's newest live session, ``name@machine`` → its
newest live session there, ``name@machine#pid`` → exactly that session; what a session's reads
see; the sender's full address on every message; and ``reach``, which says plainly why an
address cannot be reached (unknown agent, no live session, machine down, delivery path broken).

Sessions here report from other machines (``m1``, ``m2``): their liveness is the window alone,
moved by the test's clock, never a process check."""

from __future__ import annotations

import pytest

from callboard.client.local import LocalClient
from callboard.errors import NoLiveSession, UnknownSession
from callboard.model import Caller, Session, unserved_runtime
from callboard.requests import ReadQuery, SendRequest, SessionRequest
from callboard.service.door import Service
from tests.support.answers import everything, outcome, row
from tests.support.service_setup import LIVENESS, WS, Clock
from tests.support.store_rows import writes_nothing


def pane(service: Service, clock: Clock, agent: str, machine: str, pid: int, **extra: object) -> Session:
    """A session of ``agent`` on another machine, registered a second after the previous one."""
    clock.advance(1)
    request = SessionRequest(pid=pid, runtime="script", machine=machine, **extra)
    return service.register_session(Caller(workspace=WS, agent=agent), request)


def reader(service: Service, session: Session) -> LocalClient:
    """The agent's client acting in ``session`` (as its process's commands do)."""
    return LocalClient(service, Caller(workspace=WS, agent=session.agent, session_id=session.id))


def read_ids(client: LocalClient) -> list[str]:
    return [item.message.id for item in client.read(ReadQuery(peek=True, after=0)).items]


# --- where each address form goes --------------------------------------------------------------


def test_a_name_is_pushed_to_the_agents_newest_live_session(service, clock, alice, bob):
    pane(service, clock, "bob", "m1", 100)
    newest = pane(service, clock, "bob", "m2", 200)
    sent = outcome(alice.send(SendRequest(to="bob", text="hi")), "bob")
    assert (sent.state, sent.session) == ("delivered", newest.address)
    assert sorted(sent.sessions) == ["bob@m1#100", "bob@m2#200"]  # both can read the mailbox


def test_a_session_a_senders_push_registered_is_aimed_at_only_when_it_is_the_only_live_one(service, clock, alice, bob):
    """One a push registered reports only when pushed into: mail aimed at it would wait there,
    hidden from the agent's own sessions."""
    kept = pane(service, clock, "bob", "m1", 100)
    clock.advance(1)
    pushed = service.register_session(
        Caller(workspace=WS, agent="bob"), SessionRequest(pid=200, runtime=unserved_runtime("some-cli"), machine="m1")
    )
    assert (
        outcome(alice.send(SendRequest(to="bob", text="hi")), "bob").session == kept.address
    )  # newer, but not kept by bob's client
    service.end_session(Caller(workspace=WS, agent="bob"), kept.id)
    assert (
        outcome(alice.send(SendRequest(to="bob", text="again")), "bob").session == pushed.address
    )  # the only live one


def test_name_at_machine_is_pushed_to_the_newest_live_session_on_that_machine(service, clock, alice, bob):
    older_m1 = pane(service, clock, "bob", "m1", 100)
    newer_m1 = pane(service, clock, "bob", "m1", 101)
    pane(service, clock, "bob", "m2", 200)
    assert outcome(alice.send(SendRequest(to="bob@m1", text="hi")), "bob@m1").session == newer_m1.address
    service.end_session(Caller(workspace=WS, agent="bob"), newer_m1.id)
    assert outcome(alice.send(SendRequest(to="bob@m1", text="again")), "bob@m1").session == older_m1.address


def test_each_pane_of_an_agent_is_addressable_exactly(service, clock, alice, bob):
    first = pane(service, clock, "bob", "m1", 100)
    second = pane(service, clock, "bob", "m1", 101)
    to_first = alice.send(SendRequest(to="bob@m1#100", text="for the first pane"))
    to_second = alice.send(SendRequest(to="bob@m1#101", text="for the second pane"))
    assert outcome(to_first, "bob@m1#100").session == first.address
    assert outcome(to_second, "bob@m1#101").session == second.address
    # Each pane's reads see its own mail, not the other live pane's; the mailbox holds both.
    assert read_ids(reader(service, first)) == [to_first.message_id]
    assert read_ids(reader(service, second)) == [to_second.message_id]
    assert everything(bob) == [to_first.message_id, to_second.message_id]


def test_a_stale_session_never_shadows_a_live_one(service, clock, alice, bob):
    live = pane(service, clock, "bob", "m1", 100)
    stale = pane(service, clock, "bob", "m1", 101)  # the newest, but it stops reporting
    clock.advance(LIVENESS * 0.75)
    service.directory.heartbeat(Caller(workspace=WS, agent="bob"), live.id)
    clock.advance(LIVENESS * 0.5)  # past the window for the stale one only
    assert outcome(alice.send(SendRequest(to="bob", text="hi")), "bob").session == live.address
    assert outcome(alice.send(SendRequest(to="bob@m1", text="hi")), "bob@m1").session == live.address
    assert alice.reach(stale.address).state == "no_live_session"


def test_a_dead_exact_session_is_refused_and_nothing_is_stored(service, clock, db, alice, bob):
    gone = pane(service, clock, "bob", "m1", 100)
    pane(service, clock, "bob", "m2", 200)
    service.end_session(Caller(workspace=WS, agent="bob"), gone.id)
    with writes_nothing(db), pytest.raises(NoLiveSession) as refused:
        alice.send(SendRequest(to=["carol", "bob@m1#100"], text="are you there?"))
    assert "Session bob@m1#100 is not live: ended" in refused.value.message
    assert "Nothing was sent" in refused.value.message
    assert refused.value.details["reach"][0]["state"] == "no_live_session"


def test_a_machine_that_stopped_reporting_is_down_and_named_with_when(service, clock, alice, bob):
    pane(service, clock, "bob", "m1", 100)
    pane(service, clock, "bob", "m2", 200)
    clock.advance(LIVENESS * 0.75)
    service.register_session(
        Caller(workspace=WS, agent="carol"), SessionRequest(pid=300, runtime="script", machine="m2")
    )
    clock.advance(LIVENESS * 0.5)  # m1's only session is past the window; m2 reported since
    with pytest.raises(NoLiveSession) as refused:
        alice.send(SendRequest(to="bob@m1", text="hi"))
    reach = refused.value.details["reach"][0]
    assert reach["state"] == "machine_down" and reach["machine"] == "m1"
    assert "machine m1 is down" in refused.value.message and "since" in refused.value.message
    assert alice.reach("bob@m2").state == "no_live_session"  # m2 is up; bob's session there is stale


def test_a_name_with_no_live_session_is_queued_in_its_mailbox(service, clock, alice, bob):
    gone = pane(service, clock, "bob", "m1", 100)
    service.end_session(Caller(workspace=WS, agent="bob"), gone.id)
    sent = outcome(alice.send(SendRequest(to="bob", text="later")), "bob")
    assert (sent.state, sent.session) == ("queued", None)


def test_a_recycled_pid_is_a_new_session_that_never_inherits_the_dead_ones(service, clock, alice, bob):
    first = pane(service, clock, "bob", "m1", 4242, proc_start=1000)
    again = pane(service, clock, "bob", "m1", 4242, proc_start=2000)  # the system handed the pid out again
    assert again.id != first.id and again.started_at > first.started_at
    assert service.store.sessions.get_session(WS, first.id).ended_at is not None  # the dead one ended for good
    (listed,) = next(a for a in bob.who().agents if a.name == "bob").sessions
    assert (listed.id, listed.live) == (again.id, True)
    assert outcome(alice.send(SendRequest(to="bob@m1#4242", text="hi")), "bob@m1#4242").session == again.address


# --- what a session reads -------------------------------------------------------------------------


def test_mail_pushed_to_a_pane_that_died_becomes_any_panes(service, clock, alice, bob):
    first = pane(service, clock, "bob", "m1", 100)
    second = pane(service, clock, "bob", "m1", 101)
    sent = alice.send(SendRequest(to="bob@m1#100", text="for the first pane"))
    assert read_ids(reader(service, second)) == []
    service.end_session(Caller(workspace=WS, agent="bob"), first.id)
    assert read_ids(reader(service, second)) == [sent.message_id]


def test_a_sessions_unread_count_leaves_out_another_live_panes_mail(service, clock, alice, bob):
    first = pane(service, clock, "bob", "m1", 100)
    second = pane(service, clock, "bob", "m1", 101)
    alice.send(SendRequest(to="bob@m1#100", text="one"))
    alice.send(SendRequest(to="bob", text="two"))  # pushed to the newest: the second pane
    assert reader(service, first).unread_count() == 1
    assert reader(service, second).unread_count() == 1
    assert bob.unread_count() == 2


# --- the sender's address ----------------------------------------------------------------------


def test_every_message_carries_the_sending_sessions_full_address(service, clock, alice, bob):
    mine = pane(service, clock, "alice", "m1", 77, terminal="tmux:%2")
    reader_of_bob = bob
    sent = reader(service, mine).send(SendRequest(to="bob", text="from my pane"))
    (item,) = reader_of_bob.read().items
    assert item.message.id == sent.message_id
    assert (item.message.sender_address, item.message.sender_terminal) == ("alice@m1#77", "tmux:%2")
    assert item.message.sender_session == mine.id
    # Answering that exact session reaches it.
    answer = bob.send(SendRequest(to=item.message.sender_address, text="answer"))
    assert outcome(answer, "alice@m1#77").session == mine.address


def test_a_command_finds_its_session_by_its_process_lineage(service, clock, alice):
    mine = pane(service, clock, "alice", "m1", 4321, proc_start=55)
    caller = Caller(workspace=WS, agent="alice")
    found = service.directory.in_session(caller, machine="m1", lineage=[(9999, 1), (4321, 55), (1, None)])
    assert found.session_id == mine.id
    assert (
        service.directory.in_session(caller, machine="m1", lineage=[(4321, 56)]).session_id is None
    )  # another process
    assert (
        service.directory.in_session(caller, machine="m2", lineage=[(4321, 55)]).session_id is None
    )  # another machine
    with pytest.raises(UnknownSession):
        service.directory.in_session(Caller(workspace=WS, agent="bob"), session_id=mine.id)  # alice's, not bob's


# --- reach: plainly why not ------------------------------------------------------------------------


def test_reach_tells_each_reason_apart(service, clock, alice, bob, carol):
    assert alice.reach("nobody").state == "unknown_agent"
    assert alice.reach("carol").state == "no_live_session"
    assert alice.reach("bob@m9").state == "unknown_address"
    session = pane(service, clock, "bob", "m1", 100)
    assert alice.reach("bob").state == "live"
    service.directory.heartbeat(Caller(workspace=WS, agent="bob"), session.id, "its messaging socket failed (refused)")
    broken = alice.reach("bob@m1#100")
    assert broken.state == "path_broken" and "its messaging socket failed (refused)" in broken.reason
    service.directory.heartbeat(Caller(workspace=WS, agent="bob"), session.id)  # it works again
    assert alice.reach("bob@m1#100").state == "live"
    clock.advance(LIVENESS + 1)
    down = alice.reach("bob")
    assert down.state == "machine_down" and down.machine_last_seen is not None


def test_status_says_why_mail_waits(service, clock, alice, bob, carol):
    pane(service, clock, "bob", "m1", 100)
    sent = alice.send(SendRequest(to="bob,carol", text="status?"))
    clock.advance(LIVENESS + 1)
    status = alice.message_status(sent.message_id)
    assert row(status, "bob").reach.state == "machine_down"
    assert row(status, "carol").reach.state == "no_live_session"
    carol.read()
    assert row(alice.message_status(sent.message_id), "carol").reach is None  # read: nothing to explain
