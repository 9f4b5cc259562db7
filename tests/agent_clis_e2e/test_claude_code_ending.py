"""When a real Claude Code session ends, its ``callboard mcp`` is gone within moments (well
inside Claude Code's grace before it kills a server) and the agent session it kept has an end
time. Claude Code (the current version) runs headless with stream-json input against the local
mock model, with ``callboard mcp`` as alice's stdio server; the session ends as a user's does
when its input ends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from callboard.store.sqlite.store import SQLiteStore
from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, Machine
from tests.support.live_claude_code import start_session
from tests.support.mock_model import MockModel
from tests.support.processes import process_gone
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]

ENDS_WITHIN = 5.0  # from Claude Code's exit to our server's: it must not wait for a SIGTERM


def test_when_the_claude_code_session_ends_its_server_exits_and_the_session_has_an_end_time(
    claude_code_current: Path, machine: Machine, socket_tmp: Path
):
    with MockModel(tool_input=None) as model:
        session = start_session(claude_code_current, machine, model, socket_tmp)
        (server,) = wait_until(lambda: machine.processes("callboard mcp"), what="our server's process")
        assert session.process.stdin is not None
        session.process.stdin.close()  # the user is done: Claude Code ends, closing its servers
        session.process.wait(timeout=60)
        assert wait_until(lambda: process_gone(server), timeout=ENDS_WITHIN, what="the server to exit")
        session.close()  # nothing else it started is left either

    store = SQLiteStore(machine.callboard_home / "callboard.db")
    try:
        sessions = store.sessions.list_sessions("default", "alice", include_ended=True)
    finally:
        store.close()
    assert [(s.pid, s.ended_at is not None) for s in sessions] == [(session.pid, True)]
