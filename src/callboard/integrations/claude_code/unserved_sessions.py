"""Claude Code sessions Callboard does not serve, into which the sender's injector wrote mail.

The injector (``inject``) registers such a session as a session of its agent (its pid and
start time on this machine, runtime ``claude-code-unserved``, ``Session.unserved``) before it hands the session the
mail, so the service judges that session like any other: mail handed to it goes back to the
mailbox once its process is gone (``handing``), and a status names it ``agent@machine#pid``.

Nothing of ours runs inside such a session to watch its transcript, so the injector keeps a note
here: ``<home>/unserved/<pid>-<start>.json`` with the agent, the Callboard session and the
Claude Code session ids the process had (its id changes on /clear; its registry file is gone
once it ends, the note is not). ``carried`` reads those transcripts for the records that show a
model request carried a message (``transcript_watch``), so the face can confirm it surfaced
before the service judges the mail: at the next injection and before a status. A note is dropped
once its process is gone and it has been read a last time.

Stdlib only, beside our pure modules and the transcript reader.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from callboard.config import private_folder
from callboard.integrations.claude_code.transcript_watch import ids_in_tail, transcript_of

FOLDER = "unserved"
STALE_SECONDS = 7 * 24 * 3600.0  # a note untouched this long is of a session long gone


@dataclass(frozen=True, slots=True)
class Note:
    """One unserved Claude Code session the injector handed mail to."""

    workspace: str
    agent: str
    session: str  # the Callboard session registered for it
    pid: int
    proc_start: int | None
    claude_sessions: tuple[str, ...]  # its Claude Code session ids, oldest first

    @property
    def key(self) -> str:
        return f"{self.pid}-{self.proc_start if self.proc_start is not None else 'x'}"


def remember(home: Path, note: Note) -> Note:
    """Keep ``note``, adding the Claude Code session ids an earlier note of the process had."""
    earlier = _read(_folder(home) / f"{note.key}.json")
    if earlier is not None and (earlier.agent, earlier.session) == (note.agent, note.session):
        ids = tuple(dict.fromkeys([*earlier.claude_sessions, *note.claude_sessions]))
        note = Note(note.workspace, note.agent, note.session, note.pid, note.proc_start, ids)
    folder = _folder(home)
    # Replaced whole, so a reader never sees half of one.
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".note-")
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        json.dump({**asdict(note), "claude_sessions": list(note.claude_sessions)}, file)
    os.replace(temporary, folder / f"{note.key}.json")
    return note


def notes(home: Path) -> list[Note]:
    """The notes kept (stale ones are dropped on the way)."""
    folder = home / FOLDER
    try:
        paths = [p for p in folder.iterdir() if p.suffix == ".json" and not p.name.startswith(".")]
    except OSError:
        return []
    found: list[Note] = []
    for path in paths:
        note = _read(path)
        if note is None or _stale(path):
            path.unlink(missing_ok=True)
            continue
        found.append(note)
    return sorted(found, key=lambda n: n.pid)


def forget(home: Path, note: Note) -> None:
    (home / FOLDER / f"{note.key}.json").unlink(missing_ok=True)


def carried(note: Note, env: Mapping[str, str] | None = None) -> list[str]:
    """The fenced messages the session's transcripts show a model request carried."""
    found: list[str] = []
    for session_id in note.claude_sessions:
        path = transcript_of(session_id, dict(env) if env is not None else None)
        if path is not None:
            found += [i for i in ids_in_tail(path) if i not in found]
    return found


def _folder(home: Path) -> Path:
    return private_folder(home, FOLDER)


def _read(path: Path) -> Note | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        ids = data["claude_sessions"]
        start = data["proc_start"]
        note = Note(
            workspace=str(data["workspace"]),
            agent=str(data["agent"]),
            session=str(data["session"]),
            pid=int(data["pid"]),
            proc_start=int(start) if start is not None else None,
            claude_sessions=tuple(str(i) for i in ids),
        )
    except (OSError, ValueError, TypeError, KeyError):
        return None  # gone, half written by an older version, or not ours: not vouched for
    return note if path.name == f"{note.key}.json" else None


def _stale(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime > STALE_SECONDS
    except OSError:
        return True
