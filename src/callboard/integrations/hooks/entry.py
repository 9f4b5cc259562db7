"""``callboard hook <event> [--client claude|codex|copilot|gemini]``: the whole command.

``cli/main.py`` calls ``run`` before it loads typer or any command: a hook runs on every prompt
and tool call, and the empty-mailbox case must take a few tens of milliseconds. So this module
and what it imports first stay light (no pydantic, no service, no httpx); they load only on the
paths that need them.

A hook never breaks its host. Whatever goes wrong — bad stdin, no identity, an unreachable hub,
a bug — it exits 0 (the waiter: without waking) with exactly one line on stderr. A synchronous
hook gives up after ``DEADLINE_SECONDS`` the same way (``CALLBOARD_HOOK_SECONDS`` sets another:
for a hub far away, say; the agent CLI itself stops a hook after the timeout install wrote).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from callboard.errors import BadRequest, CallboardError
from callboard.fence import one_line
from callboard.integrations.agent_clis import CLAUDE_CODE, HOOK_CLIENTS
from callboard.integrations.hooks.context import HookContext
from callboard.integrations.hooks.payload import parse, read_stdin
from callboard.runner.env import under_runner

if TYPE_CHECKING:  # the waiter is imported only by the one hook that waits
    from callboard.integrations.claude_code.waiter import AgentWatch

EVENTS = ("session-start", "prompt", "post-tool", "stop", "wake")
USAGE = f"usage: callboard hook {{{'|'.join(EVENTS)}}} [--client {'|'.join(HOOK_CLIENTS)}]  (hook JSON on stdin)"
DEADLINE_SECONDS = 3.0  # a synchronous hook's whole run; the agent CLI waits for it
DEADLINE_VARIABLE = "CALLBOARD_HOOK_SECONDS"
MOST_SECONDS = 60.0


class UsageError(Exception):
    pass


def parse_args(argv: Sequence[str]) -> tuple[str | None, str]:
    """(event, client) from the arguments after ``hook``; event None asks for the usage."""
    event, client, rest = None, CLAUDE_CODE.name, list(argv)  # without --client: Claude Code
    while rest:
        arg = rest.pop(0)
        if arg in ("-h", "--help"):
            return None, client
        if arg == "--client" or arg.startswith("--client="):
            client = arg.partition("=")[2] if "=" in arg else (rest.pop(0) if rest else "")
            if client not in HOOK_CLIENTS:
                raise UsageError(f"--client must be one of {', '.join(HOOK_CLIENTS)}, not {client!r}")
        elif event is None and arg in EVENTS:
            event = arg
        else:
            raise UsageError(f"unexpected argument {arg!r}" if event else f"unknown hook event {arg!r}")
    if event is None:
        raise UsageError("name a hook event")
    return event, client


def run(
    argv: Sequence[str],
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    env: Mapping[str, str] = os.environ,
) -> int:
    """Run one hook; the exit status (0, or 2 when the waiter wakes the session)."""
    if under_runner(env):
        return 0  # a runner feeds this CLI its mail as turns: nothing for a hook to add or wake
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    try:
        event, client_name = parse_args(argv)
    except UsageError as error:
        return _fail(threading.Lock(), stderr, "", f"usage: {error}. {USAGE}")
    if event is None:
        stdout.write(USAGE + "\n")
        return 0
    finish = threading.Lock()  # held by whoever writes this process's last words, then exits
    try:
        seconds = deadline_seconds(env)
    except BadRequest as error:
        return _fail(finish, stderr, event, f"{error.code}: {error.message}")
    watch: AgentWatch | None = None
    if event == "wake":
        watch = _watch_agent(finish)
    else:
        _arm_deadline(finish, stderr, event, seconds)
    ctx: HookContext | None = None
    result: dict[str, Any] | None = None
    try:
        ctx = HookContext(event, client_name, parse(read_stdin(stdin)), env)
        if watch is not None:  # the wake event's
            from callboard.integrations.claude_code.waiter import wait_for_mail

            return wait_for_mail(ctx, watch, stderr)
        from callboard.integrations.hooks.handlers import HANDLERS

        result = HANDLERS[event](ctx)
    except CallboardError as error:
        return _fail(finish, stderr, event, f"{error.code}: {error.message}")
    except Exception as error:
        if env.get("CALLBOARD_DEBUG"):
            import traceback

            traceback.print_exc(file=stderr)
        return _fail(finish, stderr, event, f"internal: {type(error).__name__}: {error}")
    finally:
        if ctx is not None:
            _close(ctx)
    with finish:
        if result is not None:
            stdout.write(json.dumps(result) + "\n")
            stdout.flush()
        if ctx.warning is not None:
            stderr.write(_line(event, ctx.warning))
    return 0


def _fail(finish: threading.Lock, stderr: TextIO, event: str, text: str) -> int:
    with finish:
        stderr.write(_line(event, text))
        stderr.flush()
    return 0


def _line(event: str, text: str) -> str:
    """One line of stderr, whatever ``text`` holds (a hub's words: shown, never obeyed, by the
    agent CLI that shows it to its person)."""
    return f"callboard hook{' ' + event if event else ''}: {one_line(' '.join(text.split()))}\n"


def deadline_seconds(env: Mapping[str, str]) -> float:
    """How long a synchronous hook may run: ``CALLBOARD_HOOK_SECONDS``, else DEADLINE_SECONDS."""
    raw = env.get(DEADLINE_VARIABLE)
    if raw is None or raw == "":
        return DEADLINE_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= MOST_SECONDS:  # False for NaN too
        raise BadRequest(f"{DEADLINE_VARIABLE} must be seconds, more than 0 and at most {MOST_SECONDS:g}, not {raw!r}.")
    return seconds


def _arm_deadline(finish: threading.Lock, stderr: TextIO, event: str, seconds: float) -> None:
    """After ``seconds``, unless the run is writing its result: one line, exit 0."""

    def expire() -> None:
        if finish.acquire(blocking=False):
            stderr.write(
                _line(event, f"timeout: no answer within {seconds:g} s from the mailbox; going on without it.")
            )
            stderr.flush()
            os._exit(0)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def _watch_agent(finish: threading.Lock) -> AgentWatch:
    """For the waiter: end this process once the agent CLI it serves has ended (from now on,
    before stdin is even read)."""
    from callboard.integrations.agent_clis import agent_process
    from callboard.integrations.claude_code.waiter import AgentWatch
    from callboard.procs import process_start_time

    pid = agent_process()
    watch = AgentWatch(pid, process_start_time(pid), finish)
    watch.start()
    return watch


def _close(ctx: HookContext) -> None:
    try:
        ctx.close()
    except Exception:  # the result is what matters
        pass
