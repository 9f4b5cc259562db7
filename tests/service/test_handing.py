"""The service's rule for handed mail (``handing``), on every store: which path hands and which
surfaces, what confirms, and how mail a session held comes back when the session is gone."""

from __future__ import annotations

import pytest

from callboard.client.local import LocalClient
from callboard.errors import BadRequest
from callboard.model import Caller, ReadResult
from callboard.requests import SendRequest, SurfaceQuery
from callboard.service.door import Service
from tests.support.answers import row
from tests.support.service_setup import WS
from tests.support.threads import in_thread
from tests.support.waiting import DEADLINE, scaled, wait_until


def in_session(service: Service, agent: str, pid: int) -> tuple[LocalClient, str]:
    """A client of ``agent`` acting in a new session on another machine (its pid is not checked here)."""
    plain = LocalClient(service, Caller(workspace=WS, agent=agent))
    session = plain.register_session(runtime="claude-code", machine="farhost", pid=pid)
    return LocalClient(service, Caller(workspace=WS, agent=agent, session_id=session.id)), session.address


def test_socket_and_waiter_hand_hooks_surface(service, alice, bob):
    pane, address = in_session(service, "bob", 4242)
    first = alice.send(SendRequest(to="bob", text="one"))
    assert [i.state for i in pane.surface(SurfaceQuery(via="socket")).items] == ["handed"]
    status = row(alice.message_status(first.message_id), "bob")
    assert (status.state, status.handed_to, status.via) == ("handed", address, "socket")
    assert [(e.event, e.session) for e in status.history][-1] == ("handed", address)
    second = alice.send(SendRequest(to="bob", text="two"))
    assert [i.state for i in pane.surface(SurfaceQuery(via="hook")).items] == ["surfaced"]
    assert row(alice.message_status(second.message_id), "bob").state == "surfaced"
    third = alice.send(SendRequest(to="bob", text="three"))
    assert [i.state for i in pane.surface(SurfaceQuery(via="waiter")).items] == ["handed"]
    assert pane.confirm_surfaced([first.message_id, third.message_id]).marked == [first.message_id, third.message_id]
    done = row(alice.message_status(third.message_id), "bob")
    assert done.state == "surfaced" and done.handed_to is None
    assert [e.event for e in done.history] == ["queued", "delivered", "handed", "surfaced"]
    assert done.history[-1].detail == "transcript"


def test_mail_handed_to_a_session_that_ends_returns_once(service, alice, bob):
    pane, address = in_session(service, "bob", 4242)
    sent = alice.send(SendRequest(to="bob", text="hello"))
    pane.surface(SurfaceQuery(via="socket"))
    pane.end_session(pane.caller.session_id or "")
    status = row(alice.message_status(sent.message_id), "bob")
    assert (status.state, status.handed_to) == ("queued", None)  # no live session of bob is left
    returned = status.history[-1]
    assert (returned.event, returned.session) == ("returned", address) and "ended" in (returned.detail or "")
    nxt, _ = in_session(service, "bob", 4343)
    assert [i.message.id for i in nxt.surface(SurfaceQuery(via="socket")).items] == [sent.message_id]
    assert nxt.surface(SurfaceQuery(via="socket")).items == []  # once
    assert [e.event for e in row(alice.message_status(sent.message_id), "bob").history][-3:] == [
        "handed",
        "returned",
        "handed",
    ]


def test_mail_a_session_returns_wakes_the_agents_waiting_session_as_new_mail_does(service, alice, bob):
    """A wake's look (the waiter's, a runner's, the socket injector's: what waits to be surfaced,
    with a wait) is woken by mail another session gives back, and finds it."""
    gone, _ = in_session(service, "bob", 4242)
    sent = alice.send(SendRequest(to="bob", text="hello"))
    assert [i.state for i in gone.surface(SurfaceQuery(via="socket")).items] == ["handed"]
    waiting, _ = in_session(service, "bob", 5151)  # the agent's next session: nothing waits for it yet
    thread, outcome = in_thread(lambda: waiting.surface(SurfaceQuery(via="waiter", peek=True, wait=scaled(DEADLINE))))
    wait_until(lambda: service.subscriptions.waiting(WS, "bob") == 1, what="the look to wait")
    gone.end_session(gone.caller.session_id or "")
    thread.join(scaled(DEADLINE))
    found = outcome["result"]
    assert isinstance(found, ReadResult) and [i.message.id for i in found.items] == [sent.message_id], outcome
    assert row(alice.message_status(sent.message_id), "bob").state == "delivered"  # found, not yet taken


def test_mail_returns_delivered_when_another_live_session_can_take_it(service, alice, bob):
    pane, _ = in_session(service, "bob", 4242)
    in_session(service, "bob", 5151)
    sent = alice.send(SendRequest(to="bob", text="hello"))
    pane.surface(SurfaceQuery(via="waiter"))
    pane.end_session(pane.caller.session_id or "")
    assert row(alice.message_status(sent.message_id), "bob").state == "delivered"


def test_a_refused_receipt_returns_the_mail_and_a_held_one_is_recorded(service, alice, bob):
    pane, _ = in_session(service, "bob", 4242)
    held, refused = alice.send(SendRequest(to="bob", text="one")), alice.send(SendRequest(to="bob", text="two"))
    pane.surface(SurfaceQuery(via="socket"))
    pane.record_receipt([held.message_id], "held", "waiting for the user's approval")
    pane.record_receipt([refused.message_id], "expired", "the session refuses peer messages")
    first = row(alice.message_status(held.message_id), "bob")
    assert first.state == "handed" and first.history[-1].event == "held"
    second = row(alice.message_status(refused.message_id), "bob")
    assert second.state == "delivered"  # the session lives on: its hooks can take it
    assert [e.event for e in second.history][-2:] == ["expired", "returned"]


def test_bad_evidence_and_receipts_are_refused(service, alice, bob):
    pane, _ = in_session(service, "bob", 4242)
    sent = alice.send(SendRequest(to="bob", text="one"))
    with pytest.raises(BadRequest):
        pane.confirm_surfaced([sent.message_id], "rumour")
    with pytest.raises(BadRequest):
        pane.record_receipt([sent.message_id], "lost")
    with pytest.raises(BadRequest):
        pane.confirm_surfaced([])


def test_a_runner_hands_and_its_turn_surfaces(service, alice, bob):
    runner, address = in_session(service, "bob", 5151)
    sent = alice.send(SendRequest(to="bob", text="work for the runner"))
    assert [i.state for i in runner.surface(SurfaceQuery(via="runner")).items] == ["handed"]
    status = row(alice.message_status(sent.message_id), "bob")
    assert (status.state, status.handed_to, status.via) == ("handed", address, "runner")
    assert runner.confirm_surfaced([sent.message_id], evidence="turn").marked == [sent.message_id]
    done = row(alice.message_status(sent.message_id), "bob")
    assert (done.state, done.via) == ("surfaced", "runner")
    assert done.history[-1].detail == "turn"


def test_a_runners_peek_takes_nothing(service, alice, bob):
    runner, _ = in_session(service, "bob", 5252)
    sent = alice.send(SendRequest(to="bob", text="look only"))
    assert [i.message.id for i in runner.surface(SurfaceQuery(via="runner", peek=True)).items] == [sent.message_id]
    assert row(alice.message_status(sent.message_id), "bob").state == "delivered"
    assert [i.message.id for i in runner.surface(SurfaceQuery(via="runner")).items] == [sent.message_id]
