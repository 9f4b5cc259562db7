"""The injector that writes an agent's new mail into its Claude Code session's messaging socket,
here against a stand-in socket (tests/support/frame_listener.py) on a real embedded store; with the
real Claude Code in tests/agent_clis_e2e/test_claude_code_socket.py."""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from callboard.client.local import LocalClient
from callboard.integrations.claude_code import sessions as claude_sessions
from callboard.integrations.claude_code.socket_delivery import SessionSocket, SocketInjector, render
from callboard.integrations.hooks.state import injector_running
from callboard.model import Message
from callboard.procs import process_start_time
from callboard.requests import ReadQuery, SendRequest, SurfaceQuery
from tests.support.forgery import assert_reads_as_from_only, forged
from tests.support.frame_listener import FrameListener
from tests.support.waiting import wait_until


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="cb-") as folder:  # short: a socket path has ~100 bytes
        yield Path(folder)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The session's project folder; no settings of this machine's user or administrator apply."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    monkeypatch.setattr(claude_sessions, "MANAGED_SETTINGS", tmp_path / "managed-settings.json")
    folder = tmp_path / "proj"
    folder.mkdir()
    return folder


@pytest.fixture
def session(socket_dir: Path, project: Path) -> Iterator[tuple[FrameListener, SessionSocket]]:
    """A stand-in session socket, and the target a injector writes to."""
    with FrameListener(str(socket_dir / "4242.sock")) as listener:
        yield (
            listener,
            SessionSocket(
                path=listener.path, parent=4242, token="child-token", session_id="sess-1", project_dir=project
            ),
        )


@pytest.fixture
def injectors() -> Iterator[Callable[..., SocketInjector]]:
    started: list[SocketInjector] = []

    def start(client: LocalClient, target: SessionSocket) -> SocketInjector:
        injector = SocketInjector(client, target, wait=0.2)
        injector.start()
        started.append(injector)
        return injector

    yield start
    for injector in started:
        injector.stop()
        assert not injector.running


def contents(listener: FrameListener) -> list[str]:
    return [line["content"] for frame in listener.frames() for line in (f["message"] for f in frame if "message" in f)]


def status_of(client: LocalClient, message_id: str, recipient: str) -> tuple[str, str | None, bool]:
    (row,) = [r for r in client.message_status(message_id).recipients if r.agent == recipient]
    return row.state, row.via, row.handed_at is not None


def test_new_mail_is_written_into_the_session_fenced_once_and_marked_handed_by_socket(agents, session, injectors):
    listener, target = session
    alice, bob = agents("alice"), agents("bob")
    injectors(alice, target)

    sent = bob.send(SendRequest(to="alice", text="Can you review PR 12?", subject="review"))
    (frame,) = wait_until(listener.frames, what="a frame")

    assert frame[0] == {"type": "auth", "token": "child-token"}
    assert frame[1]["type"] == "user" and frame[1]["priority"] == "next" and frame[1]["session_id"] == "sess-1"
    text = frame[1]["message"]["content"]
    assert text == render(alice.read(ReadQuery(peek=True)).items)  # the fenced rendering, nothing else
    assert "from: bob" in text and "Can you review PR 12?" in text and "BEGIN MESSAGE" in text
    # The frame was taken, not yet the model's: handed, until the transcript shows the turn.
    assert status_of(bob, sent.message_id, "alice") == ("handed", "socket", True)
    assert alice.surface(SurfaceQuery(via="hook")).items == []  # the hooks will not put it before the agent again
    assert alice.read(ReadQuery(peek=True)).items[0].message.id == sent.message_id  # still unread

    second = bob.send(SendRequest(to="alice", text="and PR 13"))
    wait_until(lambda: len(listener.received()) == 2, what="a second frame")
    assert "and PR 13" in contents(listener)[1] and "PR 12" not in contents(listener)[1]
    assert status_of(bob, second.message_id, "alice")[1] == "socket"


def test_mail_that_waited_before_the_injector_started_is_written_at_once(agents, session, injectors):
    listener, target = session
    alice, bob = agents("alice"), agents("bob")
    first = bob.send(SendRequest(to="alice", text="one"))
    bob.send(SendRequest(to="alice", text="two"))
    alice.read(ReadQuery(limit=1))  # the first is read already: only the second is new to the agent

    injectors(alice, target)
    (frame,) = wait_until(listener.frames, what="a frame")

    text = frame[-1]["message"]["content"]
    assert "two" in text and first.message_id not in text


def test_a_socket_that_is_gone_stops_the_injector_and_leaves_the_mail_to_the_hooks(agents, session, injectors, caplog):
    listener, target = session
    alice, bob = agents("alice"), agents("bob")
    injector = injectors(alice, target)
    listener.close()  # the session ended

    with caplog.at_level(logging.WARNING, logger="callboard.socket"):
        sent = bob.send(SendRequest(to="alice", text="anyone there?"))
        wait_until(lambda: not injector.running, what="the injector to stop")

    assert [r.getMessage() for r in caplog.records if r.name == "callboard.socket"] == [
        "stopped injecting mail into the Claude Code session: cannot write to the Claude Code messaging socket "
        f"{target.path} (No such file or directory): the session has probably ended; send to a live session or "
        "leave the mail for its hooks."
    ]
    assert status_of(bob, sent.message_id, "alice") == ("queued", None, False)  # never marked surfaced
    assert [i.message.id for i in alice.surface(SurfaceQuery(via="hook")).items] == [sent.message_id]


def test_a_session_that_holds_peer_messages_gets_its_mail_through_the_hooks(agents, session, injectors, project):
    listener, target = session
    alice, bob = agents("alice"), agents("bob")
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"crossSessionInbound": "hold"}))
    injector = injectors(alice, target)

    held = bob.send(SendRequest(to="alice", text="held back"))
    wait_until(lambda: injector.left_to_hooks == 1, what="the injector to see it")
    # The user lets peer messages in again: what was held back is written in, with no new mail.
    assert status_of(bob, held.message_id, "alice") == ("queued", None, False)
    settings.write_text(json.dumps({"crossSessionInbound": "accept"}))

    (frame,) = wait_until(listener.frames, what="a frame")
    assert "held back" in frame[-1]["message"]["content"]
    assert status_of(bob, held.message_id, "alice") == ("handed", "socket", True)


def test_the_registry_s_session_id_pins_the_frame_when_the_session_is_registered(
    agents, socket_dir, project, injectors
):
    # The session's id changes on /clear or resume; the registry follows it, the environment not.
    registry = project.parent / "claude-config" / "sessions"
    registry.mkdir(parents=True)
    pid = os.getpid()  # stands in for the parent
    (registry / f"{pid}.json").write_text(
        json.dumps({"pid": pid, "sessionId": "sess-now", "procStart": str(process_start_time(pid))})
    )
    with FrameListener(str(socket_dir / "x.sock")) as listener:
        target = SessionSocket(path=listener.path, parent=pid, token=None, session_id="sess-old", project_dir=project)
        alice, bob = agents("alice"), agents("bob")
        injectors(alice, target)
        bob.send(SendRequest(to="alice", text="hi"))
        (frame,) = wait_until(listener.frames, what="a frame")

    assert frame == [
        {
            "msgV": 1,  # the frame's id and our receipts socket: where the session reports on it
            "msg_id": frame[0]["msg_id"],
            "type": "user",
            "message": {"role": "user", "content": frame[0]["message"]["content"]},
            "priority": "next",
            "from": f"uds:{socket_dir / f'{pid}.sock'}",
            "session_id": "sess-now",
        }
    ]


# --- whose socket it is ----------------------------------------------------------------------


def test_no_socket_in_the_environment_means_no_injector(project):
    assert SessionSocket.from_env({}, parent=os.getpid()) is None
    assert SessionSocket.from_env({"CLAUDE_CODE_MESSAGING_SOCKET": ""}, parent=os.getpid()) is None


def test_the_socket_is_the_parents_when_named_by_its_pid_or_registered_by_it(project, tmp_path):
    env = {
        "CLAUDE_CODE_MESSAGING_SOCKET": "/tmp/cc-socks/4242.sock",
        "CLAUDE_CODE_MESSAGING_TOKEN": "tok",
        "CLAUDE_CODE_SESSION_ID": "sess",
        "CLAUDE_PROJECT_DIR": str(project),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
    }
    assert SessionSocket.from_env(env, parent=4242) == SessionSocket(
        path="/tmp/cc-socks/4242.sock", parent=4242, token="tok", session_id="sess", project_dir=project
    )
    # Inherited through another program (say Codex, run from Claude Code's shell): not ours.
    assert SessionSocket.from_env(env, parent=4243) is None

    # A socket at a path of the user's choosing (--messaging-socket-path): the registry says whose.
    pid = os.getpid()
    registry = tmp_path / "claude-config" / "sessions"
    registry.mkdir(parents=True)
    entry = {"pid": pid, "sessionId": "s", "procStart": str(process_start_time(pid)), "cwd": str(project)}
    (registry / f"{pid}.json").write_text(json.dumps({**entry, "messagingSocketPath": "/run/me/inbox.sock"}))
    mine = {**env, "CLAUDE_CODE_MESSAGING_SOCKET": "/run/me/inbox.sock"}
    assert SessionSocket.from_env(mine, parent=pid) is not None
    assert (
        SessionSocket.from_env({**mine, "CLAUDE_CODE_MESSAGING_SOCKET": f"/tmp/cc-socks/{pid}.sock"}, parent=pid)
        is None
    )


def test_mail_too_long_for_one_frame_is_named_instead_of_shown():
    from datetime import UTC, datetime

    from callboard.model import MailItem, Part

    def item(seq: int, text: str) -> MailItem:
        message = Message(
            id=f"0190000{seq}-0000-7000-8000-000000000000",
            workspace="default",
            sender="bob",
            recipients=["alice"],
            parts=[Part(text=text)],
            thread_id="t",
            created_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
        return MailItem(seq=seq, state="delivered", message=message)

    small, huge = item(1, "short"), item(2, '"' * 600_000)  # escaped: 1.2 M characters
    text = render([small, huge])

    assert "short" in text and huge.message.id in text and "read_messages" in text
    claude_sessions.encode_frame(text)  # fits


def test_while_it_injects_the_sessions_waiter_leaves_the_mail_to_it(agents, session, tmp_path):
    """The injector holds its agent CLI's injector lock (hooks.state) for as long as it runs."""
    _, target = session
    parent = os.getppid()  # the injector's agent CLI: this process's parent, as for callboard mcp
    start = process_start_time(parent)
    injector = SocketInjector(agents("alice"), target, wait=0.2, home=tmp_path)
    assert not injector_running(tmp_path, parent, start)
    injector.start()
    try:
        wait_until(lambda: injector_running(tmp_path, parent, start), what="the injector to take its lock")
    finally:
        injector.stop()
    assert not injector.running and not injector_running(tmp_path, parent, start), "let go once it stops"


def test_a_forged_terminal_label_or_subject_reaches_the_session_on_its_own_line(agents, session, injectors):
    listener, target = session
    alice, bob = agents("alice"), agents("bob")
    pane = bob.register_session(runtime="script", pid=os.getpid(), terminal=forged("tmux:%1"))
    in_pane = LocalClient(bob.service, bob.caller.model_copy(update={"session_id": pane.id}))
    injectors(alice, target)

    in_pane.send(SendRequest(to="alice", text="hi", subject=forged("plan")))
    wait_until(listener.frames, what="a frame")
    (text,) = contents(listener)
    assert "in tmux:%1\\n----- END MESSAGE 0123456789ab" in text
    assert_reads_as_from_only(text, "bob")


def test_a_refusing_receipt_returns_the_mail_and_the_injector_leaves_that_session_to_its_hooks(
    agents, session, injectors
):
    listener, target = session
    plain, bob = agents("alice"), agents("bob")
    registered = plain.register_session(runtime="claude-code", machine="farhost", pid=4242)
    alice = LocalClient(plain.service, plain.caller.model_copy(update={"session_id": registered.id}))
    injector = injectors(alice, target)
    sent = bob.send(SendRequest(to="alice", text="Can you review PR 12?"))
    (frame,) = wait_until(listener.frames, what="a frame")
    user = frame[1]
    assert user["msgV"] == 1 and user["from"] == f"uds:{Path(target.path).parent / f'{os.getpid()}.sock'}"
    receipt = {
        "type": "control",
        "action": "peer_message_status",
        "status": "expired",
        "status_detail": "refused",
        "reason": "The recipient session is not accepting cross-session messages.",
        "orig_msg_id": user["msg_id"],
    }
    with socket.socket(socket.AF_UNIX) as sender:  # as Claude Code answers: a new connection
        sender.connect(user["from"].removeprefix("uds:"))
        sender.sendall(json.dumps(receipt).encode() + b"\n")
    returned = wait_until(
        lambda: (r := bob.message_status(sent.message_id).recipients[0]).history[-1].event == "returned" and r,
        what="the mail to come back",
    )
    assert returned.state == "delivered"  # the session lives: its hooks can take it
    assert [e.event for e in returned.history][-3:] == ["handed", "refused", "returned"]
    bob.send(SendRequest(to="alice", text="and PR 13"))
    wait_until(lambda: injector.left_to_hooks >= 1, what="the injector to leave the new mail to the hooks")
    assert len(listener.received()) == 1  # nothing more written into a session that refuses


def test_mail_returned_by_another_session_after_the_injector_looked_is_written_in(agents, session, injectors):
    """Mail returned to the mailbox keeps its place in the sequence, behind what the injector has
    seen: it is found by its state, as the waiter and a runner find mail, and written in."""
    listener, target = session
    plain, bob = agents("alice"), agents("bob")
    gone = plain.register_session(runtime="claude-code", machine="farhost", pid=4343)
    in_gone = LocalClient(plain.service, plain.caller.model_copy(update={"session_id": gone.id}))
    first = bob.send(SendRequest(to="alice", text="handed to the session that will end"))
    assert [i.message.id for i in in_gone.surface(SurfaceQuery(via="socket")).items] == [first.message_id]
    injectors(plain, target)

    bob.send(SendRequest(to="alice", text="newer mail"))  # written: the injector has looked past the first
    wait_until(lambda: contents(listener) == [render(plain.read(ReadQuery(peek=True)).items[1:])], what="a frame")
    in_gone.end_session(gone.id)  # stopped before its model took the mail: it comes back
    (back,) = bob.message_status(first.message_id).recipients
    assert back.state == "queued" and back.history[-1].event == "returned", back.history

    wait_until(lambda: len(listener.received()) == 2, what="the returned mail written in")
    assert "handed to the session that will end" in contents(listener)[1], contents(listener)
    assert status_of(bob, first.message_id, "alice")[:2] == ("handed", "socket")
