"""Who the caller is (``whoami``) and the sessions the directory registers: a process registered
once, and never taken over from another agent while that agent's session is live."""

from __future__ import annotations

import os

import pytest

from callboard.errors import (
    AlreadyExists,
)
from callboard.model import (
    Caller,
)
from callboard.procs import process_start_time
from callboard.requests import SessionRequest
from tests.support.answers import presence
from tests.support.service_setup import LIVENESS, MACHINE, WS
from tests.support.store_rows import writes_nothing


def test_whoami_says_who_where_and_in_which_session_from_the_service(service, db, bob):
    me = service.whoami(Caller(workspace=WS, agent="bob"), "given")
    assert (me.workspace, me.agent, me.source, me.machine, me.session) == (WS, "bob", "given", MACHINE, None)
    assert me.store == service.store.location and me.liveness_seconds == LIVENESS
    session = bob.register_session(runtime="claude-code")
    in_session = Caller(workspace=WS, agent="bob", session_id=session.id)
    assert service.whoami(in_session, "bob token", "https://hub.example").session == session.address
    assert service.whoami(in_session, "bob token", "https://hub.example").store == "https://hub.example"
    assert bob.whoami() == service.whoami(bob.caller, bob.identity_source)  # the local client's is the service's


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
        Caller(workspace=WS, agent="bob"),
        SessionRequest(pid=os.getpid(), runtime="script", machine=machine, proc_start=start),
    )
    with writes_nothing(db), pytest.raises(AlreadyExists) as refused:
        service.register_session(
            Caller(workspace=WS, agent="alice"),
            SessionRequest(pid=os.getpid(), runtime="script", machine=machine, proc_start=proc_start),
        )
    assert "live session of bob" in refused.value.message and "register" in refused.value.message
    (listed,) = presence(bob.who(), "bob").sessions
    assert (listed.id, listed.live, listed.ended_at) == (bobs.id, True, None)


def test_another_agents_session_past_the_window_or_ended_may_be_taken_over(service, clock, alice, bob):
    bob_caller, alice_caller = Caller(workspace=WS, agent="bob"), Caller(workspace=WS, agent="alice")
    quiet = service.register_session(
        bob_caller, SessionRequest(pid=4242, runtime="script", machine="laptop", proc_start=111)
    )
    clock.advance(LIVENESS + 1)  # bob's process stopped reporting: its pid may have been handed out again
    taken = service.register_session(
        alice_caller, SessionRequest(pid=4242, runtime="script", machine="laptop", proc_start=222)
    )
    assert taken.agent == "alice" and taken.live
    assert service.store.sessions.get_session(WS, quiet.id).ended_at is not None
    ended = service.register_session(
        bob_caller, SessionRequest(pid=5151, runtime="script", machine="laptop", proc_start=333)
    )
    service.end_session(bob_caller, ended.id)
    assert service.register_session(alice_caller, SessionRequest(pid=5151, runtime="script", machine="laptop")).live
