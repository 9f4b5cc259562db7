"""Claude Code's own sessions on this machine, and writing a message into one of them.

Each running Claude Code (2.1.332 and later: interactive, ``-p --input-format stream-json``,
single-shot ``-p``) registers itself in ``<config dir>/sessions/<pid>.json`` and listens on a
per-session Unix socket, its messaging inbox. One JSON line written there as a ``user`` frame
becomes a user-role message: an idle session starts a turn with it, a busy one gets it after
its current tool call. The format is Claude Code's internal protocol, undocumented; what is
known of it is in shared/reference/claude-code-messaging-socket.md.

The receiver decides what to do with a frame (its ``crossSessionInbound`` setting: accept,
hold for the user's review, refuse) and never answers on the connection: a written frame is
not proof that the model saw it. ``inbound_policy`` reads the setting where it can, so a
sender can leave mail to other paths instead of writing into a session that will not take it.

Stdlib only; imports only pure modules of ours.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callboard.errors import TooLarge, Unavailable
from callboard.procs import has_proc, process_alive

SOCKET_ENV = "CLAUDE_CODE_MESSAGING_SOCKET"  # in the environment of a session's own children
TOKEN_ENV = "CLAUDE_CODE_MESSAGING_TOKEN"
SESSION_ID_ENV = "CLAUDE_CODE_SESSION_ID"
# The receiver drops a line longer than this many characters (JavaScript's, UTF-16 units).
MAX_LINE_CHARS = 1_048_576
CONNECT_TIMEOUT_SECONDS = 5.0  # as Claude Code's own sender
# Where Linux keeps managed (administrator) settings; they win over the user's.
MANAGED_SETTINGS = Path("/etc/claude-code/managed-settings.json")
INBOUND_POLICIES = ("accept", "hold", "refuse")  # strictness grows to the right


class MessagingSocketUnavailable(Unavailable):
    """A Claude Code session's messaging socket cannot be reached (or took no frame)."""

    code = "socket_unavailable"


@dataclass(frozen=True, slots=True)
class ClaudeSession:
    """One live Claude Code session, as its registry file describes it."""

    pid: int
    session_id: str
    cwd: str
    name: str | None
    kind: str | None  # interactive | bg | daemon | daemon-worker
    status: str | None  # busy | idle | shell | waiting
    socket_path: str | None  # None: no messaging socket (older version, or the feature is off)
    version: str | None


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's configuration folder: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    env = os.environ if env is None else env
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(env.get("HOME") or Path.home()) / ".claude"


def live_sessions(env: Mapping[str, str] | None = None) -> list[ClaudeSession]:
    """The registered sessions whose process still runs, by pid. A file whose pid now belongs
    to another process (its start time differs from ``procStart``) is not listed."""
    folder = config_dir(env) / "sessions"
    try:
        paths = [p for p in folder.iterdir() if p.suffix == ".json" and p.stem.isdigit()]
    except OSError:
        return []
    found = (_read_entry(path) for path in paths)
    return sorted((s for s in found if s is not None), key=lambda s: s.pid)


def session_of(pid: int, env: Mapping[str, str] | None = None) -> ClaudeSession | None:
    """The live session run by process ``pid``, if it is one."""
    return _read_entry(config_dir(env) / "sessions" / f"{pid}.json")


def _read_entry(path: Path) -> ClaudeSession | None:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # gone since listed, or being rewritten: not a session we can vouch for
    if not isinstance(entry, dict):
        return None
    pid, session_id = entry.get("pid"), entry.get("sessionId")
    if not isinstance(pid, int) or str(pid) != path.stem or not isinstance(session_id, str):
        return None
    if not _is_running(pid, entry.get("procStart")):
        return None
    return ClaudeSession(
        pid=pid,
        session_id=session_id,
        cwd=_text(entry.get("cwd")) or "",
        name=_text(entry.get("name")),
        kind=_text(entry.get("kind")),
        status=_text(entry.get("status")),
        socket_path=_text(entry.get("messagingSocketPath")),
        version=_text(entry.get("version")),
    )


def _is_running(pid: int, proc_start: Any) -> bool:
    # procStart is the process's start time in clock ticks since boot (/proc/<pid>/stat field
    # 22), as a string. Without /proc (macOS) only "does the pid exist" can be asked.
    if not has_proc():
        return process_alive(pid, None)
    try:
        started = int(proc_start)
    except (TypeError, ValueError):
        return False  # nothing to tell a recycled pid by: not vouched for
    return process_alive(pid, started)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def peer_token(session: ClaudeSession, env: Mapping[str, str] | None = None) -> str | None:
    """The token that marks a frame as from the same user's own process ("verifiedLocal"):
    the ``peerToken`` of the session's key file, ``<pid>.<sha256 of its socket path>.key``
    beside its registry file (readable by its user only). None without a socket or a key file."""
    if not session.socket_path:
        return None
    digest = hashlib.sha256(session.socket_path.encode("utf-8")).hexdigest()
    key = read_settings(config_dir(env) / "sessions" / f"{session.pid}.{digest}.key")
    return _text(key.get("peerToken")) if key is not None else None


# --- the frame -------------------------------------------------------------------------------


def encode_frame(
    text: str,
    *,
    token: str | None = None,
    session_id: str | None = None,
    frame_id: str | None = None,
    reply_to: str | None = None,
) -> bytes:
    """The bytes that hand ``text`` to a session as one user message: an optional auth line,
    then one ``user`` frame. With ``session_id`` the receiver drops the frame unless it is that
    session (a socket path or pid used again by a later session). With ``frame_id`` and
    ``reply_to`` ("uds:<path>"), the receiver sends its receipts for the frame there
    (``socket_receipts``)."""
    if not isinstance(text, str) or not text:
        raise ValueError("a frame's text must be a non-empty string")
    frame: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": text}, "priority": "next"}
    if frame_id and reply_to:
        frame = {"msgV": 1, "msg_id": frame_id, **frame, "from": reply_to}
    if session_id:
        frame["session_id"] = session_id
    line = json.dumps(frame, ensure_ascii=False)
    if _utf16_units(line) > MAX_LINE_CHARS - 1:  # the newline counts
        raise TooLarge(
            f"the message is too long for a Claude Code messaging frame ({MAX_LINE_CHARS} characters at most)."
        )
    auth = json.dumps({"type": "auth", "token": token}) + "\n" if token else ""
    return (auth + line + "\n").encode("utf-8")


def content_chars(text: str) -> int:
    """How much of a frame's line ``text`` takes once encoded (JSON-escaped, in the
    receiver's UTF-16 units)."""
    return _utf16_units(json.dumps(text, ensure_ascii=False))


def _utf16_units(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def connect(socket_path: str, *, timeout: float = CONNECT_TIMEOUT_SECONDS) -> socket.socket:
    """A connection to a session's messaging socket, or MessagingSocketUnavailable."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(socket_path)
    except OSError as error:
        sock.close()
        raise _unavailable(socket_path, error) from None
    return sock


def send_frame(sock: socket.socket, data: bytes, socket_path: str) -> None:
    """Write ``data`` (from encode_frame) on an open connection, end it and close it."""
    try:
        with sock:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)  # the line is complete: the receiver reads it now
    except OSError as error:
        raise _unavailable(socket_path, error) from None


def write_frame(
    socket_path: str,
    text: str,
    *,
    token: str | None = None,
    session_id: str | None = None,
    timeout: float = CONNECT_TIMEOUT_SECONDS,
) -> None:
    """Write ``text`` into the session listening on ``socket_path`` as one user message.

    Nothing comes back on the connection: success means the frame was handed over, not that
    the session delivered it (it may hold or refuse it, or drop it for a wrong session_id)."""
    data = encode_frame(text, token=token, session_id=session_id)
    send_frame(connect(socket_path, timeout=timeout), data, socket_path)


def _unavailable(socket_path: str, error: OSError) -> MessagingSocketUnavailable:
    reason = error.strerror or type(error).__name__
    return MessagingSocketUnavailable(
        f"cannot write to the Claude Code messaging socket {socket_path} ({reason}): "
        "the session has probably ended; send to a live session or leave the mail for its hooks.",
        socket=socket_path,
    )


# --- the receiver's policy -------------------------------------------------------------------


def inbound_policy(project_dir: Path, env: Mapping[str, str] | None = None) -> str | None:
    """What the session's ``crossSessionInbound`` setting says, where we can read it: 'accept',
    'hold', 'refuse', or None when unset (then a frame from the session's own child process is
    accepted). The managed settings file wins, then the user's settings; the project's
    ``.claude/settings.json`` and ``settings.local.json`` can only make it stricter. A value
    Claude Code does not know counts as 'hold'. Not seen: server-managed or MDM policy and
    ``--settings`` given on Claude Code's command line."""
    base = _setting(MANAGED_SETTINGS)
    if base is None:
        base = _setting(config_dir(env) / "settings.json")
    policy = base
    for path in (project_dir / ".claude" / "settings.json", project_dir / ".claude" / "settings.local.json"):
        local = _setting(path)
        if local is not None and (policy is None or _strictness(local) > _strictness(policy)):
            policy = local
    return policy


def _setting(path: Path) -> str | None:
    settings = read_settings(path)
    return policy_in(settings) if settings is not None else None


def policy_in(settings: Mapping[str, Any]) -> str | None:
    """The ``crossSessionInbound`` one settings document sets (a value Claude Code does not
    know counts as 'hold'), or None."""
    value = settings.get("crossSessionInbound")
    if value is None:
        return None
    return value if value in INBOUND_POLICIES else "hold"


def default_mode_in(settings: Mapping[str, Any]) -> str | None:
    """The permission mode one settings document starts a session in (``permissions.defaultMode``)."""
    permissions = settings.get("permissions")
    return _text(permissions.get("defaultMode")) if isinstance(permissions, dict) else None


def default_modes(project_dir: Path, env: Mapping[str, str] | None = None) -> set[str]:
    """Every ``permissions.defaultMode`` that the settings files we can read set for a session
    in ``project_dir`` (managed, the user's, the project's and its local ones). Which one wins
    is not decided here: a caller that must not misjudge a bypassing session asks whether any
    says so."""
    paths = (
        MANAGED_SETTINGS,
        config_dir(env) / "settings.json",
        project_dir / ".claude" / "settings.json",
        project_dir / ".claude" / "settings.local.json",
    )
    found = (read_settings(path) for path in paths)
    return {mode for settings in found if settings is not None and (mode := default_mode_in(settings))}


def read_settings(path: Path) -> dict[str, Any] | None:
    """A settings (or key) file's JSON object, or None when it is absent or not one."""
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return settings if isinstance(settings, dict) else None


def _strictness(policy: str) -> int:
    return INBOUND_POLICIES.index(policy)
