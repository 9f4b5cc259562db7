"""Mail injected by the sender into this machine's Claude Code sessions that Callboard does not
serve: a registry in a temporary CLAUDE_CONFIG_DIR whose sessions are real, live processes (with
their real start time, command line and environment), each with a stand-in messaging socket
(tests/support/frame_listener.py); a real embedded store. With the real Claude Code:
tests/agent_clis_e2e/test_claude_code_reach.py."""

# ruff: noqa: F811 (the machine fixture is imported, and named as the tests' argument)
from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from mcp import Client as McpClient

from callboard.client.base import NOTHING_AFTER_SEND
from callboard.client.local import LocalClient
from callboard.integrations.claude_code.inject import _served_pids, inject_sent
from callboard.integrations.claude_code.injecting import ClaudeCodeInjector
from callboard.integrations.claude_code.socket_delivery import render
from callboard.mcp.tools import mailbox_server, one_client
from callboard.model import AgentPresence, InjectedInto, Session, WhoReport
from callboard.procs import process_start_time
from callboard.requests import ReadQuery, SendRequest, SurfaceQuery
from tests.support.claude_code_machine import FakeSession, Machine, machine  # noqa: F401 (the fixture)
from tests.support.cli_runner import CLI, describe
from tests.support.waiting import wait_until


def status(client: LocalClient, message_id: str, agent: str) -> tuple[str, str | None]:
    (row,) = [r for r in client.message_status(message_id).recipients if r.agent == agent]
    return str(row.state), row.via


def nothing_injected(session: FakeSession, bob: LocalClient, message_id: str, report) -> None:
    assert report.injected == () and report.problem is None
    assert status(bob, message_id, "alice")[1] is None  # not surfaced: queued for the session's own reading
    assert session.listener.received() == []  # not even connected


# --- injected ------------------------------------------------------------------------------------


def test_mail_is_injected_into_the_recipients_session_fenced_and_marked_handed_by_socket(machine):
    session = machine.session(machine.project("alice"))
    machine.key_file(session, "f" * 32)
    bob = machine.client("bob")
    alice = machine.client("alice")

    sent = bob.send(SendRequest(to="alice", text="Can you review PR 12?", subject="review"))
    report = inject_sent(bob, sent, machine.env)

    assert report.injected == (
        InjectedInto(
            agent="alice", pid=session.pid, name="alpha", session_id=session.session_id, messages=[sent.message_id]
        ),
    )
    assert report.problem is None
    (frame,) = wait_until(session.frames, what="a frame")
    assert frame[0] == {"type": "auth", "token": "f" * 32}  # the peerToken of the session's key file
    assert frame[1]["type"] == "user" and frame[1]["session_id"] == session.session_id
    text = frame[1]["message"]["content"]
    assert text == render(alice.read(ReadQuery(peek=True)).items)
    assert "from: bob" in text and "Can you review PR 12?" in text and "from-mode" not in text
    assert status(bob, sent.message_id, "alice") == ("handed", "socket")
    assert alice.surface(SurfaceQuery(via="hook")).items == []  # the hooks will not put it before the agent again


def test_a_message_goes_into_one_session_of_the_agent_once(machine):
    project = machine.project("alice")
    first, second = machine.session(project), machine.session(project)
    bob = machine.client("bob")

    sent = bob.send(SendRequest(to="alice", text="once"))
    report = inject_sent(bob, sent, machine.env)
    again = inject_sent(bob, sent, machine.env)

    assert [p.pid for p in report.injected] == [first.pid] and again.injected == ()
    wait_until(first.frames, what="a frame")
    assert second.listener.received() == []


def test_a_channel_post_reaches_each_members_session(machine):
    alice_session = machine.session(machine.project("alice"))
    carol_session = machine.session(machine.project("carol"))
    bob, alice, carol = machine.client("bob"), machine.client("alice"), machine.client("carol")
    bob.create_channel("ops")
    alice.join_channel("ops")
    carol.join_channel("ops")

    sent = bob.send(SendRequest(to="#ops", text="deploying"))
    report = inject_sent(bob, sent, machine.env)

    assert sorted((p.agent, p.pid) for p in report.injected) == [
        ("alice", alice_session.pid),
        ("carol", carol_session.pid),
    ]
    for session in (alice_session, carol_session):
        (frame,) = wait_until(session.frames, what="a frame")
        assert "deploying" in frame[-1]["message"]["content"]


def test_the_sessions_own_callboard_agent_names_its_agent(machine):
    session = machine.session(machine.project("carol"), environ={"CALLBOARD_AGENT": "alice"})
    bob = machine.client("bob")

    report = inject_sent(bob, bob.send(SendRequest(to="alice", text="hi")), machine.env)

    assert [p.pid for p in report.injected] == [session.pid]


# --- left alone --------------------------------------------------------------------------------


def test_another_agents_session_is_not_touched(machine):
    carol = machine.session(machine.project("carol"))
    bob = machine.client("bob")

    sent = bob.send(SendRequest(to="alice", text="for alice only"))
    report = inject_sent(bob, sent, machine.env)

    assert report.injected == () and report.problem is None
    assert carol.listener.received() == []
    assert machine.client("carol").read(ReadQuery(peek=True)).items == []


def test_a_session_of_another_workspace_is_not_touched(machine):
    session = machine.session(machine.project("alice"), environ={"CALLBOARD_WORKSPACE": "elsewhere"})
    bob = machine.client("bob")

    sent = bob.send(SendRequest(to="alice", text="hi"))
    nothing_injected(session, bob, sent.message_id, inject_sent(bob, sent, machine.env))


def test_a_session_served_by_callboard_is_left_to_its_server_or_hooks(machine):
    session = machine.session(machine.project("alice"))
    alice, bob = machine.client("alice"), machine.client("bob")
    alice.register_session(runtime="claude-code", pid=session.pid)  # what our server or hooks do

    sent = bob.send(SendRequest(to="alice", text="hi"))
    nothing_injected(session, bob, sent.message_id, inject_sent(bob, sent, machine.env))
    assert status(bob, sent.message_id, "alice") == ("delivered", None)


def test_a_session_kept_by_hooks_alone_still_counts_as_served_while_idle(machine):
    # Hooks heartbeat only when the session works: idle, it drops out of the liveness window,
    # and its hooks still serve it. An ended one, or one of another process with that pid, does not.
    session = machine.session(machine.project("alice"))
    start = process_start_time(session.pid)
    now = datetime.now(UTC)

    def who(**fields: object) -> WhoReport:
        fields = {"id": "s1", "workspace": "default", "agent": "alice", "runtime": "claude-code", **fields}
        one = Session(machine="here", pid=session.pid, started_at=now, last_seen=now, **fields)
        return WhoReport(
            workspace="default",
            agents=[AgentPresence(name="alice", live=False, unread=0, sessions=[one])],
            machines=[],
            liveness_seconds=60,
        )

    assert _served_pids(who(proc_start=start), "here") == {session.pid}
    assert _served_pids(who(proc_start=None), "here") == {session.pid}  # through a hub: no start time
    assert _served_pids(who(proc_start=start, ended_at=now), "here") == set()
    assert _served_pids(who(proc_start=start - 1), "here") == set()
    assert _served_pids(who(proc_start=start), "another-machine") == set()


BYPASS = {
    "dangerously-skip-permissions": (["--dangerously-skip-permissions"], {}),
    "allow-dangerously-skip-permissions": (["--allow-dangerously-skip-permissions"], {}),
    "permission-mode": (["--permission-mode", "bypassPermissions"], {}),
    "permission-mode=": (["--permission-mode=bypassPermissions"], {}),
    "settings-flag": (["--settings", '{"permissions": {"defaultMode": "bypassPermissions"}}'], {}),
    "user-settings": ([], {"user": {"permissions": {"defaultMode": "bypassPermissions"}}}),
    "project-local-settings": ([], {"local": {"permissions": {"defaultMode": "bypassPermissions"}}}),
}
HOLD = {
    "user-hold": ([], {"user": {"crossSessionInbound": "hold"}}),
    "project-refuse": ([], {"project": {"crossSessionInbound": "refuse"}}),
    "unknown-value": ([], {"user": {"crossSessionInbound": "maybe"}}),
    "settings-flag-hold": (["--settings", '{"crossSessionInbound": "hold"}'], {}),
    "settings-file-unreadable": (["--settings", "missing-settings.json"], {}),
}


def settings_path(machine: Machine, project: Path, where: str) -> Path:
    return {
        "user": machine.config / "settings.json",
        "project": project / ".claude" / "settings.json",
        "local": project / ".claude" / "settings.local.json",
    }[where]


@pytest.mark.parametrize("case", [*BYPASS.values(), *HOLD.values()], ids=[*BYPASS, *HOLD])
def test_a_session_that_would_hold_or_refuse_a_frame_from_us_is_left_alone(machine, case):
    # A frame from a process that is not the session's descendant and claims no mode: a
    # bypassing session holds it (no-mode-asserted); hold and refuse are the user's opt-outs.
    args, files = case
    project = machine.project("alice")
    for where, document in files.items():
        machine.settings(settings_path(machine, project, where), document)
    session = machine.session(project, *args)
    bob = machine.client("bob")

    sent = bob.send(SendRequest(to="alice", text="hi"))
    nothing_injected(session, bob, sent.message_id, inject_sent(bob, sent, machine.env))


def test_a_session_whose_setting_accepts_and_that_prompts_is_injected_into(machine):
    project = machine.project("alice")
    machine.settings(project / ".claude" / "settings.json", {"permissions": {"defaultMode": "acceptEdits"}})
    machine.settings(machine.config / "settings.json", {"crossSessionInbound": "accept"})
    session = machine.session(project, "--permission-mode", "default")
    bob = machine.client("bob")

    assert [p.pid for p in inject_sent(bob, bob.send(SendRequest(to="alice", text="hi")), machine.env).injected] == [
        session.pid
    ]


def test_a_dead_socket_surfaces_nothing_and_the_send_stands(machine):
    session = machine.session(machine.project("alice"), socket=False)
    bob = machine.client("bob")

    sent = bob.send(SendRequest(to="alice", text="anyone there?"))
    report = inject_sent(bob, sent, machine.env)

    assert report.injected == ()
    assert report.problem is not None
    assert report.problem.startswith(f"could not inject mail into Claude Code session {session.pid}: cannot write")
    assert status(bob, sent.message_id, "alice") == ("queued", None)
    assert [i.message.id for i in machine.client("alice").surface(SurfaceQuery(via="hook")).items] == [sent.message_id]


def test_a_failing_mailbox_is_a_problem_reported_never_raised(machine):
    machine.session(machine.project("alice"))
    bob = machine.client("bob")
    sent = bob.send(SendRequest(to="alice", text="hi"))

    class Broken:
        def who(self):
            raise RuntimeError("the store went away")

    report = inject_sent(Broken(), sent, machine.env)  # type: ignore[arg-type]
    assert report == type(report)(problem="could not inject mail into Claude Code sessions: the store went away")


# --- the faces ---------------------------------------------------------------------------------


def test_the_cli_says_which_session_it_injected_into_and_lists_it_in_json(machine):
    session = machine.session(machine.project("alice"))
    cli = CLI(machine.root / "cli", callboard_home=Path(machine.env["CALLBOARD_HOME"]))
    env = {"CLAUDE_CONFIG_DIR": machine.env["CLAUDE_CONFIG_DIR"]}

    human = cli.run("send", "alice", "first", agent="bob", env=env)
    assert human.returncode == 0 and human.stderr == "", describe(human)
    assert f"injected into Claude Code session {session.pid} (alpha) for alice" in human.stdout, describe(human)

    sent = cli.run_json("send", "alice", "second", agent="bob", env=env)
    assert sent["recipients"][0]["agent"] == "alice"  # the send's own keys, unchanged
    assert sent["injected_into_claude_code"] == [
        {
            "agent": "alice",
            "pid": session.pid,
            "name": "alpha",
            "session_id": session.session_id,
            "messages": [sent["message_id"]],
        }
    ]
    assert len(wait_until(lambda: len(session.frames()) == 2 and session.frames(), what="two frames")) == 2

    cli.run_json("channel", "create", "ops", agent="bob", env=env)
    cli.run_json("channel", "join", "ops", agent="alice", env=env)
    posted = cli.run_json("channel", "post", "ops", "deploying", agent="bob", env=env)
    assert [p["pid"] for p in posted["injected_into_claude_code"]] == [session.pid]

    nobody = cli.run_json("send", "carol", "no session", agent="bob", env=env)
    assert nobody["injected_into_claude_code"] == []


def test_the_cli_warns_in_one_line_when_an_injection_fails_and_the_send_stands(machine):
    session = machine.session(machine.project("alice"), socket=False)
    cli = CLI(machine.root / "cli", callboard_home=Path(machine.env["CALLBOARD_HOME"]))

    proc = cli.run("send", "alice", "hi", agent="bob", env={"CLAUDE_CONFIG_DIR": machine.env["CLAUDE_CONFIG_DIR"]})

    assert proc.returncode == 0 and "sent " in proc.stdout, describe(proc)
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"warning: could not inject mail into Claude Code session {session.pid}: "), describe(proc)


@pytest.mark.anyio
async def test_the_stdio_servers_send_message_injects_and_a_hubs_does_not(machine, monkeypatch: pytest.MonkeyPatch):
    """The stdio server gets a client with the CLI's injector (cli/app.open_client); a hub's tools act
    through a plain one."""
    for key, value in machine.env.items():
        monkeypatch.setenv(key, value)
    session = machine.session(machine.project("alice"))
    bob = machine.client("bob")

    async def send(inject: bool, text: str) -> str:
        bob.after_send = ClaudeCodeInjector() if inject else NOTHING_AFTER_SEND
        server = mailbox_server(one_client(bob))
        async with McpClient(server) as tools:
            result = await tools.call_tool("send_message", {"to": "alice", "message": text})
        assert not result.is_error
        return "".join(getattr(block, "text", "") for block in result.content)

    assert "injected into" not in await send(False, "as a hub would send it")
    assert session.listener.received() == []
    assert f"- injected into alice's Claude Code session {session.pid}" in await send(
        True, "as a stdio server sends it"
    )
    (frame,) = wait_until(session.frames, what="a frame")
    assert "as a hub would send it" in frame[-1]["message"]["content"]  # waiting mail goes along


def test_a_task_sent_from_the_cli_is_injected_into_the_workers_session(machine):
    session = machine.session(machine.project("alice"))
    cli = CLI(machine.root / "cli", callboard_home=Path(machine.env["CALLBOARD_HOME"]))
    env = {"CLAUDE_CONFIG_DIR": machine.env["CLAUDE_CONFIG_DIR"]}

    human = cli.run("task", "send", "alice", "review PR 12", agent="bob", env=env)
    assert human.returncode == 0, describe(human)
    task_id = human.stdout.strip()  # stdout is the id alone
    assert f"injected into Claude Code session {session.pid} (alpha) for alice" in human.stderr, describe(human)
    (frame,) = wait_until(session.frames, what="a frame")
    text = frame[-1]["message"]["content"]
    assert "review PR 12" in text and f"task: {task_id}" in text  # the model is told it is a task

    sent = cli.run_json("task", "send", "alice", "and PR 13", agent="bob", env=env)
    assert [p["pid"] for p in sent["injected_into_claude_code"]] == [session.pid]
    assert sent["task"]["worker"] == "alice"
