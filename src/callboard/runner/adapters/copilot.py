"""GitHub Copilot CLI, one process per turn: ``copilot -p <input> --output-format json``, then
``--resume=<session id>`` on every later turn of the same session.

Our MCP server goes in with ``--additional-mcp-config`` (this run only: the user's
``~/.copilot/mcp-config.json`` is never touched); its tools are named ``callboard-<tool>``.
``--allow-all-tools`` (non-interactive mode has nobody to ask) and ``--no-ask-user``.

Events (JSON lines): ``user.message`` → took (the CLI has put the input into the session: a
resume carries it); ``tool.execution_start`` → tool; ``assistant.message`` → text; ``result``
(``sessionId``, ``exitCode``) → session, then done or failed. Copilot's result holds no tokens:
they are in ``session.shutdown``'s ``modelMetrics``, which the process appends to its session's
``events.jsonl`` (``$COPILOT_HOME`` or ``~/.copilot``, ``session-state/<id>/``) as it exits; the
runner reads this turn's there. No cost in dollars (Copilot counts premium requests).

Where ``copilot`` comes from: ``Launch.command`` when given, else ``$CALLBOARD_COPILOT_BIN``,
else ``copilot`` on the CLI's PATH.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from callboard.integrations.agent_clis import COPILOT
from callboard.runner.adapters.base import TurnEvent, Usage
from callboard.runner.adapters.per_turn import PerTurnAdapter
from callboard.runner.adapters.session_store import fenced_in, held_in
from callboard.runner.process import CliProcess

SERVER = "callboard"


class CopilotAdapter(PerTurnAdapter):
    """The Adapter for GitHub Copilot CLI (``--cli copilot``)."""

    cli = COPILOT

    def turn_argv(self, text: str) -> tuple[list[str], str | None]:
        assert self.launch is not None
        server = {"type": "local", **self.launch.mcp_server, "tools": ["*"]}
        argv = ["-p", text, "--output-format", "json", "--allow-all-tools", "--no-ask-user"]
        argv += ["--additional-mcp-config", json.dumps({"mcpServers": {SERVER: server}})]
        if self.session_id:
            argv.append(f"--resume={self.session_id}")
        return argv, None

    def read(self, event: dict[str, Any]) -> Iterator[TurnEvent]:
        kind, data = event.get("type"), event.get("data") or {}
        if kind == "user.message":
            yield TurnEvent("took")
        elif kind == "tool.execution_start":
            yield TurnEvent("tool", text=str(data.get("toolName") or "?"))
        elif kind == "assistant.message" and data.get("content"):
            yield TurnEvent("text", text=str(data["content"]))
        elif kind == "result":
            if isinstance(event.get("sessionId"), str):
                yield TurnEvent("session", session_id=event["sessionId"])
            code = event.get("exitCode", 0)
            yield TurnEvent("done") if code == 0 else TurnEvent("failed", text=f"copilot ended the turn with {code}")

    def finish(self, process: CliProcess) -> Iterator[TurnEvent]:
        usage = shutdown_usage(self.events_file())
        if usage is not None:
            yield TurnEvent("usage", usage=usage)

    def events_file(self) -> Path | None:
        if self.launch is None or not self.session_id:
            return None
        env = self.launch.env
        home = Path(env.get("COPILOT_HOME") or Path(env.get("HOME") or Path.home()) / ".copilot")
        return home / "session-state" / self.session_id / "events.jsonl"

    def transcript(self) -> Path | None:
        found = self.events_file()
        return found if found is not None and found.exists() else None

    def session_holds(self, message_ids: Sequence[str]) -> list[str]:
        """The session's ``events.jsonl``, which ``--resume`` continues from: its ``user.message``
        records. (Copilot names its session only in the turn's ``result``: a first turn killed
        before it has no session to resume, and its mail is given again in a new one.)"""
        return held_in(self.transcript(), message_ids, _user_input)


def _user_input(record: dict[str, Any]) -> list[str]:
    """An ``events.jsonl`` user message: ``user.message``, its ``content`` as given."""
    data = record.get("data")
    if record.get("type") != "user.message" or not isinstance(data, dict):
        return []
    return fenced_in([data.get("content")])


def shutdown_usage(events: Path | None) -> Usage | None:
    """The tokens of the last run of the session (its last ``session.shutdown``), or None."""
    if events is None:
        return None
    try:
        lines = events.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if '"session.shutdown"' not in line:
            continue
        try:
            metrics = json.loads(line)["data"]["accountingSnapshot"]["modelMetrics"]
        except (ValueError, KeyError, TypeError):
            return None
        total = Usage()
        for model in metrics.values() if isinstance(metrics, dict) else ():
            used = model.get("usage") or {}
            total = total + Usage(
                int(used.get("inputTokens") or 0),
                int(used.get("outputTokens") or 0),
                int(used.get("cacheReadTokens") or 0),
                int(used.get("cacheWriteTokens") or 0),
            )
        return total
    return None


ADAPTER = CopilotAdapter  # what ``adapter_for("copilot")`` makes
