"""How ``callboard mcp`` ends: at once, once, with its agent session ended on the way out.

An agent CLI ends its MCP server by closing its stdin or with signals: Claude Code 2.1.332, as
its session ends, sends SIGINT, SIGTERM 0.1 s later, and SIGKILL soon after (measured); a server
whose CLI died is nobody's. Whichever comes first —
stdin's end, SIGTERM, SIGINT or SIGHUP, the parent's death (seen by the session keeper's poll
and, on Linux, by the kernel's parent-death signal) — starts the same ending on a thread of its
own: stop injecting, end the session (its end time recorded), exit. Nothing it waits for may hold
the process: a tool call blocked in a long read, the event loop, a store thread. So the process
leaves with ``os._exit`` after the session is ended, or after ``HARD_DEADLINE_SECONDS`` whatever
is still running.

Signals are taken by a thread of their own (``sigwait``), with the signals blocked in every
other thread: a signal handled the usual way runs only when the main thread next runs Python,
and the main thread of an idle server sits in the event loop's poll, which a signal delivered
to another thread does not wake.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable

log = logging.getLogger("callboard.mcp")

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
HARD_DEADLINE_SECONDS = 3.0  # well inside an agent CLI's grace before its SIGKILL
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Ending:
    """Ends the server once, from whichever cause comes first. Make it before any thread starts
    (``take_signals`` blocks the signals for the threads made after it)."""

    def __init__(self) -> None:
        self._steps: list[Callable[[], None]] = []
        self._once = threading.Lock()
        self._begun = False

    def then(self, step: Callable[[], None]) -> None:
        """Run ``step`` on the way out, in the order given; a step that fails is logged and passed."""
        self._steps.append(step)

    def take_signals(self, parent: int) -> None:
        """SIGTERM, SIGINT and SIGHUP end the server, as does ``parent``'s death (Linux)."""
        if not hasattr(signal, "pthread_sigmask") or not hasattr(signal, "sigwait"):
            for signum in ENDING_SIGNALS:
                signal.signal(signum, lambda signum, _frame: self.begin(signal.Signals(signum).name))
            return
        signal.pthread_sigmask(signal.SIG_BLOCK, ENDING_SIGNALS)
        threading.Thread(target=self._wait_for_signal, name="callboard mcp signals", daemon=True).start()
        if sys.platform == "linux":
            try:
                ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
            except (OSError, AttributeError):  # no prctl: the keeper's poll still sees the parent go
                pass
            if os.getppid() != parent:  # it died before the kernel was asked to tell
                self.begin("parent gone")

    def _wait_for_signal(self) -> None:
        signum = signal.sigwait(ENDING_SIGNALS)
        self.begin(signal.Signals(signum).name)

    def begin(self, why: str) -> None:
        """Start ending (once; later calls do nothing); returns at once, the process ends soon."""
        with self._once:
            if self._begun:
                return
            self._begun = True
        log.info("ending: %s", why)
        threading.Thread(target=self._end, name="callboard mcp ending", daemon=True).start()

    def end_here(self) -> None:
        """End on this thread (the serving loop returned): the same steps, then exit."""
        with self._once:
            begun, self._begun = self._begun, True
        if not begun:
            self._end()
        else:  # another thread is ending: it exits the process; wait for it, within the deadline
            threading.Event().wait(HARD_DEADLINE_SECONDS)
            os._exit(0)

    def _end(self) -> None:
        deadline = threading.Timer(HARD_DEADLINE_SECONDS, os._exit, (0,))
        deadline.daemon = True
        deadline.start()
        for step in self._steps:
            try:
                step()
            except Exception:  # noqa: BLE001 - the others must still run, and the process end
                log.exception("while ending")
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(0)
