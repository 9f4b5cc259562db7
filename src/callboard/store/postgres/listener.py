"""Change notifications between processes sharing a PostgreSQL database (hub replicas).

Every write transaction of ``PostgresStore`` sends ``pg_notify(channel, payload)``; PostgreSQL
delivers it when (and only if) the transaction commits, to every session listening on the
channel — this one included. ``ChangeListener`` keeps one such session on a thread of its own:
it counts the notifications (the store's ``change_counter``, which a hub polls) and hands each
decoded payload to the callbacks registered with it.

A notification means "look again", never "here is the data": a missed one (the connection
dropped) can delay a reader but never lose mail, and after a reconnect the listener reports a
change of everything (an empty payload) because what happened meanwhile is unknown.
"""

from __future__ import annotations

import json
import logging
import os
import select
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)

READY_TIMEOUT = 10.0  # for the first LISTEN: a caller of change_counter() waits this long at most
HEALTH_CHECK_INTERVAL = 30.0  # seconds of silence after which the connection is checked
RECONNECT_DELAYS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)  # then 5 s between attempts

# Notice a silently dead peer within about half a minute, not the operating system's two hours,
# and give up on a connection attempt that gets no answer as soon.
_OPTIONS: dict[str, Any] = {  # libpq connection parameters, passed through
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}

Payload = dict
Callback = Callable[[Payload], None]


class ChangeListener:
    """A thread LISTENing on ``channel`` with its own autocommit connection to ``url``."""

    def __init__(self, url: str, channel: str) -> None:
        self._url = url
        self._channel = channel
        self._count = 0
        self._callbacks: list[Callback] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._listening = threading.Event()  # set once LISTEN is in force, the first time
        self._gave_up = False  # waited READY_TIMEOUT for it in vain
        self._closing = threading.Event()
        self._wake_read, self._wake_write = os.pipe()  # close() wakes the thread's select()

    @property
    def count(self) -> int:
        return self._count

    def start(self) -> None:
        """Start listening, if not yet; return once LISTEN is in force (or after READY_TIMEOUT,
        the thread trying on), so that any commit after this call is counted. Called on every
        poll of the counter: once listening, or once that wait ran out, it returns at once."""
        if self._listening.is_set() or self._gave_up:
            return
        with self._lock:
            if self._closing.is_set():
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"listen {self._channel}", daemon=True)
                self._thread.start()
        if not self._listening.wait(READY_TIMEOUT):
            self._gave_up = True  # the database is away: later polls must not wait for it each time

    def add_callback(self, callback: Callback) -> None:
        with self._lock:
            self._callbacks = [*self._callbacks, callback]  # copied: the thread iterates without the lock

    def close(self) -> None:
        with self._lock:
            if self._closing.is_set():
                return
            self._closing.set()
            thread = self._thread
        os.write(self._wake_write, b"x")
        if thread is not None:
            thread.join(READY_TIMEOUT)
        os.close(self._wake_read)
        os.close(self._wake_write)

    # --- the listening thread ----------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        while not self._closing.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, **_OPTIONS) as conn:
                    conn.add_notify_handler(self._received)
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
                    if failures or self._listening.is_set():
                        self._changed({})  # commits may have gone unheard while disconnected
                    failures = 0
                    self._listening.set()
                    self._listen(conn)
            except Exception as error:  # the connection's, or anything else: the thread must go on
                if self._closing.is_set():
                    break
                delay = RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS) - 1)]
                failures += 1
                log.warning(
                    "change listener on %s lost its connection (%s); again in %g s", self._channel, error, delay
                )
                self._closing.wait(delay)

    def _listen(self, conn: psycopg.Connection) -> None:
        """Hand on notifications until closing; raise psycopg.Error when the connection fails."""
        socket = conn.fileno()
        # poll, not select: a hub holding a thousand client sockets has descriptors past select's 1024
        poller = select.poll()
        poller.register(socket, select.POLLIN)
        poller.register(self._wake_read, select.POLLIN)
        while not self._closing.is_set():
            readable = {fd for fd, _ in poller.poll(HEALTH_CHECK_INTERVAL * 1000)}
            if self._wake_read in readable:
                return
            if socket in readable:
                # Read what arrived; psycopg hands each notification to _received.
                conn.pgconn.consume_input()
                while (note := conn.pgconn.notifies()) is not None:
                    conn.pgconn.notify_handler(note)  # type: ignore[misc]  # set: _run added our handler first
                if conn.pgconn.status != psycopg.pq.ConnStatus.OK:
                    raise psycopg.OperationalError("the listening connection was closed")
            else:
                conn.execute("SELECT 1")  # quiet for a while: is the server still there?

    def _received(self, note: psycopg.Notify) -> None:
        try:
            payload = json.loads(note.payload) if note.payload else {}
            if not isinstance(payload, dict):
                payload = {}
        except ValueError:
            payload = {}
        self._changed(payload)

    def _changed(self, payload: Payload) -> None:
        self._count += 1  # only this thread writes it
        for callback in self._callbacks:
            try:
                callback(payload)
            except Exception:  # a listener's bug must not stop the notifications of the others
                log.exception("a change callback failed on %r", payload)
