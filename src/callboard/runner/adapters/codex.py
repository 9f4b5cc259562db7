"""Codex, one process per turn: ``codex exec --json -`` with the prompt on stdin, then
``codex exec resume <thread id> --json -`` for every later turn of the same thread.

Between turns no Codex process runs at all (an idle runner holds no model client). Our MCP server
is given with ``-c mcp_servers.callboard.*`` overrides, never by editing the user's
``config.toml`` (whose model provider and settings still apply). ``approval_policy="never"``
(exec has nobody to ask) and the ``workspace-write`` sandbox; our tools run approved.

Why ``exec`` and not the warm ``app-server``: exec's JSONL events are documented and stable,
resume by thread id is Codex's own headless resume, and a per-turn process cannot be left wedged
between turns; the app-server's protocol changes between versions and would need a JSON-RPC client.

Events: ``thread.started`` → session; ``turn.started`` → took (Codex has put the prompt into the
thread's turn: a resume carries it); ``item.started`` of a tool call → tool; ``agent_message``
→ text; ``turn.completed`` → usage + done; ``turn.failed``/``error`` → failed.

Where ``codex`` comes from: ``Launch.command`` when given, else ``$CALLBOARD_CODEX_BIN``, else
``codex`` on the CLI's PATH.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from callboard.integrations.agent_clis import CODEX
from callboard.runner.adapters.base import Launch, TurnEvent, Usage
from callboard.runner.adapters.claude import usage_line
from callboard.runner.adapters.per_turn import PerTurnAdapter
from callboard.runner.adapters.session_store import content_texts, fenced_in, held_in

SERVER = "callboard"
TOOL_ITEMS = ("mcp_tool_call", "command_execution", "file_change", "web_search")


class CodexAdapter(PerTurnAdapter):
    """The Adapter for Codex (``--cli codex``)."""

    cli = CODEX

    def __init__(self) -> None:
        super().__init__()
        self._totals: dict[str, Usage] = {}  # per thread: Codex reports the thread's running total

    def turn_argv(self, text: str) -> tuple[list[str], str | None]:
        assert self.launch is not None
        resume = ["resume", self.session_id] if self.session_id else []
        return ["exec", *resume, "--json", "--skip-git-repo-check", *overrides(self.launch), "-"], text

    def read(self, event: dict[str, Any]) -> Iterator[TurnEvent]:
        kind = event.get("type")
        if kind == "thread.started" and event.get("thread_id") != self.session_id:
            yield TurnEvent("session", session_id=str(event.get("thread_id")))
        elif kind == "turn.started":
            yield TurnEvent("took")
        elif kind in ("item.started", "item.completed"):
            yield from self._item_events(kind, event.get("item") or {})
        elif kind == "turn.completed":
            usage = self._turn_usage(event.get("usage") or {})
            if self.launch is not None:
                self.launch.log(usage_line(usage))
            yield TurnEvent("usage", usage=usage)
            yield TurnEvent("done", text=self.last_answer or "")
        elif kind == "turn.failed":
            yield TurnEvent("failed", text=str((event.get("error") or {}).get("message") or "turn failed"))
        elif kind == "error" and self.launch is not None:
            self.launch.log(f"codex: {event.get('message') or 'error'}")

    def _item_events(self, kind: str, item: dict[str, Any]) -> Iterator[TurnEvent]:
        item_type = item.get("type")
        if kind == "item.started" and item_type in TOOL_ITEMS:
            yield TurnEvent("tool", text=str(item.get("tool") or item.get("command") or item_type))
        elif kind == "item.completed" and item_type == "agent_message" and item.get("text"):
            yield TurnEvent("text", text=str(item["text"]))

    def _turn_usage(self, reported: dict[str, Any]) -> Usage:
        """This turn's usage: the growth of the thread's total since its last turn (a thread this
        runner has not seen before counts whole: what it used before is not told apart)."""
        total = Usage(
            input_tokens=int(reported.get("input_tokens") or 0) - int(reported.get("cached_input_tokens") or 0),
            output_tokens=int(reported.get("output_tokens") or 0),
            cache_read_tokens=int(reported.get("cached_input_tokens") or 0),
            cache_write_tokens=int(reported.get("cache_write_input_tokens") or 0),
        )
        before = self._totals.get(self.session_id or "", Usage())
        self._totals[self.session_id or ""] = total
        return Usage(
            max(0, total.input_tokens - before.input_tokens),
            max(0, total.output_tokens - before.output_tokens),
            max(0, total.cache_read_tokens - before.cache_read_tokens),
            max(0, total.cache_write_tokens - before.cache_write_tokens),
        )

    def transcript(self) -> Path | None:
        """Codex's own transcript of the thread: ``<CODEX_HOME>/sessions/Y/M/D/rollout-…-<id>.jsonl``."""
        if self.launch is None or not self.session_id:
            return None
        env = self.launch.env
        home = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")
        return next(iter(sorted((home / "sessions").glob(f"*/*/*/rollout-*-{self.session_id}.jsonl"))), None)

    def session_holds(self, message_ids: Sequence[str]) -> list[str]:
        """The thread's rollout, which ``exec resume`` rebuilds the conversation from. Codex says
        ``turn.started`` before it writes the prompt there: a kill between is not carried."""
        return held_in(self.transcript(), message_ids, _user_input)


def _user_input(record: dict[str, Any]) -> list[str]:
    """A rollout's user message: ``response_item`` of a ``message`` with role ``user``."""
    payload = record.get("payload")
    if record.get("type") != "response_item" or not isinstance(payload, dict):
        return []
    if payload.get("type") != "message" or payload.get("role") != "user":
        return []
    return fenced_in(content_texts(payload.get("content")))


def overrides(launch: Launch) -> list[str]:
    """``-c`` overrides: our MCP server (started before the first request, its tools approved),
    no approvals asked, the workspace-write sandbox with the Callboard home writable."""
    server = launch.mcp_server
    env = server.get("env") or {}
    args = server.get("args") or []
    assert isinstance(env, dict) and isinstance(args, list)
    table = "{" + ", ".join(f"{key} = {json.dumps(str(value))}" for key, value in env.items()) + "}"
    settings = {
        "command": json.dumps(str(server["command"])),
        "args": json.dumps([str(a) for a in args]),
        "env": table,
        "required": "true",
        "startup_timeout_sec": "60",
        "tool_timeout_sec": "120",
        "default_tools_approval_mode": '"approve"',
    }
    args = [f"mcp_servers.{SERVER}.{key}={value}" for key, value in settings.items()]
    args += ['approval_policy="never"', 'sandbox_mode="workspace-write"']
    if home := env.get("CALLBOARD_HOME") or launch.env.get("CALLBOARD_HOME"):
        args.append(f"sandbox_workspace_write.writable_roots={json.dumps([str(home)])}")
    return [part for arg in args for part in ("-c", arg)]


ADAPTER = CodexAdapter  # what ``adapter_for("codex")`` makes
