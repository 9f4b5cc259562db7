"""Claude Code's session registry as we read it, and the frame we write into a session's socket."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from callboard.errors import CallboardError, TooLarge
from callboard.integrations.claude_code import sessions as claude_sessions
from callboard.integrations.claude_code.sessions import (
    ClaudeSession,
    MessagingSocketUnavailable,
    encode_frame,
    inbound_policy,
    live_sessions,
    session_of,
    write_frame,
)
from callboard.procs import process_start_time
from tests.support.frame_listener import FrameListener
from tests.support.waiting import wait_until


@pytest.fixture
def config(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A Claude Code config folder named by CLAUDE_CONFIG_DIR, and that environment."""
    folder = tmp_path / "claude-config"
    (folder / "sessions").mkdir(parents=True)
    return folder, {"CLAUDE_CONFIG_DIR": str(folder), "HOME": str(tmp_path / "elsewhere")}


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path: a Unix socket's path is limited to about 100 bytes."""
    with tempfile.TemporaryDirectory(prefix="cb-") as folder:
        yield Path(folder)


def register(folder: Path, pid: int, proc_start: object, **fields: object) -> Path:
    """A registry file as Claude Code 2.1.332 writes it."""
    entry = {
        "pid": pid,
        "sessionId": f"session-{pid}",
        "cwd": "/work/proj",
        "startedAt": 1795986027245,
        "procStart": proc_start,
        "version": "2.1.332",
        "peerProtocol": 1,
        "kind": "interactive",
        "entrypoint": "cli",
        "messagingSocketPath": f"/tmp/cc-socks/{pid}.sock",
        "name": "alpha",
        "nameSource": "user",
        "status": "idle",
        **fields,
    }
    path = folder / "sessions" / f"{pid}.json"
    path.write_text(json.dumps(entry))
    return path


def own_start() -> str:
    start = process_start_time(os.getpid())
    assert start is not None
    return str(start)


def a_dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: the pid is free (and unlikely to be handed out again this soon)
    return child.pid


# --- the registry ----------------------------------------------------------------------------


def test_a_live_session_is_listed_with_what_its_registry_file_says(config):
    folder, env = config
    register(folder, os.getpid(), own_start())

    assert live_sessions(env) == [
        ClaudeSession(
            pid=os.getpid(),
            session_id=f"session-{os.getpid()}",
            cwd="/work/proj",
            name="alpha",
            kind="interactive",
            status="idle",
            socket_path=f"/tmp/cc-socks/{os.getpid()}.sock",
            version="2.1.332",
        )
    ]
    assert session_of(os.getpid(), env) == live_sessions(env)[0]


def test_a_session_whose_process_has_exited_is_not_listed(config):
    folder, env = config
    dead = a_dead_pid()
    register(folder, dead, "12345")
    register(folder, os.getpid(), own_start())

    assert [s.pid for s in live_sessions(env)] == [os.getpid()]
    assert session_of(dead, env) is None


def test_a_recycled_pid_is_not_taken_for_the_session_that_had_it(config):
    # The pid runs, but it is another process than the one that registered: its start differs.
    folder, env = config
    register(folder, os.getpid(), str(int(own_start()) - 1))

    assert live_sessions(env) == []
    assert session_of(os.getpid(), env) is None


def test_an_entry_without_a_start_time_is_not_vouched_for(config):
    folder, env = config
    register(folder, os.getpid(), None)

    assert live_sessions(env) == []


def test_no_socket_is_shown_as_none_and_other_files_are_ignored(config):
    folder, env = config
    register(folder, os.getpid(), own_start(), messagingSocketPath=None, name=None)
    (folder / "sessions" / f"{os.getpid()}.0123abcd.key").write_text('{"peerToken": "x"}')
    (folder / "sessions" / "notes.json").write_text("{}")
    (folder / "sessions" / "1.json").write_text("not json")  # half written, or garbage
    (folder / "sessions" / "2.json").write_text(json.dumps({"pid": 3, "sessionId": "s", "procStart": "1"}))

    (session,) = live_sessions(env)
    assert session.socket_path is None and session.name is None


def test_the_registry_is_under_home_without_claude_config_dir_and_may_be_missing(tmp_path):
    assert live_sessions({"HOME": str(tmp_path)}) == []  # no ~/.claude at all
    (tmp_path / ".claude" / "sessions").mkdir(parents=True)
    register(tmp_path / ".claude", os.getpid(), own_start())

    assert [s.pid for s in live_sessions({"HOME": str(tmp_path)})] == [os.getpid()]


# --- the frame -------------------------------------------------------------------------------


def test_a_frame_is_one_user_message_line_as_the_socket_expects(short_dir):
    with FrameListener(str(short_dir / "1.sock")) as listener:
        write_frame(listener.path, 'hello, "you"\nsecond line ✓')
        (data,) = wait_until(listener.received, what="the connection to end")

    assert data == (
        b'{"type": "user", "message": {"role": "user", "content": "hello, \\"you\\"\\nsecond line \xe2\x9c\x93"}, '
        b'"priority": "next"}\n'
    )


def test_with_a_token_the_auth_line_comes_first_and_a_session_id_pins_the_session(short_dir):
    with FrameListener(str(short_dir / "1.sock")) as listener:
        write_frame(listener.path, "hi", token="6acf8ecb", session_id="d4e6-uuid")
        (lines,) = wait_until(listener.frames, what="the connection to end")

    assert lines == [
        {"type": "auth", "token": "6acf8ecb"},
        {
            "type": "user",
            "message": {"role": "user", "content": "hi"},
            "priority": "next",
            "session_id": "d4e6-uuid",
        },
    ]


def test_a_missing_socket_is_a_clear_error(short_dir):
    with pytest.raises(MessagingSocketUnavailable) as raised:
        write_frame(str(short_dir / "gone.sock"), "hi")

    assert isinstance(raised.value, CallboardError)
    assert raised.value.code == "socket_unavailable"
    assert str(short_dir / "gone.sock") in raised.value.message


def test_a_socket_nobody_listens_on_any_more_is_a_clear_error(short_dir):
    stale = short_dir / "stale.sock"
    left = socket.socket(socket.AF_UNIX)
    left.bind(str(stale))  # a socket file whose process is gone: connecting is refused
    left.close()

    with pytest.raises(MessagingSocketUnavailable, match="refused"):
        write_frame(str(stale), "hi")


def test_a_frame_must_carry_text_and_fit_the_receivers_line():
    with pytest.raises(ValueError):
        encode_frame("")
    with pytest.raises(TooLarge):
        encode_frame("x" * claude_sessions.MAX_LINE_CHARS)
    # Escapes count: 400,000 newlines are 800,000 characters once encoded; emoji two UTF-16 units.
    encode_frame("\n" * 400_000)
    with pytest.raises(TooLarge):
        encode_frame("😀" * 600_000)


# --- the receiver's policy -------------------------------------------------------------------


def write_settings(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"crossSessionInbound": value} if value is not None else {"model": "x"}))


@pytest.fixture
def no_managed_settings(tmp_path, monkeypatch):
    managed = tmp_path / "managed" / "managed-settings.json"
    monkeypatch.setattr(claude_sessions, "MANAGED_SETTINGS", managed)
    return managed


def test_the_inbound_policy_is_unset_unless_a_settings_file_says(config, tmp_path, no_managed_settings):
    folder, env = config
    project = tmp_path / "proj"
    assert inbound_policy(project, env) is None
    write_settings(folder / "settings.json", None)
    assert inbound_policy(project, env) is None
    write_settings(folder / "settings.json", "hold")
    assert inbound_policy(project, env) == "hold"
    write_settings(folder / "settings.json", "sometimes")  # a value Claude Code does not know
    assert inbound_policy(project, env) == "hold"


def test_a_project_can_only_make_the_inbound_policy_stricter(config, tmp_path, no_managed_settings):
    folder, env = config
    project = tmp_path / "proj"
    write_settings(folder / "settings.json", "hold")
    write_settings(project / ".claude" / "settings.json", "accept")
    assert inbound_policy(project, env) == "hold"
    write_settings(project / ".claude" / "settings.local.json", "refuse")
    assert inbound_policy(project, env) == "refuse"


def test_managed_settings_win_over_the_users(config, tmp_path, no_managed_settings):
    folder, env = config
    write_settings(folder / "settings.json", "refuse")
    write_settings(no_managed_settings, "accept")
    assert inbound_policy(tmp_path / "proj", env) == "accept"
