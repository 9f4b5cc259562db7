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
  In a session that has a messaging socket, the first waiter gives that server up to
  ``INJECTOR_START_SECONDS`` to start injecting before it looks: mail waiting at the session's
  start would otherwise wake it twice, once here (a turn its prompt hook leaves empty, the
  injector delivering) and once by the socket.
- None left behind: ``AgentWatch`` checks every ``WATCH_SECONDS`` that the agent CLI process (pid
  and start time) still runs; once it has ended, the waiter removes the session's hook state and
  exits 0.
- No budget of its own: it wakes for every message the service lets it surface. Loops and floods
  are damped where they start, by the service's guards (guard.py): held mail is not surfaced
  before its time, and the wait on the mailbox ends by itself when that time comes.
- Not in a one-shot ``claude -p "prompt"``: there Claude Code runs the hook in the foreground and
  would wait for it for ever, and there is no idle session to wake; the waiter exits 0 at once
  (``wakeable``: ``-p`` with ``--input-format stream-json`` is wakeable).
- Mail waiting when the session starts (new, or returned from a session that ended) wakes it as
  new mail does: the session-start hook leaves it in the mailbox for this waiter (``handlers``).
- Any failure (no identity, an unreachable hub, …) ends it with exit 0 and one line: no wake.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from callboard.client.session_keeper import HEARTBEAT_SECONDS
from callboard.integrations.claude_code.socket_delivery import SessionSocket
from callboard.integrations.claude_code.wakeable import wakeable
from callboard.integrations.hooks.context import HookContext
from callboard.integrations.hooks.handlers import register
from callboard.integrations.hooks.state import (
    INJECTORS_FOLDER,
    injector_running,
    process_file,
    take_waiter_lock,
    waiter_lock_path,
)
from callboard.procs import process_alive
from callboard.requests import SurfaceQuery

WAIT_SECONDS = HEARTBEAT_SECONDS  # one round of waiting on the mailbox; each round heartbeats
WATCH_SECONDS = 0.2  # how soon the end of the agent CLI is noticed (and an injector's start)
# A session with a messaging socket: how long its own `callboard mcp` (Python and the store, some
# seconds on a loaded machine) may take to start injecting before this waiter wakes it instead.
INJECTOR_START_SECONDS = 20.0
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
    if SessionSocket.from_env(ctx.env, parent=pid) is not None and injector_starts(home, pid, start):
        return 0  # the session's own server injects its mail into its socket
    while True:
        # A look that marks nothing: the woken turn's UserPromptSubmit hook takes the mail.
        if ctx.client().surface(SurfaceQuery(via="waiter", wait=WAIT_SECONDS, peek=True)).items:
            if injector_running(home, pid, start):
                return 0  # the socket injector started meanwhile: the mail is its
            with watch.finish:
                return EXIT_WAKE  # quiet: nothing printed (see the module's docstring)
        register(ctx)  # the heartbeat: registering again only refreshes the session


def injector_starts(home: Path, pid: int, start: int | None) -> bool:
    """Whether an injector into agent CLI ``pid``'s socket runs, or starts within
    INJECTOR_START_SECONDS. Its lock file shows first (one left by an injector that stopped
    answers at once); the lock is tested once, a moment after the file is made, not often: a
    test takes the lock for an instant, and the injector could find it taken."""
    lock = process_file(home, INJECTORS_FOLDER, pid, start)
    deadline = time.monotonic() + INJECTOR_START_SECONDS
    while time.monotonic() < deadline:
        if lock.exists():
            time.sleep(WATCH_SECONDS)  # made as its lock is taken: look once that is done
            return injector_running(home, pid, start)
        time.sleep(WATCH_SECONDS)
    return False
