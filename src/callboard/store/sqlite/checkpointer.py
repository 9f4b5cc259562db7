"""Copying SQLite's write-ahead log back into the database file, on a thread of its own.

SQLite does it inside the COMMIT that takes the log past ``wal_autocheckpoint`` pages: that
commit then copies every page the log holds into the file and fsyncs it — tens of milliseconds
on a busy hub, with every write queued behind it. Here a thread does it after commits, at most
every ``interval`` seconds, in PASSIVE mode (it never waits for or blocks a writer), so the log
is mostly copied by the time a commit reaches the limit, and that commit has little left to do.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

CHECKPOINT_INTERVAL_SECONDS = 0.25


class Checkpointer:
    def __init__(
        self, connect: Callable[[], sqlite3.Connection], interval: float = CHECKPOINT_INTERVAL_SECONDS
    ) -> None:
        self._connect = connect
        self._interval = interval
        self._wanted = threading.Event()  # something was committed since the last checkpoint
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="callboard-checkpoint", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def committed(self) -> None:
        """A commit has added to the log: checkpoint soon (cheap; called after every commit)."""
        if not self._wanted.is_set():
            self._wanted.set()

    def stop(self) -> None:
        """End the thread (after a checkpoint in progress) and close its connection."""
        self._stopping.set()
        self._wanted.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        conn = self._connect()
        try:
            while True:
                self._wanted.wait()
                if self._stopping.is_set():
                    return
                self._wanted.clear()
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error as error:  # the next commit's wake-up tries again
                    log.warning("checkpointing the database's log failed: %s", error)
                if self._stopping.wait(self._interval):
                    return
        finally:
            conn.close()
