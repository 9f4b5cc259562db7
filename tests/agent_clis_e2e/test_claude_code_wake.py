"""How mail reaches a real Claude Code session that is not asking for it: woken while idle by
the installed waiter when there is no messaging socket; held until the tool round while busy;
and an interactive session in a terminal woken through its socket.

Claude Code (the current version, from npm) runs against a local mock model; bob is another
agent on the same store, acting in this process.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from callboard.integrations.claude_code import sessions as claude_sessions
from callboard.model import RecipientStatus
from callboard.requests import SendRequest
from tests.agent_clis_e2e.conftest import (
    LEFTOVER_TIMEOUT,
    RUN_TIMEOUT,
    TEST_TIMEOUT,
    WAKE_TIMEOUT,
    Machine,
    claude_code_env,
)
from tests.support.live_claude_code import (
    HEADLESS,
    SERVER,
    init_event,
    start_waiting_session,
    waiters,
)
from tests.support.mock_model import MockModel
from tests.support.waiting import scaled, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


@pytest.fixture
def quiet_model() -> Iterator[MockModel]:
    """A mock model that never calls our tools: it answers text, or runs ``RUN_BASH:`` lines."""
    with MockModel(tool_input=None) as server:
        yield server


def alice_status(machine: Machine, message_id: str) -> RecipientStatus:
    with machine.client("bob") as bob:
        (alice,) = [r for r in bob.message_status(message_id).recipients if r.agent == "alice"]
    return alice


def assert_fenced_from_bob(text: str, body: str, message_id: str) -> None:
    assert body in text and "from: bob" in text and f"id: {message_id}" in text, text
    assert "BEGIN MESSAGE" in text and "END MESSAGE" in text, text


def in_group(pid: int, group: int) -> bool:
    try:
        return os.getpgid(pid) == group
    except ProcessLookupError:
        return False


def gone(pid: int, *, group: bool = False) -> bool:
    """Whether the process (or every process of the group) has ended."""
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return True
    return False


# --- 1. no socket: the installed asyncRewake waiter wakes the idle session ----------------------


def test_without_a_socket_the_installed_waiter_wakes_an_idle_session(
    claude_code_current: Path, machine: Machine, quiet_model: MockModel, socket_tmp: Path
):
    debug_log = machine.root / "claude-debug.log"
    session, waiter = start_waiting_session(
        claude_code_current, machine, quiet_model, socket_tmp, ("--debug-file", str(debug_log))
    )
    turns = len(quiet_model.model_requests())
    body = "Please rerun the flaky integration test."
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text=body, subject="ci"))

    # Nothing is written on stdin: the waiter exits 2 (printing nothing) and Claude Code starts a
    # turn with the installed rewakeMessage; the turn's UserPromptSubmit hook brings the mail (as
    # "hook additional context", after the notification).
    (request,) = session.wait_for(
        lambda: quiet_model.requests_mentioning(body), "the model request with the mail", WAKE_TIMEOUT
    )
    assert "New Callboard mail:" in request.last_user_text()  # the installed rewakeMessage
    assert_fenced_from_bob(json.dumps(request.body["messages"][-1]).replace("\\n", "\n"), body, sent.message_id)
    assert quiet_model.model_requests().index(request) == turns  # the very next request
    session.wait_for(lambda: len(session.results()) == 2, "the woken turn to finish")
    assert gone(waiter, group=True)  # it exited (2) to wake the session

    alice = alice_status(machine, sent.message_id)
    assert (alice.state, alice.via) == ("surfaced", "hook")  # the hook's own output carried it
    assert alice.read_at is None

    # Quiet: 2.1.332 logs every asyncRewake exit 2 as an error with the hook's whole output;
    # ours has none, so the wake's line is the bare status and no error or warning holds mail.
    # (Debug-level lines echo every hook's output, the prompt hook's mail among them.)
    log = debug_log.read_text().splitlines()
    loud = [line for line in log if "[ERROR]" in line or "[WARN]" in line]
    assert [line for line in loud if "SessionStart" in line or "Stop" in line] == [
        next(line for line in loud if "status code 2" in line)
    ], loud
    assert next(line for line in loud if "status code 2" in line).endswith("error: status code 2"), loud
    assert not [line for line in loud if body in line or "BEGIN MESSAGE" in line], loud

    # The woken turn's Stop started the next waiter; it ends with the session. (On stdin's end
    # Claude Code 2.1.332 waits 30 s for its background hooks, then SIGTERMs them.)
    session.wait_for(lambda: waiters(machine), "the next waiter to run")
    assert session.close() == 0
    wait_until(lambda: not waiters(machine), LEFTOVER_TIMEOUT, "no waiter left after the session ended")
    assert quiet_model.proxied() == [], session.transcript()


def test_the_waiter_ends_soon_after_its_session_is_killed(
    claude_code_current: Path, machine: Machine, quiet_model: MockModel, socket_tmp: Path
):
    # Claude Code runs each hook in a process group of its own: killing the CLI's group leaves
    # the waiter running, and only its own watch on the CLI ends it.
    session, waiter = start_waiting_session(claude_code_current, machine, quiet_model, socket_tmp)
    assert waiter != session.pid
    # Our process, under the hook's shell (the group's leader).
    (ours,) = [pid for pid in machine.processes("callboard hook wake") if pid != waiter and in_group(pid, waiter)]
    session.kill()
    began = time.monotonic()
    wait_until(lambda: gone(ours), LEFTOVER_TIMEOUT, "the waiter to end after its session was killed")
    assert time.monotonic() - began < scaled(5.0)  # by its own look (every 0.2 s), not a mailbox round (15 s)
    # Its shell, orphaned, ends with it (reaped by init, in its own time).
    wait_until(lambda: gone(waiter, group=True), LEFTOVER_TIMEOUT, "the waiter's shell to end")
    assert waiters(machine) == set()


# --- 2. busy: the socket's mail waits for the tool round -----------------------------------------


def test_mail_for_a_busy_session_comes_with_the_tool_result_not_mid_tool(
    claude_code_current: Path, machine: Machine, quiet_model: MockModel, socket_tmp: Path
):
    marks = machine.root / "marks"
    marks.mkdir()
    started, finished = marks / "started", marks / "finished"
    config = {"mcpServers": {SERVER: {"type": "stdio", **machine.mcp_server("alice")}}}
    argv = [claude_code_current, *HEADLESS, "--mcp-config", json.dumps(config), "--strict-mcp-config"]
    argv += ["--allowedTools", "Bash"]  # -p refuses tools that are not allowed
    session = machine.start(argv, claude_code_env(machine, quiet_model, {"TMPDIR": str(socket_tmp)}))
    command = f"touch {shlex.quote(str(started))} && sleep 4 && touch {shlex.quote(str(finished))}"
    session.say(f"RUN_BASH: {command}")
    session.wait_for(started.exists, "the Bash call to start")
    assert init_event(session)["messaging_socket_path"], session.transcript()

    body = "The release branch is frozen; hold your merge."
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text=body, subject="freeze"))
    session.wait_for(lambda: alice_status(machine, sent.message_id).handed_at, "the mail to be written", WAKE_TIMEOUT)
    assert not finished.exists(), "the mail was written only after the tool: the test shows nothing"
    session.wait_for(lambda: len(session.results()) == 1, "the turn to finish")

    carrying = quiet_model.requests_mentioning(body)
    assert carrying, f"the model never saw the mail\n{quiet_model.summary()}{session.transcript()}"
    first = carrying[0]
    assert first.bash_results(), "the mail reached the model before the Bash call's result"
    assert_fenced_from_bob(first.conversation_text(), body, sent.message_id)
    alice = session.wait_for(
        lambda: (s := alice_status(machine, sent.message_id)).state == "surfaced" and s, "surfaced", WAKE_TIMEOUT
    )
    assert (alice.state, alice.via) == ("surfaced", "socket")
    # Written while the tool ran (so Claude Code held it): handed before the tool's last step,
    # surfaced after it, by the request that carried it.
    assert alice.handed_at is not None and alice.surfaced_at is not None
    assert alice.handed_at.timestamp() < finished.stat().st_mtime <= alice.surfaced_at.timestamp()
    assert session.close() == 0
    assert quiet_model.proxied() == [], session.transcript()


# --- 3. interactive, in a terminal: the socket wakes it ------------------------------------------


class Tmux:
    """A tmux server of the test's own (its socket in the test's folder), one detached session."""

    SESSION = "sb"

    def __init__(self, socket: Path) -> None:
        self.socket = socket
        self.pane_pid: int | None = None

    def tmux(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
        proc = subprocess.run(
            ["tmux", "-S", str(self.socket), *args],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, f"tmux {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}"
        return proc.stdout

    def start(self, argv: list[str], env: dict[str, str], cwd: Path) -> int:
        """Run ``argv`` as the session's one pane (the process the pane runs: its pid)."""
        command = f"exec {shlex.join(argv)}"
        # remain-on-exit: a CLI that dies early leaves its last screen to read.
        self.tmux("new-session", "-d", "-s", self.SESSION, "-x", "200", "-y", "50", command, ";",
                  "set-option", "-t", self.SESSION, "remain-on-exit", "on", env=env, cwd=cwd)  # fmt: skip
        self.pane_pid = int(self.tmux("display-message", "-p", "-t", self.SESSION, "#{pane_pid}").strip())
        return self.pane_pid

    def screen(self) -> str:
        try:
            return self.tmux("capture-pane", "-p", "-J", "-t", self.SESSION)
        except AssertionError as error:
            return f"(no screen: {error})"

    def kill(self) -> None:
        subprocess.run(["tmux", "-S", str(self.socket), "kill-server"], capture_output=True, timeout=RUN_TIMEOUT)


@pytest.fixture
def tmux(socket_tmp: Path) -> Iterator[Tmux]:
    server = Tmux(socket_tmp / "tmux.sock")
    try:
        yield server
    finally:
        server.kill()
        if server.pane_pid is not None and not gone(server.pane_pid):
            os.kill(server.pane_pid, 9)


def trust_the_project(machine: Machine, api_key: str) -> None:
    """What an interactive Claude Code needs to start straight at its prompt: onboarding done,
    the working folder trusted, the API key approved."""
    state = {
        "hasCompletedOnboarding": True,
        "projects": {str(machine.workdir): {"hasTrustDialogAccepted": True}},
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
    }
    (machine.home / ".claude.json").write_text(json.dumps(state))


def test_an_idle_interactive_session_is_woken_through_its_socket(
    claude_code_current: Path, machine: Machine, quiet_model: MockModel, socket_tmp: Path, tmux: Tmux
):
    env = claude_code_env(machine, quiet_model, {"TMPDIR": str(socket_tmp)})
    for inherited in ("TMUX", "TMUX_PANE"):  # a test run inside tmux: this server is another
        env.pop(inherited, None)
    trust_the_project(machine, env["ANTHROPIC_API_KEY"])
    config = {"mcpServers": {SERVER: {"type": "stdio", **machine.mcp_server("alice")}}}
    argv = [str(claude_code_current), "--mcp-config", json.dumps(config), "--strict-mcp-config"]
    pid = tmux.start(argv, env, machine.workdir)

    def until(condition: Callable[[], Any], timeout: float, what: str) -> Any:
        """wait_until, failing with the terminal's screen and the model's requests as they are then."""
        try:
            return wait_until(condition, timeout, what)
        except pytest.fail.Exception:
            screen = f"\n--- screen\n{tmux.screen()}\n--- model\n{quiet_model.summary()}"
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}{screen}")

    def registered() -> claude_sessions.ClaudeSession | None:
        entry = claude_sessions.session_of(pid, env)
        return entry if entry is not None and entry.status == "idle" and entry.socket_path else None

    entry = until(registered, RUN_TIMEOUT, "the session to be idle at its prompt")
    assert entry.kind == "interactive" and Path(entry.socket_path).is_socket()

    def alice_served() -> bool:  # our server runs: its session is the CLI's
        with machine.client("bob") as bob:
            (alice,) = [a for a in bob.who().agents if a.name == "alice"] or [None]
        return alice is not None and [s.pid for s in alice.sessions] == [pid]

    until(alice_served, RUN_TIMEOUT, "alice's server to run")
    assert quiet_model.model_requests() == [], quiet_model.summary()  # nobody has typed anything

    body = "Please look at the failing deploy."
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text=body, subject="deploy"))
    (request,) = until(lambda: quiet_model.requests_saying(body), WAKE_TIMEOUT, "the model request with the mail")
    assert_fenced_from_bob(request.last_user_text(), body, sent.message_id)
    alice = until(
        lambda: (s := alice_status(machine, sent.message_id)).state == "surfaced" and s, WAKE_TIMEOUT, "surfaced"
    )
    assert (alice.state, alice.via) == ("surfaced", "socket")
    until(lambda: body in tmux.screen(), WAKE_TIMEOUT, "the terminal to show the mail")

    tmux.kill()  # the terminal goes: the CLI, and our server with it
    wait_until(lambda: gone(pid), LEFTOVER_TIMEOUT, "Claude Code to exit with its terminal")
    wait_until(lambda: not machine.processes("callboard mcp"), LEFTOVER_TIMEOUT, "our server to exit too")
    # Interactive Claude Code tries a few hosts of its own (updates, plugins): the mock, as its
    # proxy, refused every one.
    assert all(r.method == "CONNECT" for r in quiet_model.proxied()), quiet_model.summary()
