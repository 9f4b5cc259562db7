"""A live session for the agent CLI that started this process, kept while both run.

``callboard mcp`` is started by an agent CLI (Claude Code, Codex, …) as its child, one per
agent session. The session it registers is its parent's — ``agent@machine#<parent pid>``, the
process the user sees and the one mail is meant for — with the parent's start time, so a pid
the system hands out again later is never taken for it. The keeper heartbeats within the
liveness window, and ends the session when this process ends or when the parent dies (then this
process ends too: nobody is left to serve).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from callboard.errors import CallboardError, UnknownSession
from callboard.limits import DELIVERY_ERROR_CHARS
from callboard.procs import process_alive, process_start_time

if TYPE_CHECKING:  # annotations only: the hooks import this module and must stay light
    from callboard.client.base import Client
    from callboard.model import Session

log = logging.getLogger("callboard.session")

HEARTBEAT_SECONDS = 15.0  # well within the default 60 s liveness window, even if one is lost
RETRY_FIRST_SECONDS = 0.5  # a failed heartbeat is tried again after this, doubling up to the interval
PARENT_CHECK_SECONDS = 0.5  # how soon a dead parent is noticed (a read of /proc)


class SessionKeeper:
    """Registers the parent's session, heartbeats it, ends it; ``on_parent_gone`` is called (on
    the keeper's thread) once the parent has died and the session is ended.

    ``delivery_problem``, when given, says what the session's delivery path reports broken (None
    when it works); each heartbeat carries it, so ``who`` can tell a live session that cannot
    take mail. A heartbeat that fails (the hub away, a link cut) is tried again sooner, backing
    off up to the heartbeat interval; a session the hub no longer knows is registered again."""

    def __init__(
        self,
        client: Client,
        on_parent_gone: Callable[[], None],
        *,
        parent: int | None = None,
        every: float = HEARTBEAT_SECONDS,
        terminal: str | None = None,
        delivery_problem: Callable[[], str | None] | None = None,
    ) -> None:
        self._client = client
        self._on_parent_gone = on_parent_gone
        self.parent = parent if parent is not None else os.getppid()
        self._parent_start = process_start_time(self.parent)
        self._every = every
        self._terminal = terminal
        self._delivery_problem = delivery_problem
        self._runtime = ""
        self._failing = False  # the last heartbeat failed: the next failure goes unsaid
        self.session: Session | None = None
        self._stopping = threading.Event()
        self._ending = threading.Lock()  # the keeper and stop() may both end it: once
        self._thread = threading.Thread(target=self._keep, name="callboard session keeper", daemon=True)

    @property
    def running(self) -> bool:
        """Still keeping the session (false once the parent is gone or stop() was called)."""
        return self._thread.is_alive()

    def start(self, runtime: str) -> None:
        """Register the session as run by ``runtime`` (what the face that starts it knows the
        parent to be: an agent CLI's runtime, ``cli``, ``script``…) and keep it."""
        if not process_alive(self.parent, self._parent_start):
            log.warning("process %s is not running; no session to keep", self.parent)
            return
        self._runtime = runtime
        try:
            self.session = self._register()
        except CallboardError as error:  # the tools still work; only presence is missing
            log.warning("could not register this session (%s: %s); serving without one", error.code, error.message)
            return
        self._thread.start()

    def _register(self) -> Session:
        return self._client.register_session(runtime=self._runtime, pid=self.parent, terminal=self._terminal)

    def stop(self) -> None:
        """End the session (once); called when this process stops serving."""
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._end()

    def _keep(self) -> None:
        check = min(PARENT_CHECK_SECONDS, self._every)
        next_beat, retry = time.monotonic() + self._every, RETRY_FIRST_SECONDS
        while not self._stopping.wait(check):
            if not process_alive(self.parent, self._parent_start):
                self._end()
                self._on_parent_gone()
                return
            if time.monotonic() < next_beat:
                continue
            if self._beat():
                next_beat, retry = time.monotonic() + self._every, RETRY_FIRST_SECONDS
            else:  # try again sooner, backing off up to the usual interval
                next_beat, retry = time.monotonic() + retry, min(retry * 2, self._every)

    def _beat(self) -> bool:
        """One heartbeat; whether the hub took it."""
        session = self.session
        if session is None:
            return True
        problem = self._delivery_problem() if self._delivery_problem else None
        if problem is not None:  # whatever the path reports, cut to what the hub takes
            problem = problem.replace("\x00", "")[:DELIVERY_ERROR_CHARS]
        try:
            self._client.heartbeat(session.id, problem)
        except UnknownSession:  # the hub lost it (its store was reset): register anew
            try:
                self.session = self._register()
            except CallboardError as error:
                log.warning("could not register this session again (%s: %s)", error.code, error.message)
                return False
        except CallboardError as error:  # a hub away for a moment, a cut link: try again soon
            if not self._failing:  # once per outage, not at every try
                log.warning("heartbeat failed (%s: %s); trying again until it goes", error.code, error.message)
            self._failing = True
            return False
        if self._failing:
            log.warning("heartbeat taken again")
        self._failing = False
        return True

    def _end(self) -> None:
        with self._ending:
            session, self.session = self.session, None
        if session is None:
            return
        try:
            self._client.end_session(session.id)
        except CallboardError as error:
            log.warning("could not end session %s (%s: %s)", session.id, error.code, error.message)
