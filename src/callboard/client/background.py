"""The embedded store's background work, owned by the client that opened the store.

A hub does some work for its store in the background (``hub/jobs.py``); on the embedded store
no hub runs, so the client that opened the store does its counterpart: today, sending mail to
outside A2A agents (the remote outbox's pump). A long-lived process (``callboard mcp``) keeps it
running while its client is open (``Client.run_background``); a one-shot command sends what it
just queued and waits a moment for the first answer (``Client.send_to_outside_agents``).

How the mail is sent is the A2A face's (``a2a/remote/pump.py``), handed in by the composition
root as the card source is: the client layer knows no A2A.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from callboard.service.door import Service

STOP_SECONDS = 2.0  # a process's end is not held up long: a row in hand comes due again anyway


@dataclass(frozen=True)
class RemotePumping:
    """How this process sends the remote outbox: ``start(service)`` begins on a thread of its
    own and returns how to stop it (waiting at most the seconds given); ``send_now(service,
    workspace, message_id, seconds)`` sends now, that message first, until its first answer or
    for ``seconds``."""

    start: Callable[[Service], Callable[[float], None]]
    send_now: Callable[[Service, str, str, float], None]


class BackgroundWork:
    """What this process does for the embedded store in the background, started once asked."""

    def __init__(self, service: Service, pumping: RemotePumping | None) -> None:
        self._service = service
        self._pumping = pumping
        self._stop: Callable[[float], None] | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Keep sending mail to outside agents until ``stop`` (the A2A SDK loads only once there
        is some to send)."""
        with self._lock:
            if self._pumping is not None and self._stop is None:
                self._stop = self._pumping.start(self._service)

    def send_now(self, workspace: str, message_id: str, seconds: float) -> None:
        if self._pumping is not None:
            self._pumping.send_now(self._service, workspace, message_id, seconds)

    def stop(self) -> None:
        with self._lock:
            stop, self._stop = self._stop, None
        if stop is not None:
            stop(STOP_SECONDS)
