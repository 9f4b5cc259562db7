"""Learning that mail handed to a Claude Code session reached its model: the transcript.

A frame the session's messaging socket accepted, or a waiter's wake, hands mail to the session
(state ``handed``); a busy session keeps it until its current tool call ends. Claude Code
writes each session's transcript to ``<config dir>/projects/<folder>/<session id>.jsonl``, one
JSON record a line. What it records, seen in 2.1.332:

- ``queue-operation`` (enqueue): the frame's text as soon as it is queued, before any model
  request: NOT evidence;
- ``attachment`` (``queued_command``), ``api-request-blob`` and ``user``: written when the turn
  that carries the text is sent to the model: evidence.

So this watcher, run by the session's own ``callboard mcp`` beside the socket injector, reads
the records as they are appended and, for each evidence record that holds a fenced message
(its ``id:`` line and its ``BEGIN MESSAGE`` marker, see ``fence``), tells the mailbox that
message is surfaced (``confirm_surfaced``, evidence "transcript"). Mail not handed (surfaced
by a hook, read) is passed over by the service.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from callboard.errors import CallboardError
from callboard.fence import fenced_ids_in
from callboard.integrations.agent_clis import CLAUDE_CODE, runtime_of
from callboard.integrations.claude_code import sessions as claude_sessions

if TYPE_CHECKING:  # the hooks read transcripts too, and must stay light
    from callboard.client.base import Client

log = logging.getLogger("callboard.transcript")

POLL_SECONDS = 0.25  # how soon a new turn is noticed (one stat of the file)
EVIDENCE_RECORDS = frozenset({"user", "attachment", "api-request-blob", "system"})


def fenced_ids(record: Any) -> list[str]:
    """The ids of the fenced messages a transcript record carries to the model (none for a
    record that is not evidence: a queue operation, the model's own words)."""
    if not isinstance(record, dict) or record.get("type") not in EVIDENCE_RECORDS:
        return []
    found: list[str] = []
    for text in _strings(record):
        found += [i for i in fenced_ids_in(text) if i not in found]
    return found


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if "BEGIN MESSAGE" in value:
            yield value
    elif isinstance(value, dict):
        for inner in value.values():
            yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)


TAIL_BYTES = 512 * 1024  # what a hook reads of a transcript: the last turns, not the whole of it


def ids_in_tail(path: Path, size: int = TAIL_BYTES) -> list[str]:
    """The fenced messages the last ``size`` bytes of a transcript show carried to the model."""
    try:
        with path.open("rb") as file:
            file.seek(0, os.SEEK_END)
            start = max(0, file.tell() - size)
            file.seek(start)
            data = file.read()
    except OSError:
        return []
    lines = data.split(b"\n")
    if start:
        lines = lines[1:]  # cut in the middle of a record
    found: list[str] = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        found += [i for i in fenced_ids(record) if i not in found]
    return found


def transcript_of(session_id: str, env: dict[str, str] | None = None) -> Path | None:
    """The transcript file of Claude Code session ``session_id``, once it exists. Found by name
    under every project folder: how Claude Code spells the folder (the cwd, each character
    that is not a letter or digit as '-') is its business."""
    projects = claude_sessions.config_dir(env) / "projects"
    try:
        return next(projects.glob(f"*/{session_id}.jsonl"), None)
    except OSError:
        return None


class TranscriptWatcher:
    """Reads the transcript of the Claude Code session ``parent`` as it grows and confirms the
    mail its turns carried; until stopped."""

    def __init__(self, client: Client, parent: int, session_id: str | None, *, every: float = POLL_SECONDS) -> None:
        self._client = client
        self._parent = parent
        self._session_id = session_id
        self._every = every
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="callboard transcript watch", daemon=True)
        self._path: Path | None = None
        self._offset = 0
        self._partial = b""
        self.confirmed: list[str] = []

    @classmethod
    def for_this_process(cls, client: Client, env: dict[str, str] | None = None) -> TranscriptWatcher | None:
        """A watcher of the Claude Code session that started this process, or None (not one)."""
        env = dict(os.environ) if env is None else env
        parent = os.getppid()
        session = claude_sessions.session_of(parent, env)
        # Not registered (yet): only Claude Code itself as our parent, not a program that
        # inherited a Claude Code session's environment (a Codex run from its shell).
        if session is None and runtime_of(parent) != CLAUDE_CODE.runtime:
            return None
        session_id = session.session_id if session else env.get(claude_sessions.SESSION_ID_ENV)
        if not session_id:
            return None
        return cls(client, parent, session_id)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop watching, after one last look: the session's last turn may be on disk already,
        and mail it carried must not go back to the mailbox when the session ends next."""
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._every + 5)
        try:
            self.check()
        except Exception as error:  # stopping anyway
            log.warning("could not confirm surfaced mail on the way out: %r", error)

    def _run(self) -> None:
        while not self._stopping.wait(self._every):
            try:
                self.check()
            except CallboardError as error:  # the mailbox away for a moment: the records stay
                log.warning("could not confirm surfaced mail (%s: %s); trying again", error.code, error.message)
            except Exception as error:  # never take the MCP server down
                log.warning("stopped watching the session's transcript: %r", error)
                return

    def _current_path(self) -> Path | None:
        registered = claude_sessions.session_of(self._parent)
        if registered is not None and registered.session_id != self._session_id:  # /clear, resume
            self._session_id, self._path, self._offset, self._partial = registered.session_id, None, 0, b""
        if self._path is None and self._session_id:
            self._path = transcript_of(self._session_id)
        return self._path

    def check(self) -> list[str]:
        """Read what was appended since the last look; confirm the mail it shows surfaced."""
        path = self._current_path()
        if path is None:
            return []
        try:
            size = path.stat().st_size
            if size <= self._offset:
                return []
            with path.open("rb") as file:
                file.seek(self._offset)
                data = file.read(size - self._offset)
        except OSError:
            return []
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        ids: list[str] = []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            ids += [i for i in fenced_ids(record) if i not in ids]
        if not ids:
            return []
        marked = self._client.confirm_surfaced(ids, "transcript").marked
        self.confirmed += marked
        return marked
