"""``hook wake``: the background waiter that wakes an idle Claude Code session (asyncRewake)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from callboard.client.local import LocalClient
from callboard.fence import PREAMBLE, fenced_mail
from callboard.identity import DEFAULT_WORKSPACE
from callboard.integrations.hooks.state import take_injector_lock
from callboard.model import Caller
from callboard.procs import process_start_time
from callboard.requests import SurfaceQuery
from callboard.service.door import Service
from callboard.store.sqlite.store import SQLiteStore
from tests.integrations.hooks.conftest import AGENT, Hooks
from tests.support.processes import process_gone
from tests.support.waiter_agent_cli import WAKE_TIMEOUT, registered, start_agent_cli
from tests.support.waiting import scaled, wait_until


def test_mail_wakes_the_session(hooks: Hooks) -> None:
    waiter = hooks.spawn_wake()
    wait_until(lambda: registered(hooks, os.getpid()), what="the waiter to register the session")
    assert waiter.poll() is None  # nothing to say yet: it waits
    message = hooks.send("the build is red")
    assert waiter.wait(WAKE_TIMEOUT) == 2  # exit 2: Claude Code starts a turn
    assert waiter.stdout is not None and waiter.stderr is not None
    # Quiet: Claude Code logs an asyncRewake's output as a hook error; the turn's prompt hook
    # brings the mail instead.
    assert (waiter.stdout.read(), waiter.stderr.read()) == ("", "")
    assert hooks.status(message)["state"] != "surfaced"  # the waiter took nothing
    context = hooks.context("prompt")
    assert context is not None
    text = context["hookSpecificOutput"]["additionalContext"]
    assert PREAMBLE in text and "from: reviewer" in text and "-----\nthe build is red\n----- END MESSAGE" in text
    status = hooks.status(message)
    assert (status["state"], status["via"], status["read_at"]) == ("surfaced", "hook", None)
    assert hooks.context("prompt") is None  # surfaced once


def test_mail_already_waiting_wakes_at_once(hooks: Hooks) -> None:
    hooks.send("waiting since before")
    waiter = hooks.spawn_wake()
    assert waiter.wait(WAKE_TIMEOUT) == 2


def test_one_waiter_per_agent_cli_process(hooks: Hooks) -> None:
    first = hooks.spawn_wake()
    wait_until(lambda: registered(hooks, os.getpid()), what="the first waiter to register the session")
    # Every Stop starts another waiter; and after /clear the same process has a new session id.
    for session in ("sess-1", "sess-2"):
        again = hooks.spawn_wake(session=session)
        assert again.wait(WAKE_TIMEOUT) == 0  # at once: it does not wait for mail
        assert again.stderr is not None and again.stderr.read() == ""
    assert first.poll() is None
    other_process = start_agent_cli(hooks)  # another agent CLI process of the agent has its own
    assert other_process.stdout is not None
    other_process.stdout.readline()  # its waiter's pid
    wait_until(lambda: registered(hooks, other_process.pid), what="the other process's waiter to register")
    try:
        # Mail to the agent is pushed to its newest session (the other process's): its waiter
        # wakes; mail to this process's session wakes this one. Each once, by its own mail.
        hooks.send("for the newest session")
        assert other_process.stdout.readline().strip() == "2"
        assert first.poll() is None  # not this process's mail: no turn here for it
        (mine,) = [s["address"] for s in hooks.sessions() if s["pid"] == os.getpid()]
        hooks.send("for this process's session", to=mine)
        assert first.wait(WAKE_TIMEOUT) == 2
    finally:
        other_process.kill()
        other_process.wait()
        other_process.stdout.close()


def test_the_waiter_ends_with_its_agent_cli(hooks: Hooks) -> None:
    agent_cli = start_agent_cli(hooks)
    try:
        assert agent_cli.stdout is not None
        waiter_pid = int(agent_cli.stdout.readline())
        wait_until(lambda: registered(hooks, agent_cli.pid), what="the waiter to register its agent CLI's session")
        state_folder = hooks.cli.callboard_home / "hooks" / "sess-1"
        assert state_folder.is_dir() and not process_gone(waiter_pid)
        agent_cli.send_signal(signal.SIGKILL)
        agent_cli.wait()
        # By its own watch on the agent CLI (every 0.2 s), well before a round of waiting on the
        # mailbox (15 s) would end.
        wait_until(lambda: process_gone(waiter_pid), 10.0, "the waiter to exit after its agent CLI")
        assert not state_folder.exists()  # its hook state went with it
    finally:
        if agent_cli.poll() is None:
            agent_cli.kill()
            agent_cli.wait()
        if agent_cli.stdout is not None:
            agent_cli.stdout.close()


def test_no_waiter_for_a_one_shot_claude_print_run(hooks: Hooks, tmp_path: Path) -> None:
    """``claude -p "prompt"`` runs an asyncRewake hook in the foreground and would wait for the
    waiter for ever; with stream-json input it runs it in the background and can be woken."""
    claude = tmp_path / "bin" / "claude"  # a Python that the process table calls claude
    claude.parent.mkdir()
    claude.symlink_to(os.path.realpath(sys.executable))
    hooks.send("mail that must not hang the run")
    for args, expected in ((["-p", "fix it"], 0), (["-p", "--input-format", "stream-json"], 2)):
        agent_cli = start_agent_cli(hooks, str(claude), *args)
        try:
            assert agent_cli.stdout is not None
            int(agent_cli.stdout.readline())
            assert int(agent_cli.stdout.readline()) == expected, args
        finally:
            agent_cli.kill()
            agent_cli.wait()
            agent_cli.stdout.close()  # type: ignore[union-attr]


def injector_lock(hooks: Hooks) -> int:
    """Hold the injector lock of the agent CLI (this test process) as its `callboard mcp` does
    while it injects mail into the session's messaging socket; the descriptor, to close."""
    fd = take_injector_lock(hooks.cli.callboard_home, os.getpid(), process_start_time(os.getpid()))
    assert fd is not None
    return fd


def test_no_waiter_beside_a_socket_injector(hooks: Hooks) -> None:
    fd = injector_lock(hooks)
    try:
        started = time.monotonic()
        assert hooks.spawn_wake().wait(WAKE_TIMEOUT) == 0
        assert time.monotonic() - started < scaled(10.0)  # at once, not after a round of waiting for mail (15 s)
    finally:
        os.close(fd)


def test_a_waiter_leaves_mail_to_an_injector_that_started_after_it(hooks: Hooks) -> None:
    waiter = hooks.spawn_wake()
    wait_until(lambda: registered(hooks, os.getpid()), what="the waiter to register the session")
    fd = injector_lock(hooks)  # the session's server has started injecting
    try:
        message = hooks.send("for the socket")
        assert waiter.wait(WAKE_TIMEOUT) == 0, "the waiter does not wake the session: the injector does"
        assert hooks.status(message)["surfaced_at"] is None, "left for the injector to take"
    finally:
        os.close(fd)


def test_the_stop_hook_confirms_handed_mail_surfaced_from_the_transcript(hooks: Hooks, tmp_path: Path) -> None:
    """A session with no ``callboard mcp`` watching its transcript (its server handed a frame,
    then was killed): the turn's stop hook reads the transcript, and the handed mail is surfaced
    once a record carrying it to the model is there."""
    waiter = hooks.spawn_wake()  # registers this process (the agent CLI) as the session
    wait_until(lambda: registered(hooks, os.getpid()), what="the waiter to register the session")
    (session,) = [s for s in hooks.sessions() if s["pid"] == os.getpid() and s["live"]]
    message = hooks.send("the build is red")
    assert waiter.wait(WAKE_TIMEOUT) == 2  # the waiter takes nothing
    service = Service(SQLiteStore(hooks.cli.default_db), machine="testhost")
    try:  # the session's server writes it into the socket: handed to the session
        caller = Caller(workspace=DEFAULT_WORKSPACE, agent=AGENT, session_id=session["id"])
        handed = LocalClient(service, caller).surface(SurfaceQuery(via="socket"))
    finally:
        service.store.close()
    assert [item.message.id for item in handed.items] == [message]
    frame = fenced_mail(handed.items)
    transcript = tmp_path / "sess-1.jsonl"
    # Queued, not yet sent to the model: no evidence.
    transcript.write_text(json.dumps({"type": "queue-operation", "operation": "enqueue", "content": frame}) + "\n")
    stop = {**json.loads(hooks.stdin("stop")), "transcript_path": str(transcript)}
    assert hooks.output(hooks.run("stop", raw=json.dumps(stop))) is None
    assert hooks.status(message)["state"] == "handed"
    # The turn that carries it to the model.
    with transcript.open("a") as file:
        file.write(json.dumps({"type": "attachment", "attachment": {"type": "queued_command", "prompt": frame}}) + "\n")
    assert hooks.output(hooks.run("stop", raw=json.dumps(stop))) is None
    status = hooks.status(message)
    assert (status["state"], status["via"]) == ("surfaced", "socket")
    assert [(e["event"], e["detail"]) for e in status["history"]][-1] == ("surfaced", "transcript")
