"""What wakes a runner: its mailbox (a waiting look that takes nothing), SIGUSR1, a tick.

The ``MailWatch`` thread waits on the mailbox with ``surface(via="runner", wait=…, peek=True)``:
the mailbox (or the hub's stream) ends the wait the moment mail arrives, so nothing is polled at
the runner's level. When it sees mail it sets the loop's ``Wake`` and then waits to be re-armed
(the loop re-arms it after each take), so pending mail during a turn wakes the loop once, not in
a spin.
"""

from __future__ import annotations

import builtins
import os
import signal
import threading
from collections.abc import Callable

from callboard.client.base import Client
from callboard.errors import CallboardError
from callboard.requests import SurfaceQuery

LOOK_SECONDS = 25.0  # one waiting look; well under any hub or proxy timeout
RETRY_SECONDS = 1.0  # after a failed look (the hub away for a moment)


class Wake:
    """The loop's wake-up: set by mail, a signal or ``runner wake``; says why."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._reasons: set[str] = set()

    def set(self, reason: str) -> None:
        with self._lock:
            self._reasons.add(reason)
        self._event.set()

    def wait(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` seconds (None: for ever) for a wake; whether one came."""
        return self._event.wait(timeout)

    def take(self) -> builtins.set[str]:  # builtins: in this class, "set" is the method above
        """The reasons since the last take (clearing them)."""
        with self._lock:
            reasons, self._reasons = self._reasons, set()
            self._event.clear()
        return reasons

    def is_set(self) -> bool:
        return self._event.is_set()


class MailWatch:
    """A thread that sets ``wake`` (reason "mail") when the agent has mail to take."""

    def __init__(self, client: Client, wake: Wake, log: Callable[[str], None], look: float = LOOK_SECONDS) -> None:
        self._client = client
        self._wake = wake
        self._log = log
        self._look = look
        self._armed = threading.Event()
        self._armed.set()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="runner-mail-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def rearm(self) -> None:
        """The loop took the mailbox's mail: look for the next."""
        self._armed.set()

    def stop(self) -> None:
        self._stopped.set()
        self._armed.set()  # the thread may be waiting for it; its look ends within ``look``

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._armed.wait()
            if self._stopped.is_set():
                return
            try:
                found = self._client.surface(SurfaceQuery(via="runner", wait=self._look, peek=True, limit=1)).items
            except CallboardError as error:
                if self._stopped.is_set():  # the runner stops and closed the store under it: nothing to say
                    return
                self._log(f"mail watch: {error.code}: {error.message} (looking again in {RETRY_SECONDS:g} s)")
                self._stopped.wait(RETRY_SECONDS)
                continue
            except Exception as error:  # noqa: BLE001  (a closing client at shutdown; never die silently otherwise)
                if self._stopped.is_set():
                    return
                self._log(f"mail watch: {type(error).__name__}: {error}")
                self._stopped.wait(RETRY_SECONDS)
                continue
            if found:
                self._armed.clear()
                self._wake.set("mail")


def on_sigusr1(wake: Wake) -> None:
    """SIGUSR1 wakes the loop (a tick-like turn without mail, never interrupting one)."""
    signal.signal(signal.SIGUSR1, lambda signum, frame: wake.set("signal"))


def send_wake(pid: int | None) -> bool:
    """SIGUSR1 to a local runner; whether it was sent."""
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGUSR1)
    except (ProcessLookupError, PermissionError):
        return False
    return True
