"""Cursor's agent CLI, one process per turn: ``cursor-agent -p <input> --output-format
stream-json --force --trust``, then ``--resume <chat id>`` on every later turn of the same chat.

Written to Cursor's documentation (it cannot be installed here: its installer is a script from
its own site) and tested with a stand-in that speaks the documented output. Cursor takes MCP
servers only from ``.cursor/mcp.json`` files (no per-run flag), so the runner adds none: run
``callboard install cursor`` once to give it the mailbox tools; without them the agent acts by
running ``callboard`` commands, which act in the runner's session.

Events (stream-json): ``system``/``init`` → session (``session_id``); the ``user`` echo → took;
``tool_call`` started → tool; ``assistant`` → text; ``result`` → done, or failed when
``is_error``. Cursor reports no token usage.

Where it comes from: ``Launch.command`` when given, else ``$CALLBOARD_CURSOR_BIN``, else
``cursor-agent`` or ``agent`` on the CLI's PATH.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from callboard.integrations.agent_clis import CURSOR
from callboard.runner.adapters.base import TurnEvent
from callboard.runner.adapters.per_turn import PerTurnAdapter


class CursorAdapter(PerTurnAdapter):
    """The Adapter for Cursor's agent CLI (``--cli cursor``)."""

    cli = CURSOR

    def turn_argv(self, text: str) -> tuple[list[str], str | None]:
        argv = ["-p", text, "--output-format", "stream-json", "--force", "--trust"]
        if self.session_id:
            argv += ["--resume", self.session_id]
        return argv, None

    def read(self, event: dict[str, Any]) -> Iterator[TurnEvent]:
        kind = event.get("type")
        session = event.get("session_id")
        if kind == "system" and event.get("subtype") == "init" and isinstance(session, str):
            yield TurnEvent("session", session_id=session)
        elif kind == "user":
            yield TurnEvent("took")
        elif kind == "tool_call" and event.get("subtype") == "started":
            call = event.get("tool_call") or {}
            yield TurnEvent("tool", text=next(iter(call), "?") if isinstance(call, dict) else "?")
        elif kind == "assistant":
            content = (event.get("message") or {}).get("content") or []
            text = "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
            if text:
                yield TurnEvent("text", text=text)
        elif kind == "result":
            if isinstance(session, str):
                yield TurnEvent("session", session_id=session)
            if event.get("is_error") or event.get("subtype") not in (None, "success"):
                yield TurnEvent("failed", text=str(event.get("result") or event.get("subtype") or "error"))
            else:
                yield TurnEvent("done", text=str(event.get("result") or ""))


ADAPTER = CursorAdapter  # what ``adapter_for("cursor")`` makes
