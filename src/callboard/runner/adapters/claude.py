"""Claude Code, kept warm: one ``claude -p`` over stream-json for as long as the runner lives.

The process reads one JSON line per user message on stdin and prints one JSON line per event
(``system/init`` at the start of each turn with the session id, ``assistant``, ``user`` tool
results, ``result`` at the turn's end with usage and cost). Our MCP server is handed to it on
the command line (``--mcp-config`` + ``--strict-mcp-config``): the user's own config files are
never touched. A respawn continues the session with ``--resume <session id>``.

Where ``claude`` comes from: ``Launch.command`` when the runner gives one (its leading args kept,
``--model opus`` say), else ``$CALLBOARD_CLAUDE_BIN``, else ``claude`` on the CLI's PATH.

When it is ready: ``start`` returns only once the CLI can take a prompt with our tools. Spawned,
it still boots (Node, its MCP servers) for seconds, and a prompt written meanwhile waits on that.
So ``start`` asks it, on its stdin, what the Agent SDK asks first: ``initialize`` (answered once
its input loop runs), then ``mcp_status`` until our server says ``connected``. A CLI that does not
get there within ``Launch.start_limit``, or whose server failed, is ended: a failed start. Those
``control_response`` lines are read by ``start``; a turn's reader passes over any others.

When the turn counts as taken (the mail surfaced): on the turn's first ``assistant`` event. That
event is the model's answer to a request that carried the prompt, so the model has seen the mail;
the ``--replay-user-messages`` echo comes earlier but only says the CLI queued the line (a crash
between the echo and the request would lose a message marked surfaced).
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from callboard.integrations.agent_clis import CLAUDE_CODE
from callboard.integrations.claude_code.sessions import config_dir
from callboard.integrations.claude_code.transcript_watch import fenced_ids
from callboard.runner.adapters.base import (
    CliExited,
    CliUnavailable,
    Launch,
    Snapshot,
    TurnEvent,
    TurnTimedOut,
    Usage,
)
from callboard.runner.adapters.json_lines import drain, next_event
from callboard.runner.adapters.session_store import held_in
from callboard.runner.process import CliProcess

SERVER = "callboard"  # our MCP server's name in the CLI's config: its tools are mcp__callboard__*
# Our tools, and Bash (the agent acts by running `callboard` and its own work's commands); file
# edits in its folder are accepted. Nothing asks: a headless CLI has nobody to ask.
ALLOWED_TOOLS = (f"mcp__{SERVER}", "Bash")
PERMISSION_MODE = "acceptEdits"
CLEAR_TIMEOUT = 30.0
# Getting ready (start): mcp_status is asked again this often while our server is connecting.
READY_POLL_SECONDS = 0.2
CONNECTING = frozenset({"pending"})  # mcp_status's word for a server on its way up; others are final
READY_FAILED_GRACE = 2.0  # a CLI that did not get ready is ended: SIGTERM, SIGKILL after this
# No messaging socket: the runner alone feeds the CLI its mail. With one, a sender's injector could
# write mail into the session past the runner (a turn the runner did not start, mail surfaced twice).
NO_SOCKET = {"CLAUDE_CODE_HARBOR_KITE": "0"}  # for the CLI to answer /clear with its fresh session


class ClaudeAdapter:
    """The Adapter for Claude Code (``--cli claude``)."""

    cli = CLAUDE_CODE
    name = cli.name
    runtime = cli.runtime
    warm = True

    def __init__(self) -> None:
        self._launch: Launch | None = None
        self._process: CliProcess | None = None
        self._session_id: str | None = None
        self._cost_seen = 0.0  # the session's cumulative cost at the last result (the CLI reports a total)
        self._last_answer: str | None = None
        self._context: list[str] = []
        self._requests = 0  # control requests sent: each has an id of its own

    # --- the process -----------------------------------------------------------------------------

    def start(self, launch: Launch, resume: str | None = None) -> None:
        self._launch = launch
        argv = [*self._executable(launch), *self._arguments(launch)]
        if resume:
            argv += ["--resume", resume]
            self._session_id = resume
        env = {**NO_SOCKET, "MCP_CONNECTION_NONBLOCKING": "false", **launch.env}  # our tools before the first request
        self._process = CliProcess(argv, cwd=launch.cwd, env=env, log=launch.log)
        launch.log(f"claude started (pid {self._process.pid}){f', resuming {resume}' if resume else ''}")
        self._cost_seen = 0.0
        try:
            self._await_ready(self._process, launch.start_limit)
        except CliExited:
            self._process.terminate(READY_FAILED_GRACE)  # not ready is not started: nothing is left running
            raise

    def _await_ready(self, process: CliProcess, limit: float) -> None:
        """Return once the CLI answered ``initialize`` and ``mcp_status`` says our server is
        connected; CliExited when it ended first, refused, its server failed, or ``limit`` passed."""
        began = time.monotonic()
        deadline = began + limit
        init = self._control(process, "initialize", deadline, limit)
        while True:
            status, error = _server_status(self._control(process, "mcp_status", deadline, limit))
            if status == "connected":
                break
            if status not in CONNECTING:
                why = f": {error}" if error else ""
                raise CliExited(
                    f"claude (pid {process.pid}): its MCP server {SERVER!r} did not connect ({status or 'not listed'}{why})"
                )
            if time.monotonic() + READY_POLL_SECONDS >= deadline:
                raise CliExited(
                    f"claude (pid {process.pid}): its MCP server {SERVER!r} was still {status} after {limit:g} s"
                )
            time.sleep(READY_POLL_SECONDS)  # still connecting: ask again
        version = init.get("claude_code_version")
        self._log(
            f"claude ready (pid {process.pid}): answered initialize{f' (Claude Code {version})' if version else ''}"
            f" and mcp_status ({SERVER} connected) in {time.monotonic() - began:.1f} s"
        )

    def _control(self, process: CliProcess, subtype: str, deadline: float, limit: float) -> dict[str, Any]:
        """Send the CLI a control request and return its answer's ``response``; CliExited when it
        answered with an error, ended, or did not answer by ``deadline``."""
        self._requests += 1
        request_id = f"ready-{subtype}-{self._requests}"
        process.write_line(
            json.dumps({"type": "control_request", "request_id": request_id, "request": {"subtype": subtype}})
        )
        while (event := next_event(process, deadline, self._log)) is not None:
            if event.get("type") == "system" and event.get("subtype") == "init":
                list(self._session_event(event))  # a resumed session may say its id before a turn
            if event.get("type") != "control_response":
                continue
            answer = event.get("response") or {}
            if answer.get("request_id") != request_id:
                continue
            if answer.get("subtype") != "success":
                raise CliExited(
                    f"claude (pid {process.pid}) refused its {subtype} request: {answer.get('error') or answer}"
                )
            response = answer.get("response")
            return response if isinstance(response, dict) else {}
        tail = " | ".join(process.stderr_tail()[-3:])
        raise CliExited(
            f"claude (pid {process.pid}) was not ready within {limit:g} s: no answer to its {subtype} request"
            + (f": {tail}" if tail else "")
        )

    def _executable(self, launch: Launch) -> list[str]:
        if launch.command:
            return list(launch.command)
        configured = launch.env.get(self.cli.bin_variable, "").strip()
        found = configured or next(
            filter(None, (shutil.which(name, path=launch.env.get("PATH")) for name in self.cli.executables)), None
        )
        if not found:
            names = " or ".join(self.cli.executables)
            raise CliUnavailable(
                f"{self.cli.title} ({names}) is not on PATH: install it, or set {self.cli.bin_variable} to its executable."
            )
        return [found]

    def _arguments(self, launch: Launch) -> list[str]:
        config = {"mcpServers": {SERVER: {"type": "stdio", **launch.mcp_server}}}
        args = [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--mcp-config",
            json.dumps(config),
            "--strict-mcp-config",
            "--permission-mode",
            PERMISSION_MODE,
            "--allowedTools",
            ",".join(ALLOWED_TOOLS),
        ]
        if launch.role_prompt:
            args += ["--append-system-prompt", launch.role_prompt]
        return args

    def alive(self) -> bool:
        return self._process is not None and self._process.alive()

    def stop(self, grace: float) -> None:
        if self._process is not None:
            self._process.close_stdin()  # it exits after its last turn
            if self._process.wait(grace / 2) is None:
                self._process.terminate(grace / 2)
            else:
                self._process.terminate(0)  # what it started and left behind

    # --- turns -----------------------------------------------------------------------------------

    def prompt(self, text: str, turn_id: str) -> None:
        process = self._running()
        drain(process, self._log)  # events of no turn of ours (nothing should start one, but a hook could)
        if self._context:
            text = "\n\n".join([*self._context, text])
            self._context.clear()
        process.write_line(json.dumps(_user_line(text)))

    def events(self, deadline: float) -> Iterator[TurnEvent]:
        process = self._running()
        took = False
        while True:
            event = next_event(process, deadline, self._log)  # CliExited when it dies
            if event is None:
                raise TurnTimedOut("the Claude Code turn ran past its limit")
            kind = event.get("type")
            if kind == "system" and event.get("subtype") == "init":
                yield from self._session_event(event)
            elif kind == "assistant" and event.get("parent_tool_use_id") is None:
                if not took:
                    took = True
                    yield TurnEvent("took")
                yield from _assistant_events(event)
            elif kind == "result":
                if not took:
                    yield TurnEvent("took")
                yield from self._result_events(event)
                return

    def _session_event(self, event: dict[str, Any]) -> Iterator[TurnEvent]:
        session = event.get("session_id")
        if isinstance(session, str) and session != self._session_id:
            if self._session_id is not None:
                self._cost_seen = 0.0  # a new session's total starts again
            self._session_id = session
            self._log(f"claude session {session}")
            yield TurnEvent("session", session_id=session)

    def _result_events(self, event: dict[str, Any]) -> Iterator[TurnEvent]:
        usage = self._usage_of(event)
        self._log(usage_line(usage))
        yield TurnEvent("usage", usage=usage)
        text = event.get("result")
        if isinstance(text, str) and text:
            self._last_answer = text
        if event.get("is_error") or event.get("subtype") != "success":
            reasons = event.get("errors") or [text or event.get("subtype") or "error"]
            yield TurnEvent("failed", text="; ".join(str(r) for r in reasons))
        else:
            yield TurnEvent("done", text=text if isinstance(text, str) else "")

    def _usage_of(self, event: dict[str, Any]) -> Usage:
        """The turn's usage: its tokens as the result gives them; its cost as the growth of the
        session's total (``total_cost_usd`` adds up over the process's session)."""
        usage = event.get("usage") or {}
        total = event.get("total_cost_usd")
        cost = None
        if isinstance(total, int | float):
            cost = total - self._cost_seen if total >= self._cost_seen else float(total)
            self._cost_seen = float(total)
        return Usage(
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cache_read_tokens=int(usage.get("cache_read_input_tokens") or 0),
            cache_write_tokens=int(usage.get("cache_creation_input_tokens") or 0),
            cost_usd=cost,
        )

    def inject(self, text: str) -> bool:
        """Mid-turn, after the current tool round (Claude Code's ``priority: next``)."""
        if not self.alive():
            return False
        self._running().write_line(json.dumps(_user_line(text, priority="next")))
        return True

    def interrupt(self) -> None:
        if self.alive():
            request = {"type": "control_request", "request_id": f"interrupt-{time.monotonic_ns()}"}
            self._running().write_line(json.dumps({**request, "request": {"subtype": "interrupt"}}))

    # --- the session -----------------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self._session_id

    def clear(self) -> None:
        """``/clear`` as a user line: headless, the CLI answers with a ``conversation_reset``, an
        empty result and, in the next init, a new session id (tools, MCP and prompt kept)."""
        process = self._running()
        drain(process, self._log)
        process.write_line(json.dumps(_user_line("/clear")))
        deadline = time.monotonic() + CLEAR_TIMEOUT
        while (event := next_event(process, deadline, self._log)) is not None:
            if event.get("type") == "system" and event.get("subtype") == "init":
                list(self._session_event(event))
            if event.get("type") == "result":
                self._cost_seen = 0.0
                return
        raise TurnTimedOut(f"Claude Code did not answer /clear in {CLEAR_TIMEOUT:g} s")

    def snapshot(self) -> Snapshot:
        transcript = None
        if self._launch is not None and self._session_id:
            folder = config_dir(self._launch.env) / "projects" / project_slug(self._launch.cwd)
            transcript = folder / f"{self._session_id}.jsonl"
        return Snapshot(self.name, self._session_id, transcript, self._last_answer)

    def session_holds(self, message_ids: Sequence[str]) -> list[str]:
        """The session's transcript, which ``--resume`` loads: the records that carried mail to
        the model (the transcript watcher's rule). Claude Code writes the prompt there before its
        request; a kill before that, or before a turn started at all, is not carried."""
        return held_in(self.snapshot().transcript, message_ids, fenced_ids)

    def inject_context(self, text: str) -> None:
        self._context.append(text)

    def _log(self, line: str) -> None:
        if self._launch is not None:
            self._launch.log(line)

    def _running(self) -> CliProcess:
        if self._process is None:
            raise CliExited("Claude Code was not started")
        return self._process


def usage_line(usage: Usage) -> str:
    """The turn's usage as the runner's log says it (one line, the same for every CLI)."""
    cost = "" if usage.cost_usd is None else f" cost_usd={usage.cost_usd:.6f}"
    return (
        f"usage: input={usage.input_tokens} output={usage.output_tokens} "
        f"cache_read={usage.cache_read_tokens} cache_write={usage.cache_write_tokens}{cost}"
    )


def project_slug(cwd: Path) -> str:
    """The folder Claude Code keeps a working folder's transcripts in (every other character → -)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def _user_line(text: str, priority: str | None = None) -> dict[str, Any]:
    line: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": text}}
    if priority:
        line["priority"] = priority
    return line


def _server_status(response: dict[str, Any]) -> tuple[str | None, str | None]:
    """Our server's status in an ``mcp_status`` answer, and the error it gives (None: not listed)."""
    servers = response.get("mcpServers")
    for server in servers if isinstance(servers, list) else []:
        if isinstance(server, dict) and server.get("name") == SERVER:
            error = server.get("error")
            return str(server.get("status")), str(error) if error else None
    return None, None


def _assistant_events(event: dict[str, Any]) -> Iterator[TurnEvent]:
    content = (event.get("message") or {}).get("content") or []
    for block in content if isinstance(content, list) else []:
        if block.get("type") == "text" and block.get("text"):
            yield TurnEvent("text", text=block["text"])
        elif block.get("type") == "tool_use":
            yield TurnEvent("tool", text=str(block.get("name") or "?"))


ADAPTER = ClaudeAdapter  # what ``adapter_for("claude")`` makes
