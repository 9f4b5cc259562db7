"""Codex, one process per turn: ``codex exec --json -`` with the prompt on stdin, then
``codex exec resume <thread id> --json -`` for every later turn of the same thread.

Between turns no Codex process runs at all (an idle runner holds no model client). Our MCP server
is given with ``-c mcp_servers.switchboard.*`` overrides, never by editing the user's
``config.toml`` (whose model provider and settings still apply). ``approval_policy="never"``
(exec has nobody to ask) and the ``workspace-write`` sandbox; our tools run approved.

Why ``exec`` and not the warm ``app-server``: exec's JSONL events are documented and stable,
resume by thread id is Codex's own headless resume, and a per-turn process cannot be left wedged
between turns; the app-server's protocol changes between versions and would need a JSON-RPC client.

Events: ``thread.started`` → session; ``turn.started`` → took (Codex has put the prompt into the
thread's turn: a resume carries it); ``item.started`` of a tool call → tool; ``agent_message``
→ text; ``turn.completed`` → usage + done; ``turn.failed``/``error`` → failed.

Where ``codex`` comes from: ``Launch.command`` when given, else ``$SWITCHBOARD_CODEX_BIN``, else
``codex`` on the CLI's PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from switchboard.runner.adapters.base import CliExited, CliUnavailable, Launch, Snapshot, TurnEvent, TurnTimedOut, Usage
from switchboard.runner.adapters.claude import usage_line
from switchboard.runner.adapters.json_lines import next_event
from switchboard.runner.process import CliProcess

SERVER = "switchboard"
BIN_VARIABLE = "SWITCHBOARD_CODEX_BIN"
TOOL_ITEMS = ("mcp_tool_call", "command_execution", "file_change", "web_search")
STOP_GRACE = 5.0  # for a turn's process to end after the runner stops it


class CodexAdapter:
    """The Adapter for Codex (``--cli codex``)."""

    name = "codex"
    runtime = "codex"
    warm = False

    def __init__(self) -> None:
        self._launch: Launch | None = None
        self._executable: list[str] = []
        self._process: CliProcess | None = None
        self._thread_id: str | None = None
        self._totals: dict[str, Usage] = {}  # per thread: Codex reports the thread's running total
        self._last_answer: str | None = None
        self._context: list[str] = []

    def start(self, launch: Launch, resume: str | None = None) -> None:
        """Nothing runs until a turn: check that Codex can be found and remember the thread."""
        self._launch = launch
        self._executable = list(launch.command) or [self._find(launch)]
        self._thread_id = resume or self._thread_id

    def _find(self, launch: Launch) -> str:
        found = launch.env.get(BIN_VARIABLE, "").strip() or shutil.which("codex", path=launch.env.get("PATH"))
        if not found:
            raise CliUnavailable(f"Codex (codex) is not on PATH: install it, or set {BIN_VARIABLE} to its executable.")
        return found

    def _argv(self) -> list[str]:
        assert self._launch is not None
        resume = ["resume", self._thread_id] if self._thread_id else []
        return [*self._executable, "exec", *resume, "--json", "--skip-git-repo-check", *overrides(self._launch), "-"]

    # --- a turn ----------------------------------------------------------------------------------

    def prompt(self, text: str, turn_id: str) -> None:
        launch = self._launch
        if launch is None:
            raise CliExited("Codex was not started")
        parts = [*self._context, text]
        if self._thread_id is None and launch.role_prompt:
            parts.insert(0, launch.role_prompt)  # a new thread: who the agent is, once (resumes keep it)
        self._context.clear()
        self._process = CliProcess(self._argv(), cwd=launch.cwd, env=launch.env, log=launch.log)
        self._process.write_line("\n\n".join(parts))
        self._process.close_stdin()  # exec reads its prompt to the end of its input

    def events(self, deadline: float) -> Iterator[TurnEvent]:
        process = self._process
        if process is None:
            raise CliExited("no Codex turn is running")
        errors: list[str] = []
        log = self._launch.log if self._launch else (lambda line: None)
        try:
            yield from self._turn(process, deadline, log, errors)
        except CliExited:
            if (process.returncode or 0) < 0:
                raise  # killed: the runner starts it again, resuming the thread
            yield TurnEvent("failed", text="; ".join(errors) or process.exit_description())

    def _turn(
        self, process: CliProcess, deadline: float, log: Callable[[str], None], errors: list[str]
    ) -> Iterator[TurnEvent]:
        """The turn's events until it ends; TurnTimedOut at ``deadline``."""
        while (event := next_event(process, deadline, log)) is not None:
            kind = event.get("type")
            if kind == "thread.started" and event.get("thread_id") != self._thread_id:
                self._thread_id = str(event.get("thread_id"))
                log(f"codex session {self._thread_id}")
                yield TurnEvent("session", session_id=self._thread_id)
            elif kind == "turn.started":
                yield TurnEvent("took")
            elif kind in ("item.started", "item.completed"):
                yield from self._item_events(kind, event.get("item") or {})
            elif kind == "turn.completed":
                usage = self._turn_usage(event.get("usage") or {})
                log(usage_line(usage))
                yield TurnEvent("usage", usage=usage)
                yield TurnEvent("done", text=self._last_answer or "")
                return
            elif kind == "turn.failed":
                yield TurnEvent("failed", text=str((event.get("error") or {}).get("message") or "turn failed"))
                return
            elif kind == "error":
                errors.append(str(event.get("message") or "error"))
        raise TurnTimedOut("the Codex turn ran past its limit")

    def _item_events(self, kind: str, item: dict[str, Any]) -> Iterator[TurnEvent]:
        item_type = item.get("type")
        if kind == "item.started" and item_type in TOOL_ITEMS:
            yield TurnEvent("tool", text=str(item.get("tool") or item.get("command") or item_type))
        elif kind == "item.completed" and item_type == "agent_message" and item.get("text"):
            self._last_answer = str(item["text"])
            yield TurnEvent("text", text=self._last_answer)

    def _turn_usage(self, reported: dict[str, Any]) -> Usage:
        """This turn's usage: the growth of the thread's total since its last turn (a thread this
        runner has not seen before counts whole: what it used before is not told apart)."""
        total = Usage(
            input_tokens=int(reported.get("input_tokens") or 0) - int(reported.get("cached_input_tokens") or 0),
            output_tokens=int(reported.get("output_tokens") or 0),
            cache_read_tokens=int(reported.get("cached_input_tokens") or 0),
            cache_write_tokens=int(reported.get("cache_write_input_tokens") or 0),
        )
        before = self._totals.get(self._thread_id or "", Usage())
        self._totals[self._thread_id or ""] = total
        return Usage(
            max(0, total.input_tokens - before.input_tokens),
            max(0, total.output_tokens - before.output_tokens),
            max(0, total.cache_read_tokens - before.cache_read_tokens),
            max(0, total.cache_write_tokens - before.cache_write_tokens),
        )

    def inject(self, text: str) -> bool:
        return False  # exec takes its input once: the mail waits for the next turn

    def interrupt(self) -> None:
        """SIGINT to the turn's process group: Codex cancels the turn and exits."""
        if self._process is not None and self._process.alive():
            try:
                os.killpg(self._process.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    # --- the session -----------------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self._thread_id

    def clear(self) -> None:
        self._thread_id = None  # the next turn starts a new thread

    def alive(self) -> bool:
        return True  # nothing to keep alive between turns

    def stop(self, grace: float) -> None:
        if self._process is not None:
            self._process.terminate(grace)

    def snapshot(self) -> Snapshot:
        return Snapshot(self.name, self._thread_id, self._rollout(), self._last_answer)

    def _rollout(self) -> Path | None:
        """Codex's own transcript of the thread: ``<CODEX_HOME>/sessions/Y/M/D/rollout-…-<id>.jsonl``."""
        if self._launch is None or not self._thread_id:
            return None
        env = self._launch.env
        home = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")
        return next(iter(sorted((home / "sessions").glob(f"*/*/*/rollout-*-{self._thread_id}.jsonl"))), None)

    def inject_context(self, text: str) -> None:
        self._context.append(text)


def overrides(launch: Launch) -> list[str]:
    """``-c`` overrides: our MCP server (started before the first request, its tools approved),
    no approvals asked, the workspace-write sandbox with the Switchboard home writable."""
    server = launch.mcp_server
    env = server.get("env") or {}
    assert isinstance(env, dict)
    table = "{" + ", ".join(f"{key} = {json.dumps(str(value))}" for key, value in env.items()) + "}"
    settings = {
        "command": json.dumps(str(server["command"])),
        "args": json.dumps([str(a) for a in server.get("args") or []]),  # type: ignore[union-attr]
        "env": table,
        "required": "true",
        "startup_timeout_sec": "60",
        "tool_timeout_sec": "120",
        "default_tools_approval_mode": '"approve"',
    }
    args = [f"mcp_servers.{SERVER}.{key}={value}" for key, value in settings.items()]
    args += ['approval_policy="never"', 'sandbox_mode="workspace-write"']
    if home := env.get("SWITCHBOARD_HOME") or launch.env.get("SWITCHBOARD_HOME"):
        args.append(f"sandbox_workspace_write.writable_roots={json.dumps([str(home)])}")
    return [part for arg in args for part in ("-c", arg)]
