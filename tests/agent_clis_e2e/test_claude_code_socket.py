"""Live delivery into a real Claude Code session through its messaging socket.

Claude Code (the current version, installed from npm) runs headless with stream-json input and
its stdin left open, as a long-lived session does, against a local mock model, with
``callboard mcp`` as alice's stdio server. Claude Code hands that server its session's
messaging socket; the server writes alice's new mail there. An idle session then starts a turn
by itself: the model's next request carries the message, fenced as another agent's words.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from callboard.integrations.claude_code import sessions as claude_sessions
from callboard.model import RecipientStatus
from callboard.requests import SendRequest
from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, WAKE_TIMEOUT, LiveCli, Machine, claude_code_env
from tests.support.cli_runner import CALL_TIMEOUT, isolated_env
from tests.support.live_claude_code import SERVER, init_event, start_session
from tests.support.mock_model import MockModel

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


def callboard_who(machine: Machine) -> dict:
    """``callboard who --json`` on the machine (its HOME, so Claude Code's registry there)."""
    env = isolated_env(machine.home, machine.callboard_home, {"CALLBOARD_AGENT": "carol", "CLAUDE_CONFIG_DIR": None})
    proc = subprocess.run(
        [sys.executable, "-m", "callboard", "who", "--json"],
        env=env,
        cwd=machine.workdir,
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def alice_status(machine: Machine, message_id: str) -> RecipientStatus:
    with machine.client("bob") as bob:
        (alice,) = [r for r in bob.message_status(message_id).recipients if r.agent == "alice"]
    return alice


def test_an_idle_session_starts_a_turn_with_mail_written_into_its_socket(
    claude_code_current: Path, machine: Machine, model: MockModel, socket_tmp: Path
):
    session = start_session(claude_code_current, machine, model, socket_tmp)
    init = init_event(session)
    assert {"name": SERVER, "status": "connected"}.items() <= init["mcp_servers"][0].items(), session.transcript()
    socket_path = init["messaging_socket_path"]
    assert socket_path and Path(socket_path).is_socket(), session.transcript()

    # The registry lists the session with its socket, and so does `callboard who`.
    env = claude_code_env(machine, model)
    (registered,) = claude_sessions.live_sessions(env)
    assert (registered.pid, registered.socket_path) == (session.pid, socket_path)
    assert registered.session_id == init["session_id"]
    who = callboard_who(machine)
    assert [(s["pid"], s["socket_path"]) for s in who["claude_code_sessions"]] == [(session.pid, socket_path)]

    turns = len(model.model_requests())
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text="Please rebase PR 12 onto main.", subject="rebase"))

    # Nothing is written on stdin: the session wakes because the mail came through its socket.
    (request,) = session.wait_for(
        lambda: model.requests_saying("Please rebase PR 12 onto main."), "the model request with the mail", WAKE_TIMEOUT
    )
    text = request.last_user_text()
    assert "from: bob" in text and "subject: rebase" in text and f"id: {sent.message_id}" in text
    assert "BEGIN MESSAGE" in text and "END MESSAGE" in text
    assert "not your user's" in text  # fenced: another agent's words
    assert model.model_requests().index(request) == turns  # the very next request
    session.wait_for(lambda: len(session.results()) == 2, "the woken turn to finish")

    # Handed by the frame; surfaced once the session's transcript recorded the turn.
    alice = session.wait_for(
        lambda: (s := alice_status(machine, sent.message_id)).state == "surfaced" and s, "surfaced", WAKE_TIMEOUT
    )
    assert (alice.state, alice.via) == ("surfaced", "socket")
    assert alice.surfaced_at is not None and alice.read_at is None

    assert session.close() == 0
    assert model.proxied() == [], session.transcript()


def leaves_mail_to_the_hooks(
    claude: Path, machine: Machine, model: MockModel, tmp: Path, extra: dict[str, str] | None = None
) -> tuple[LiveCli, list[claude_sessions.ClaudeSession]]:
    """Mail that waits when the session starts (what a injector writes first, at once) and mail
    sent while it is idle: neither reaches the model nor is marked surfaced; the session ends.
    Returns it, and the registry as it was while the session ran."""
    with machine.client("bob") as bob:
        before = bob.send(SendRequest(to="alice", text="Sent before the session started."))
    session = start_session(claude, machine, model, tmp, extra)
    registered = claude_sessions.live_sessions(claude_code_env(machine, model))
    with machine.client("bob") as bob:
        after = bob.send(SendRequest(to="alice", text="Sent while the session is idle."))
    assert session.close() == 0  # our server has ended too

    assert len(session.results()) == 1, session.transcript()  # no turn but the one asked for on stdin
    assert model.requests_saying("Sent before") == [] and model.requests_saying("Sent while") == []
    for sent in (before, after):
        alice = alice_status(machine, sent.message_id)
        assert alice.surfaced_at is None and alice.via is None and alice.read_at is None
    return session, registered


def test_without_a_socket_the_server_leaves_the_mail_to_the_hooks(
    claude_code_current: Path, machine: Machine, model: MockModel, socket_tmp: Path
):
    session, registered = leaves_mail_to_the_hooks(
        claude_code_current, machine, model, socket_tmp, {"CLAUDE_CODE_HARBOR_KITE": "0"}
    )
    assert init_event(session).get("messaging_socket_path") is None, session.transcript()
    assert [(s.pid, s.socket_path) for s in registered] == [(session.pid, None)]


def test_a_session_that_holds_peer_messages_gets_no_frames_from_the_server(
    claude_code_current: Path, machine: Machine, model: MockModel, socket_tmp: Path
):
    # An explicit "hold" holds even its own child's frames (for the user's review; headless:
    # dropped): a frame written would be mail marked surfaced that the model never saw.
    (machine.home / ".claude").mkdir()
    (machine.home / ".claude" / "settings.json").write_text(json.dumps({"crossSessionInbound": "hold"}))
    session, _ = leaves_mail_to_the_hooks(claude_code_current, machine, model, socket_tmp)
    assert init_event(session)["messaging_socket_path"], session.transcript()
    assert [e for e in session.events() if e.get("subtype") == "peer_message_hold"] == []  # nothing was written
