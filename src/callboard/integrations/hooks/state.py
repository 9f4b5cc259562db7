"""One agent session's hook state: a small JSON file per session under the callboard home.

``<home>/hooks/<session key>/`` holds ``state.json`` (replaced whole on every write, so a reader
never sees half of one) and ``state.lock`` (held while a hook reads, changes and writes the
state). ``waiters/<pid>-<start>.lock`` is held by the one waiter of agent CLI process ``pid`` for
as long as it runs. ``pushers/<pid>-<start>.lock`` is held by the ``callboard mcp`` of the agent CLI process ``pid``
while it injects that session's mail into its messaging socket (see socket_delivery): its waiter
then leaves the mail to it. ``pushers/<pid>-<start>.delivering`` is held while that server
actually delivers every new message (the session takes peer messages): the per-turn hooks, which
would only find nothing, then exit in their shell without starting Python (see
integrations/install_plans.fast_hook_command). By process, not session id: a session's id
changes on /clear.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from callboard.config import private_folder

HOOKS_FOLDER = "hooks"
INJECTORS_FOLDER = "pushers"  # its name on disk predates the word: installed hooks name it
WAITERS_FOLDER = "waiters"
STALE_SECONDS = 7 * 24 * 3600.0  # a session folder untouched this long belongs to a session long gone
_SAFE_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


@dataclass(slots=True)
class SessionState:
    session: str | None = None  # the callboard session registered for it
    last_beat: float = 0.0  # when that session was last registered or heartbeat (epoch seconds)
    stop_streak: int = 0  # stop hooks blocked in a row (see budget)
    cooldown_until: float = 0.0  # no stop blocks before this time

    @classmethod
    def from_json(cls, data: object) -> SessionState:
        """The state in ``data``; a field of the wrong type is left at its default."""
        state = cls()
        if not isinstance(data, dict):
            return state
        for spec in fields(cls):
            value, default = data.get(spec.name), getattr(state, spec.name)
            if spec.name == "session" and isinstance(value, str):
                state.session = value
            elif isinstance(default, int | float) and isinstance(value, int | float) and not isinstance(value, bool):
                setattr(state, spec.name, type(default)(value))
        return state


def session_key(session_id: str) -> str:
    """A folder name for the agent CLI's session id: the id itself when it is a plain name, else a hash."""
    if _SAFE_KEY.fullmatch(session_id):
        return session_id
    return "h-" + hashlib.sha256(session_id.encode()).hexdigest()[:32]


class SessionFiles:
    """The files of one agent session's hook state."""

    def __init__(self, home: Path, key: str) -> None:
        self.home, self.key = home, key
        self.folder = home / HOOKS_FOLDER / key
        self.path = self.folder / "state.json"

    def load(self) -> SessionState:
        """The state as last written; a fresh one when there is none or it cannot be read."""
        try:
            return SessionState.from_json(json.loads(self.path.read_bytes()))
        except (OSError, ValueError):
            return SessionState()

    def save(self, state: SessionState) -> None:
        self._private_folder()
        temporary = self.folder / f"state.{os.getpid()}.tmp"
        with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
            file.write(json.dumps(asdict(state)))
        os.replace(temporary, self.path)

    @contextmanager
    def updating(self) -> Iterator[SessionState]:
        """The state, to change in the block; written back when the block ends without an error.
        Other hooks of the session wait meanwhile (the lock ends with this process at the latest)."""
        self._private_folder()
        with os.fdopen(os.open(self.folder / "state.lock", os.O_WRONLY | os.O_CREAT, 0o600), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = self.load()
            yield state
            self.save(state)

    def _private_folder(self) -> None:
        private_folder(self.home, HOOKS_FOLDER, self.key)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def process_file(home: Path, folder: str, pid: int, start: int | None, suffix: str = ".lock") -> Path:
    """The file under ``home/folder`` that stands for agent CLI process ``pid`` (started at
    ``start``: a pid used again is another process)."""
    return home / folder / f"{pid}-{start or 0}{suffix}"


def waiter_lock_path(home: Path, pid: int, start: int | None) -> Path:
    return process_file(home, WAITERS_FOLDER, pid, start)


def take_waiter_lock(home: Path, pid: int, start: int | None) -> int | None:
    """Become the one waiter of agent CLI process ``pid``: an open descriptor holding its lock
    (kept until this process ends), or None at once when another waiter holds it. By process:
    a session whose id changed (/clear) is the same process to wake, and two waiters would
    wake it twice for one message."""
    private_folder(home, WAITERS_FOLDER)
    return _lock(waiter_lock_path(home, pid, start))


def take_injector_lock(home: Path, pid: int, start: int | None) -> int | None:
    """Say that this process injects the mail of agent CLI process ``pid`` into its messaging
    socket: an open descriptor holding the lock (kept until closed or this process ends), or
    None when another process holds it."""
    private_folder(home, INJECTORS_FOLDER)
    return _lock(process_file(home, INJECTORS_FOLDER, pid, start))


DELIVERING_SUFFIX = ".delivering"


class DeliveryClaim:
    """Held while this process delivers every new message of agent CLI process ``pid`` into its
    socket; released as soon as it leaves one to the hooks (the session holds or refuses peer
    messages) or stops. Cheap to set again and again: it only takes or drops a lock."""

    def __init__(self, home: Path, pid: int, start: int | None) -> None:
        self.path = process_file(home, INJECTORS_FOLDER, pid, start, DELIVERING_SUFFIX)
        self._fd: int | None = None

    def hold(self, delivering: bool) -> None:
        if delivering and self._fd is None:
            private_folder(self.path.parent.parent, INJECTORS_FOLDER)
            self._fd = _lock(self.path)
        elif not delivering and self._fd is not None:
            fd, self._fd = self._fd, None
            self.path.unlink(missing_ok=True)  # while still held: a hook never sees a claim without a holder
            os.close(fd)


def delivering(home: Path, pid: int, start: int | None) -> bool:
    """Whether a process delivers every new message of agent CLI process ``pid`` (DeliveryClaim)."""
    return _held_by_another(process_file(home, INJECTORS_FOLDER, pid, start, DELIVERING_SUFFIX))


def injector_running(home: Path, pid: int, start: int | None) -> bool:
    """Whether a process injects the mail of agent CLI process ``pid`` into its socket."""
    return _held_by_another(process_file(home, INJECTORS_FOLDER, pid, start))


def _held_by_another(path: Path) -> bool:
    """Whether a live process holds the lock on ``path`` (a lock nobody holds is a leftover)."""
    if not path.exists():
        return False
    fd = _lock(path)
    if fd is None:
        return True
    os.close(fd)
    return False


def _lock(path: Path) -> int | None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def prune(home: Path, now: float | None = None) -> None:
    """Remove the folders of sessions whose state was last written over STALE_SECONDS ago."""
    cutoff = (time.time() if now is None else now) - STALE_SECONDS
    try:
        folders = list((home / HOOKS_FOLDER).iterdir())
    except OSError:
        return
    for folder in folders:
        try:
            written = (folder / "state.json").stat().st_mtime
        except OSError:
            try:
                written = folder.stat().st_mtime
            except OSError:
                continue
        if written < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
