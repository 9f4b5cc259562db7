"""When a session counts as live: its process on this machine, the liveness window for another
machine, ended, or registered again by the same process."""

from __future__ import annotations

import os
import subprocess

import pytest

from callboard.errors import (
    NoLiveSession,
)
from callboard.procs import process_start_time
from callboard.requests import SendRequest, SessionRequest
from tests.support.agent_process import python
from tests.support.answers import outcome, presence
from tests.support.service_setup import LIVENESS, MACHINE

# --- liveness --------------------------------------------------------------------------------------


def test_a_session_whose_process_has_exited_is_not_live(service, alice, bob):
    child = python("import sys; sys.stdin.read()", stdin=subprocess.PIPE)
    try:
        session = service.register_session(
            bob.caller, SessionRequest(pid=child.pid, runtime="codex", proc_start=process_start_time(child.pid))
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
