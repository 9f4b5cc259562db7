"""The embedded store: one SQLite file, shared safely by many processes.

Every method is one short transaction on the file (see ``connection``): WAL lets readers and
one writer work at once, and every commit reaches the disk before it returns. Each write hands
its transaction's body to ``transact`` as a function, so that with group commit (the hub's)
many of them run in one transaction.

``SQLiteStore`` is the Store interface and nothing more: its parts are the shared ones
(``store/parts/``) on this database (``sql``), with this folder's own ways of taking mail
(``mailbox``) and claiming the outboxes (``tasks``, ``remotes``); here is only what is SQLite's
own — opening and finishing a crashed hub's deliveries, group commit on the loop, the change
counter, and ``submit_message`` with ``messages`` (storing a send), which takes the fan-out
threshold.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Literal

from callboard.limits import POLL_INTERVAL_SECONDS
from callboard.model import Message, SendResult
from callboard.pending import Pending
from callboard.store.parts.audit import SQLAudit
from callboard.store.parts.directory import SQLDirectory
from callboard.store.parts.guard_facts import SQLGuardFacts
from callboard.store.parts.handing import SQLHanding
from callboard.store.parts.leases import SQLLeases
from callboard.store.parts.rounds import SQLRounds
from callboard.store.parts.runners import SQLRunners
from callboard.store.parts.sent import SQLSent
from callboard.store.parts.sessions import SQLSessions
from callboard.store.parts.tokens import SQLTokens
from callboard.store.records import NewDelivery, TaskWrite
from callboard.store.sqlite import messages
from callboard.store.sqlite.change_watch import FolderWatch
from callboard.store.sqlite.connection import SQLiteDatabase
from callboard.store.sqlite.mailbox import SQLiteMailbox
from callboard.store.sqlite.remotes import SQLiteRemotes
from callboard.store.sqlite.sql import SQLiteSQL
from callboard.store.sqlite.tasks import SQLiteTasks


class SQLiteStore:
    """The Store interface on one SQLite database file."""

    def __init__(self, path: str | os.PathLike[str], *, group_commit: bool = False) -> None:
        """``group_commit``: batch the writes of concurrent threads into shared transactions
        (one fsync each) — for a server; a single-threaded process gains nothing from it."""
        self._db = SQLiteDatabase(path, group_commit=group_commit)
        sql = SQLiteSQL(self._db)
        self.directory = SQLDirectory(sql)
        self.sessions = SQLSessions(sql)
        self.sent = SQLSent(sql)
        self.mailbox = SQLiteMailbox(sql)
        self.handing = SQLHanding(sql)
        self.guard_facts = SQLGuardFacts(sql)
        self.audit = SQLAudit(sql)
        self.tokens = SQLTokens(sql)
        self.tasks = SQLiteTasks(sql)
        self.remotes = SQLiteRemotes(sql)
        self.runners = SQLRunners(sql)
        self.rounds = SQLRounds(sql)
        self.leases = SQLLeases(sql)
        self.path = self._db.path
        self.location = str(self.path)
        self._watch: FolderWatch | Literal[False] | None = None  # False: this system has none
        # Sends to this many recipients or more are answered before their deliveries are
        # written out, when group-committed on a loop (see messages).
        self.fan_out_later_from = messages.FAN_OUT_LATER_FROM
        try:
            messages.deliveries_written(self._db)  # a hub that stopped short of writing some out (a crash)
        except BaseException:
            self._db.close()
            raise

    @asynccontextmanager
    async def committing_on_loop(self) -> AsyncIterator[None]:
        """While the block runs, concurrent writes are group-committed on the running event loop
        (a server's: see SQLiteDatabase.attach); on leaving, every queued write has committed."""
        self._db.attach(asyncio.get_running_loop())
        try:
            yield
        finally:
            await self._db.detach()

    def change_counter(self) -> int:
        return self._db.change_counter()

    def wait_for_change(self, timeout: float) -> bool:
        # Called by one thread at a time (the events' poller): the watch is made on first use.
        if self._watch is None:
            self._watch = FolderWatch.of(self.path) or False
        if self._watch is False:
            time.sleep(min(timeout, POLL_INTERVAL_SECONDS))  # no inotify here: poll
            return True
        return self._watch.wait(timeout)

    def close(self) -> None:
        if self._watch:
            self._watch.close()
        self._db.close()

    def submit_message(
        self,
        message: Message,
        deliveries: Sequence[NewDelivery],
        result: SendResult,
        idempotency_key: str | None,
        request_hash: str | None,
        task: TaskWrite | None = None,
    ) -> Pending[dict[str, int]]:
        return messages.submit_message(
            self._db, message, deliveries, result, idempotency_key, request_hash, self.fan_out_later_from, task
        )
