"""When a session counts as live.

Live: not ended, reported within the liveness window, and — when it runs on this machine —
its process is still the one that registered (pid and start time), so a crashed session or a
recycled pid is never reported as a place mail was delivered to.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from switchboard.identity import process_alive
from switchboard.model import Session

DEFAULT_WINDOW_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Liveness:
    machine: str  # this machine: its sessions' processes can be checked directly
    window_seconds: float = DEFAULT_WINDOW_SECONDS

    def is_live(self, session: Session, now: datetime) -> bool:
        if session.ended_at is not None:
            return False
        if not self.recent(session.last_seen, now):
            return False
        if session.machine == self.machine:
            return process_alive(session.pid, session.proc_start)
        return True

    def recent(self, last_seen: datetime, now: datetime) -> bool:
        return (now - last_seen).total_seconds() <= self.window_seconds

    def marked(self, session: Session, now: datetime) -> Session:
        """The session with its ``live`` flag set as of ``now``."""
        return session.model_copy(update={"live": self.is_live(session, now)})
