"""One SQLite database file as a process uses it.

A connection shared by the process's threads (behind a lock), a second one that only
watches for other processes' commits, the durable settings — WAL, ``synchronous=FULL`` —
and write transactions that wait for the file's write lock in short, fair steps.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from switchboard.errors import StoreUnavailable
from switchboard.store.schema import migrate

BUSY_TIMEOUT_SECONDS = 30.0
# Waiting for the write lock: SQLite's own busy handler sleeps up to 100 ms between tries, which
# lets a busy writer starve the others for most of a second. We poll in steps of at most 2 ms.
_LOCK_RETRY_FIRST_SECONDS = 0.0001
_LOCK_RETRY_MAX_SECONDS = 0.002


def _retry_while_locked(conn: sqlite3.Connection, statement: str) -> None:
    """Run ``statement``, retrying while another connection holds the lock it needs.

    Also for statements SQLite does not retry itself: switching a new database to WAL answers
    "locked" at once while another process is creating the same file.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause = _LOCK_RETRY_FIRST_SECONDS
    while True:
        try:
            conn.execute(statement)
            return
        except sqlite3.OperationalError as error:
            if conn.in_transaction or "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(pause * (0.5 + random.random()))
        pause = min(pause * 2, _LOCK_RETRY_MAX_SECONDS)


class SQLiteDatabase:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as error:
            raise StoreUnavailable(f"cannot create the folder for the database {self.path}: {error}.") from None
        self._lock = threading.RLock()
        self._closed = False
        self._conn = self._connect()
        # A second connection only watches: its data_version moves when any connection commits.
        # It is opened when someone first waits for mail; most commands never do.
        self._watch_lock = threading.Lock()
        self._watch_conn: sqlite3.Connection | None = None
        with self.read() as conn:
            migrate(conn)

    def _connect(self) -> sqlite3.Connection:
        try:
            if not self.path.exists():
                # Mailboxes are private to the user. Create the file 0600 before SQLite does: its
                # -wal and -shm files copy the database file's permissions when they are made.
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            _retry_while_locked(conn, "PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
        except (sqlite3.Error, OSError) as error:
            raise StoreUnavailable(f"cannot open the database {self.path}: {error}.") from None
        return conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        with self._watch_lock:
            if self._watch_conn is not None:
                self._watch_conn.close()
            self._closed = True

    def change_counter(self) -> int:
        with self._watch_lock:
            if self._watch_conn is None:
                if self._closed:
                    raise StoreUnavailable(f"the database {self.path} was closed.")
                self._watch_conn = self._connect()
            return self._watch_conn.execute("PRAGMA data_version").fetchone()[0]

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The connection, for this thread alone; SQLite failures become a clear error.

        Statements run in autocommit: each sees the latest committed state."""
        with self._lock:
            try:
                yield self._conn
            except sqlite3.OperationalError as error:
                raise StoreUnavailable(f"the database {self.path} is unavailable ({error}); try again.") from None

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed (and fsynced) on exit, rolled back on any error."""
        with self.read() as conn:
            self._begin_immediate(conn)
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # also when COMMIT itself failed (disk full, I/O error)
                    conn.execute("ROLLBACK")
                raise

    def _begin_immediate(self, conn: sqlite3.Connection) -> None:
        """Take the database's write lock, retrying briefly and often until the busy timeout."""
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            _retry_while_locked(conn, "BEGIN IMMEDIATE")
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
