"""Gemini CLI, one process per turn: ``gemini -p <input> -o stream-json --approval-mode yolo``,
the first turn with ``--session-id <uuid>`` (chosen here, so the session is known before the CLI
answers), every later one with ``--resume <uuid>``.

Our MCP server: Gemini CLI reads MCP servers only from settings files (a system file must be
root's, a project file is the user's). So each turn runs with ``GEMINI_CLI_HOME`` set to a home of
the runner's own: its ``.gemini/`` links every entry of the user's ``~/.gemini`` (credentials,
sessions, trusted folders: resume finds the session where the user's CLI keeps it) except
``settings.json``, which is a copy of the user's with our server added. The user's files are never
written. Our tools are named ``mcp_callboard_<tool>``.

Events: ``init`` → session; the ``user`` message → took; ``tool_use`` → tool; ``assistant``
messages (deltas) → text; ``result`` → usage from its ``stats`` (input, output, cached tokens;
no cost), then done (status success) or failed.

Where ``gemini`` comes from: ``Launch.command`` when given, else ``$CALLBOARD_GEMINI_BIN``, else
``gemini`` on the CLI's PATH.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from callboard.integrations.agent_clis import GEMINI
from callboard.runner.adapters.base import Launch, TurnEvent, Usage
from callboard.runner.adapters.per_turn import PerTurnAdapter
from callboard.runner.adapters.session_store import content_texts, fenced_in, held_in

SERVER = "callboard"
SETTINGS = "settings.json"


class GeminiAdapter(PerTurnAdapter):
    """The Adapter for Gemini CLI (``--cli gemini``)."""

    cli = GEMINI

    def __init__(self) -> None:
        super().__init__()
        self._home: Path | None = None
        self._answer: list[str] = []

    def turn_argv(self, text: str) -> tuple[list[str], str | None]:
        argv = ["-p", text, "-o", "stream-json", "--approval-mode", "yolo", "--skip-trust"]
        if self.session_id:
            argv += ["--resume", self.session_id]
        else:
            argv += ["--session-id", str(uuid.uuid4())]
        self._answer = []
        return argv, None

    def turn_env(self, launch: Launch) -> dict[str, str]:
        if self._home is None:
            self._home = Path(tempfile.mkdtemp(prefix="callboard-gemini-"))
        own_home(self._home, user_gemini_dir(launch.env), launch.mcp_server)
        return {**launch.env, "GEMINI_CLI_HOME": str(self._home)}

    def read(self, event: dict[str, Any]) -> Iterator[TurnEvent]:
        kind = event.get("type")
        if kind == "init" and isinstance(event.get("session_id"), str):
            yield TurnEvent("session", session_id=event["session_id"])
        elif kind == "message" and event.get("role") == "user":
            yield TurnEvent("took")
        elif kind == "message" and event.get("role") == "assistant":
            self._answer.append(str(event.get("content") or ""))
        elif kind == "tool_use":
            yield TurnEvent("tool", text=str(event.get("tool_name") or "?"))
        elif kind == "result":
            if self._answer:
                yield TurnEvent("text", text="".join(self._answer))
            stats = event.get("stats") or {}
            cached = int(stats.get("cached") or 0)
            usage = Usage(
                max(0, int(stats.get("input_tokens") or 0) - cached), int(stats.get("output_tokens") or 0), cached
            )
            yield TurnEvent("usage", usage=usage)
            if event.get("status") == "success":
                yield TurnEvent("done")
            else:
                error = event.get("error") or {}
                yield TurnEvent(
                    "failed", text=str(error.get("message") if isinstance(error, dict) else error or "error")
                )

    def transcript(self) -> Path | None:
        """The session's chat file, in the user's own ``.gemini`` (``tmp/<project>/chats/``, named
        ``session-<time>-<first 8 of the id>.jsonl``; its first record names the session)."""
        if self.launch is None or not self.session_id:
            return None
        chats = user_gemini_dir(self.launch.env) / "tmp"
        for path in sorted(chats.glob(f"*/chats/session-*-{self.session_id[:8]}.jsonl")):
            if _first_record(path).get("sessionId") == self.session_id:
                return path
        return None

    def session_holds(self, message_ids: Sequence[str]) -> list[str]:
        """The chat file ``--resume`` continues from: its ``user`` messages."""
        return held_in(self.transcript(), message_ids, _user_input)

    def stop(self, grace: float) -> None:
        super().stop(grace)
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None


def _first_record(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            record = json.loads(file.readline())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _user_input(record: dict[str, Any]) -> list[str]:
    """A chat file's user messages: records of type ``user``, and those in a ``$set`` of the
    whole list of messages (written when a session starts or resumes)."""
    replaced = record.get("$set")
    listed = replaced.get("messages") if isinstance(replaced, dict) else None
    messages = listed if isinstance(listed, list) else [record]
    texts = [
        text
        for message in messages
        if isinstance(message, dict) and message.get("type") == "user"
        for text in content_texts(message.get("content"))
    ]
    return fenced_in(texts)


def user_gemini_dir(env: dict[str, str] | Any) -> Path:
    """The user's own ``.gemini`` folder, as their Gemini CLI finds it."""
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()) / ".gemini"


def own_home(home: Path, user_dir: Path, server: Any) -> None:
    """``home/.gemini``: the user's entries linked, and their settings with our server added."""
    ours = home / ".gemini"
    ours.mkdir(parents=True, exist_ok=True)
    # Where the CLI keeps its sessions: made now if the user has none yet, so that they are kept
    # in the user's folder (a respawned runner resumes them), not in this home that goes.
    (user_dir / "tmp").mkdir(parents=True, exist_ok=True)
    if user_dir.is_dir():
        for entry in user_dir.iterdir():
            link = ours / entry.name
            if entry.name != SETTINGS and not link.is_symlink() and not link.exists():
                link.symlink_to(entry)
    settings: dict[str, Any] = {}
    try:
        loaded = json.loads((user_dir / SETTINGS).read_text(encoding="utf-8"))
        settings = loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError):
        pass
    found = settings.get("mcpServers")
    servers = found if isinstance(found, dict) else {}
    settings["mcpServers"] = {**servers, SERVER: {**dict(server), "trust": True}}
    (ours / SETTINGS).write_text(json.dumps(settings, indent=2), encoding="utf-8")


ADAPTER = GeminiAdapter  # what ``adapter_for("gemini")`` makes
