"""What a delivery's state says with a real Claude Code session (mock model): ``handed`` while
the session has the mail and its model does not yet, ``surfaced`` once the transcript records
the turn that carried it; and mail handed to a session that dies goes back to the mailbox and
reaches the agent's next session once, its history telling the story — by itself, waking that
session as new mail does.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
from pathlib import Path

import pytest

from callboard.model import RecipientStatus
from callboard.requests import SendRequest
from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, WAKE_TIMEOUT, LiveCli, Machine, claude_code_env
from tests.support.live_claude_code import HEADLESS, SERVER, start_waiting_session, waiters
from tests.support.mock_model import MockModel
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


@pytest.fixture
def quiet_model():
    with MockModel(tool_input=None) as server:
        yield server


def alice_status(machine: Machine, message_id: str) -> RecipientStatus:
    with machine.client("bob") as bob:
        (alice,) = [r for r in bob.message_status(message_id).recipients if r.agent == "alice"]
    return alice


def start_busy(claude: Path, machine: Machine, model: MockModel, tmp: Path, marks: Path, seconds: int) -> LiveCli:
    """A headless session with alice's server, in a Bash call that runs until ``marks/go``
    exists (or ``seconds`` pass): busy."""
    config = {"mcpServers": {SERVER: {"type": "stdio", **machine.mcp_server("alice")}}}
    argv = [claude, *HEADLESS, "--mcp-config", json.dumps(config), "--strict-mcp-config", "--allowedTools", "Bash"]
    session = machine.start(argv, claude_code_env(machine, model, {"TMPDIR": str(tmp)}))
    go, started = marks / "go", marks / "started"
    wait = f"for i in $(seq {seconds * 10}); do [ -e {shlex.quote(str(go))} ] && break; sleep 0.1; done"
    session.say(f"RUN_BASH: touch {shlex.quote(str(started))} && {wait}")
    session.wait_for(started.exists, "the Bash call to start")
    return session


def test_busy_session_mail_is_handed_during_the_tool_and_surfaced_after_the_request_carrying_it(
    claude_code_current: Path, machine: Machine, quiet_model: MockModel, socket_tmp: Path
):
    marks = machine.root / "marks"
    marks.mkdir()
    session = start_busy(claude_code_current, machine, quiet_model, socket_tmp, marks, 60)
    body = "The release branch is frozen; hold your merge."
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text=body, subject="freeze"))
    handed = session.wait_for(
        lambda: (s := alice_status(machine, sent.message_id)).state == "handed" and s,
        "the mail to be handed",
        WAKE_TIMEOUT,
    )
    assert handed.via == "socket" and handed.handed_to and handed.handed_to.endswith(f"#{session.pid}")
    assert not quiet_model.requests_mentioning(body), "the model has it already: the test shows nothing"
    assert alice_status(machine, sent.message_id).state == "handed"  # the tool still runs: no evidence yet
    (marks / "go").touch()
    surfaced = session.wait_for(
        lambda: (s := alice_status(machine, sent.message_id)).state == "surfaced" and s, "surfaced", WAKE_TIMEOUT
    )
    carrying = quiet_model.requests_mentioning(body)
    assert carrying, "surfaced, but no model request carried it"
    assert surfaced.surfaced_at is not None and surfaced.handed_at is not None
    assert [e.event for e in surfaced.history] == ["queued", "delivered", "handed", "surfaced"], surfaced.history
    assert surfaced.history[-1].detail == "transcript"
    session.wait_for(lambda: len(session.results()) == 1, "the turn to finish")
    assert session.close() == 0


def test_mail_handed_to_a_session_stopped_mid_tool_returns_and_reaches_the_next_session_once(
    claude_code_current: Path, machine: Machine, quiet_model: MockModel, socket_tmp: Path
):
    marks = machine.root / "marks"
    marks.mkdir()
    first = start_busy(claude_code_current, machine, quiet_model, socket_tmp, marks, 120)
    body = "Stop the deploy; the schema changed."
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text=body))
    first.wait_for(lambda: alice_status(machine, sent.message_id).state == "handed", "handed", WAKE_TIMEOUT)
    os.killpg(first.pid, signal.SIGKILL)  # stopped in the middle of its tool call, its server with it
    first.process.wait()
    returned = wait_until(
        lambda: (s := alice_status(machine, sent.message_id)).state in ("queued", "delivered") and s,
        timeout=WAKE_TIMEOUT,
        what="the mail to come back to the mailbox",
    )
    assert returned.state == "queued" and returned.handed_to is None  # no live session of alice is left
    assert [e.event for e in returned.history][-2:] == ["handed", "returned"], returned.history
    assert not quiet_model.requests_mentioning(body)

    # alice's next session gets it, once.
    config = {"mcpServers": {SERVER: {"type": "stdio", **machine.mcp_server("alice")}}}
    argv = [claude_code_current, *HEADLESS, "--mcp-config", json.dumps(config), "--strict-mcp-config"]
    second = machine.start(argv, claude_code_env(machine, quiet_model, {"TMPDIR": str(socket_tmp)}))
    second.say("Hello. Nothing to do yet.")
    done = second.wait_for(
        lambda: (s := alice_status(machine, sent.message_id)).state == "surfaced" and s, "surfaced", WAKE_TIMEOUT
    )
    second.wait_for(lambda: len(second.results()) >= 2, "the turn with the mail to finish")
    carrying = quiet_model.requests_mentioning(body)
    # Each request carries the whole conversation: the mail is in it once, and came in one turn.
    assert all(r.conversation_text().count(f"id: {sent.message_id}") == 1 for r in carrying), "delivered twice"
    events = [e.event for e in done.history]
    back = events.index("returned")
    assert events[back - 1 : back + 2] == ["handed", "returned", "handed"] and events[-1] == "surfaced", done.history
    # A session just started may hold a frame until its permission mode is known, then release
    # it ("mode-unknown", then "mode-changed"): its receipts say so in between.
    assert set(events[back + 2 : -1]) <= {"held", "handed"}, done.history
    sessions = [e.session for e in done.history if e.event in ("handed", "returned")]
    assert sessions[0] == sessions[1] != sessions[2], done.history
    assert second.close() == 0


@pytest.mark.parametrize("wake", ["socket", "waiter"])
def test_mail_returned_from_a_session_stopped_mid_tool_wakes_the_agents_next_session_by_itself(
    claude_code_current: Path, machine: Machine, quiet_model: MockModel, socket_tmp: Path, wake: str
):
    """Nothing is typed into the next session and nothing else is sent: the returned mail wakes it
    as new mail does, through its socket or (without one) its waiter, in a project where
    `callboard install claude` ran. (Its session-start hook leaves the mail to them: taken into
    that hook's context, it would be marked surfaced while the session sat idle.)"""
    marks = machine.root / "marks"
    marks.mkdir()
    first = start_busy(claude_code_current, machine, quiet_model, socket_tmp, marks, 120)
    # Hooks, the waiter, .mcp.json: alice's next session as a user has it (the running one read
    # its settings at its start).
    machine.install("claude")
    body = "Roll back the migration; the index is wrong."
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text=body))
    first.wait_for(lambda: alice_status(machine, sent.message_id).state == "handed", "handed", WAKE_TIMEOUT)
    # Stopped in the middle of its tool call, its server with it: nothing ends its session, and
    # the mail goes back to the mailbox as the agent's next session registers.
    os.killpg(first.pid, signal.SIGKILL)
    first.process.wait()

    extra = {"TMPDIR": str(socket_tmp), "MCP_CONNECTION_NONBLOCKING": "true", **machine.agent_env("alice")}
    if wake == "waiter":
        extra["CLAUDE_CODE_HARBOR_KITE"] = "0"  # no messaging socket
    before = len(quiet_model.model_requests())
    second = machine.start([claude_code_current, *HEADLESS], claude_code_env(machine, quiet_model, extra))
    (request, *_) = second.wait_for(
        lambda: quiet_model.requests_mentioning(body), "the next session's request with the returned mail", WAKE_TIMEOUT
    )
    assert quiet_model.model_requests().index(request) == before  # its very first request
    text = request.conversation_text()
    assert text.count(f"id: {sent.message_id}") == 1, text
    assert "SessionStart hook additional context" not in text, text  # the wake brought it, not the start
    done = second.wait_for(
        lambda: (s := alice_status(machine, sent.message_id)).state == "surfaced" and s, "surfaced", WAKE_TIMEOUT
    )
    assert done.via == wake.replace("waiter", "hook"), done  # the waiter's woken turn: its prompt hook carried it
    events = [e.event for e in done.history]
    back = events.index("returned")
    assert events[back - 1] == "handed" and events[-1] == "surfaced", done.history
    assert "process is gone" in (done.history[back].detail or ""), done.history
    second.wait_for(lambda: second.results(), "the woken turn to finish")
    assert second.close() == 0


def test_through_the_waiter_a_busy_sessions_mail_stays_delivered_until_a_hook_carries_it(
    claude_code_current: Path, machine: Machine, quiet_model: MockModel, socket_tmp: Path
):
    # -p runs only the tools it is told to allow (the project's allow list needs a trusted folder).
    session, _ = start_waiting_session(
        claude_code_current, machine, quiet_model, socket_tmp, ("--allowedTools", "Bash")
    )
    marks = machine.root / "marks"
    marks.mkdir()
    go, started = marks / "go", marks / "started"
    wait = f"for i in $(seq 600); do [ -e {shlex.quote(str(go))} ] && break; sleep 0.1; done"
    session.say(f"RUN_BASH: touch {shlex.quote(str(started))} && {wait}")
    session.wait_for(started.exists, "the Bash call to start")
    body = "The nightly build is red; look before you merge."
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text=body))
    # The waiter sees the mail and asks for a turn (exit 2), taking nothing: while the tool runs
    # the mail is delivered (a live session can take it), and no state claims the model has it.
    session.wait_for(lambda: not waiters(machine), "the waiter's wake", WAKE_TIMEOUT)
    during = alice_status(machine, sent.message_id)
    assert during.state == "delivered" and during.surfaced_at is None, during
    assert not quiet_model.requests_mentioning(body), "the model has it already: the test shows nothing"
    go.touch()
    surfaced = session.wait_for(
        lambda: (s := alice_status(machine, sent.message_id)).state == "surfaced" and s, "surfaced", WAKE_TIMEOUT
    )
    assert surfaced.via == "hook"  # the hook's own output carried it, into the request after the tool
    session.wait_for(lambda: quiet_model.requests_mentioning(body), "a model request carrying it")
    session.wait_for(lambda: session.results(), "the turn to finish")
    assert session.close() == 0


@pytest.mark.parametrize("policy", ["refuse", "hold"])
def test_a_session_that_refuses_or_holds_the_frame_says_so_and_refused_mail_comes_back(
    claude_code_current: Path, machine: Machine, quiet_model: MockModel, socket_tmp: Path, policy: str
):
    # Set on the command line, where the server cannot read it: the frame is written, and the
    # session's receipt is all that tells what became of it.
    config = {"mcpServers": {SERVER: {"type": "stdio", **machine.mcp_server("alice")}}}
    argv = [claude_code_current, *HEADLESS, "--mcp-config", json.dumps(config), "--strict-mcp-config"]
    argv += ["--settings", json.dumps({"crossSessionInbound": policy})]
    session = machine.start(argv, claude_code_env(machine, quiet_model, {"TMPDIR": str(socket_tmp)}))
    session.say("Hello. Nothing to do yet.")
    session.wait_for(lambda: len(session.results()) == 1, "the first turn to finish")
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text="Is the release tagged?"))
    event = "refused" if policy == "refuse" else "held"
    status = session.wait_for(
        lambda: (
            (s := alice_status(machine, sent.message_id)).history and s.history[-1].event in (event, "returned") and s
        ),
        f"the {event} receipt",
        WAKE_TIMEOUT,
    )
    if policy == "refuse":
        status = session.wait_for(
            lambda: (s := alice_status(machine, sent.message_id)).history[-1].event == "returned" and s,
            "the mail to come back",
            WAKE_TIMEOUT,
        )
        assert status.state == "delivered"  # the session lives on: its hooks can take it
        assert [e.event for e in status.history][-3:] == ["handed", "refused", "returned"], status.history
    else:
        assert (status.state, status.history[-1].event) == ("handed", "held")  # waiting on the user
    assert not quiet_model.requests_mentioning("Is the release tagged?")
    session.kill()
