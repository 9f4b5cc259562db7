"""``who``: every agent with its sessions and unread count, and every machine, up or down."""

from __future__ import annotations

import os

from callboard.requests import ReadQuery, SendRequest
from tests.support.answers import presence
from tests.support.service_setup import LIVENESS, MACHINE, WS

# --- who ------------------------------------------------------------------------------------------


def test_who_reports_agents_sessions_unread_counts_and_machines(alice, bob, carol, clock):
    carol.register_session(runtime="codex", machine="farhost", pid=7)
    clock.advance(LIVENESS + 10)  # farhost has not reported since
    bob.register_session(runtime="claude-code")
    alice.send(SendRequest(to="bob", text="one"))
    alice.send(SendRequest(to="bob", text="two"))
    alice.send(SendRequest(to="carol", text="three"))
    bob.read(ReadQuery(limit=1))

    report = alice.who()
    assert (report.workspace, report.liveness_seconds) == (WS, LIVENESS)
    assert [a.name for a in report.agents] == ["alice", "bob", "carol"]
    assert [(a.live, a.unread, len(a.sessions)) for a in report.agents] == [(False, 0, 0), (True, 1, 1), (False, 1, 1)]
    (bob_session,) = presence(report, "bob").sessions
    assert (bob_session.live, bob_session.machine, bob_session.pid) == (True, MACHINE, os.getpid())
    (carol_session,) = presence(report, "carol").sessions
    assert (carol_session.live, carol_session.machine) == (False, "farhost")
    assert [(m.name, m.up) for m in report.machines] == [("farhost", False), (MACHINE, True)]
