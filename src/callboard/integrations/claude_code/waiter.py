"""``hook wake``: the background waiter that wakes an idle Claude Code session when mail arrives.

Installed as a command hook with ``"asyncRewake": true`` on SessionStart and on Stop: Claude Code
runs it in the background and, when it exits 2, starts a turn, even in an idle session. So the
waiter blocks on the mailbox (a look that takes nothing, ``surface(via="waiter", wait=…,
peek=True)``, in rounds that also heartbeat the session) and, when mail comes, exits 2 printing
nothing: the woken turn starts with the hook's ``rewakeMessage`` and, as every turn does, runs the
UserPromptSubmit hook, which takes the mail into the model's context (``hook prompt``). The quiet
form because Claude Code 2.1.332 logs every asyncRewake exit 2 as an ``[ERROR]`` hook failure
with the hook's whole stdout and stderr (its ``Hook <name> (<event>) error: status code 2``
line); printed there, each message body would land in the client's error log. Printing nothing,
that line says only ``status code 2``, and no body is in any log line.

- One per agent CLI process: every Stop starts another, so each takes the process's waiter lock
  first; one that finds it held exits 0 at once. By process, not session id: after /clear the
  process has a new session id and is still one process to wake, once per message.
- Not beside a socket injector: where the session's own ``callboard mcp`` writes its mail into
  the session's messaging socket (``state.injector_running``), the waiter leaves the mail to it.
- None left behind: ``AgentWatch`` checks every ``WATCH_SECONDS`` that the agent CLI process (pid
  and start time) still runs; once it has ended, the waiter removes the session's hook state and
  exits 0.
- No budget of its own: it wakes for every message the service lets it surface. Loops and floods
  are damped where they start, by the service's guards (guard.py): held mail is not surfaced
  before its time, and the wait on the mailbox ends by itself when that time comes.
- Not in a one-shot ``claude -p "prompt"``: there Claude Code runs the hook in the foreground and
  would wait for it for ever (claude-code-messaging-socket.md §6), and there is no idle session
  to wake; the waiter exits 0 at once (``-p`` with ``--input-format stream-json`` is wakeable).
- Any failure (no identity, an unreachable hub, …) ends it with exit 0 and one line: no wake.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TextIO

from callboard.client.session_keeper import HEARTBEAT_SECONDS
from callboard.integrations.agent_clis import CLAUDE_CODE, runtime_of
from callboard.integrations.hooks.context import HookContext
from callboard.integrations.hooks.handlers import register
from callboard.integrations.hooks.state import injector_running, take_waiter_lock, waiter_lock_path
from callboard.procs import process_alive, process_command_line
from callboard.requests import SurfaceQuery

WAIT_SECONDS = HEARTBEAT_SECONDS  # one round of waiting on the mailbox; each round heartbeats
WATCH_SECONDS = 0.2  # how soon the end of the agent CLI is noticed
EXIT_WAKE = 2


class AgentWatch:
    """Ends this process with exit 0 soon after the agent CLI process ``pid`` has ended."""

    def __init__(self, pid: int, start: int | None, finish: threading.Lock) -> None:
        self.pid, self.start_time = pid, start
        self.finish = finish  # held by whoever is writing this process's last words
        self.cleanups: list[Callable[[], None]] = []
        self._thread = threading.Thread(target=self._watch, name="callboard agent watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _watch(self) -> None:
        while process_alive(self.pid, self.start_time):
            time.sleep(WATCH_SECONDS)
        with self.finish:
            for cleanup in self.cleanups:
                try:
                    cleanup()
                except Exception:  # leaving is what matters
                    pass
            os._exit(0)


def wait_for_mail(ctx: HookContext, watch: AgentWatch, stderr: TextIO) -> int:
    """Wait until mail arrives (exit 2, printing nothing); ``watch`` ends the wait (exit 0)
    when the agent CLI ends. CallboardError when the mailbox cannot be reached."""
    if not wakeable(ctx.agent_pid):
        return 0
    home, pid, start = ctx.settings.home, ctx.agent_pid, ctx.agent_start
    if injector_running(home, pid, start) or take_waiter_lock(home, pid, start) is None:
        return 0  # the session's own server injects its mail into its socket, or it has its waiter
    watch.cleanups.append(ctx.files.remove)  # the session is over: its hook state goes with it
    watch.cleanups.append(waiter_lock_path(home, pid, start).unlink)  # still held: no waiter sees it free
    register(ctx)
    while True:
        # A look that marks nothing: the woken turn's UserPromptSubmit hook takes the mail.
        if ctx.client().surface(SurfaceQuery(via="waiter", wait=WAIT_SECONDS, peek=True)).items:
            if injector_running(home, pid, start):
                return 0  # the socket injector started meanwhile: the mail is its
            with watch.finish:
                return EXIT_WAKE  # quiet: nothing printed (see the module's docstring)
        register(ctx)  # the heartbeat: registering again only refreshes the session


def wakeable(pid: int) -> bool:
    """Whether the agent CLI ``pid`` can be woken: not a Claude Code one-shot print run with text input."""
    if runtime_of(pid) != CLAUDE_CODE.runtime:
        return True
    args = process_command_line(pid)
    if args is None:
        return True
    if not any(a in ("-p", "--print") for a in args):
        return True
    return "--input-format=stream-json" in args or any(
        a == "--input-format" and b == "stream-json" for a, b in zip(args, args[1:], strict=False)
    )
