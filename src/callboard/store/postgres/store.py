"""The shared store: one PostgreSQL database (schema), for several hub replicas at once.

Connections come from a pool and run in autocommit (``connection``): most methods are one
statement, hence one round trip and one transaction; the few that need several statements open
a transaction. Sends run on the store's own threads: ``submit_message`` answers a Pending at
once, as the hub, which calls it on its event loop, needs. Every write that changes something
notifies the other replicas through ``pg_notify`` in its transaction (``notices``, heard by
``listener``). The schema is applied on opening (``schema``).

``PostgresStore`` is the Store interface and nothing more: its parts are the shared ones
(``store/parts/``) on this database (``sql``), with this folder's own ways of taking mail
(``mailbox``) and claiming the outboxes (``tasks``, ``remotes``); here is only what is
PostgreSQL's own — opening, the change counter and listeners (the notifications),
``submit_message`` with ``messages`` (storing a send), and ``deliveries_of`` for the replicas'
streams.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

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
from callboard.store.postgres import messages, sent
from callboard.store.postgres.connection import POOL_SIZE, PostgresDatabase
from callboard.store.postgres.listener import Callback
from callboard.store.postgres.mailbox import PostgresMailbox
from callboard.store.postgres.remotes import PostgresRemotes
from callboard.store.postgres.sql import PostgresSQL
from callboard.store.postgres.tasks import PostgresTasks
from callboard.store.records import NewDelivery, TaskWrite


class PostgresStore:
    """The Store interface on a PostgreSQL database: the connection's current schema."""

    def __init__(self, url: str, *, replica: str | None = None, pool_size: int = POOL_SIZE) -> None:
        """``url``: a libpq URL or connection string; its ``options=-csearch_path=…`` chooses the
        schema. ``replica``: this store's name in its change notifications (default: random).
        Raises StoreUnavailable when the database cannot be reached."""
        self._db = PostgresDatabase(url, replica, pool_size)
        sql = PostgresSQL(self._db)
        self.directory = SQLDirectory(sql)
        self.sessions = SQLSessions(sql)
        self.sent = SQLSent(sql)
        self.mailbox = PostgresMailbox(sql)
        self.handing = SQLHanding(sql)
        self.guard_facts = SQLGuardFacts(sql)
        self.audit = SQLAudit(sql)
        self.tokens = SQLTokens(sql)
        self.tasks = PostgresTasks(sql)
        self.remotes = PostgresRemotes(sql)
        self.runners = SQLRunners(sql)
        self.rounds = SQLRounds(sql)
        self.leases = SQLLeases(sql)
        self.location = self._db.location  # the URL less its password
        self.replica = self._db.replica
        self.schema = self._db.schema
        self.channel = self._db.channel  # the NOTIFY channel of this schema

    @asynccontextmanager
    async def committing_on_loop(self) -> AsyncIterator[None]:
        """Nothing to do: every transaction commits on the pool's threads, never on the loop."""
        yield

    def wait_for_change(self, timeout: float) -> bool:
        time.sleep(min(timeout, POLL_INTERVAL_SECONDS))  # the listener counts notifications: poll it
        return True

    def close(self) -> None:
        self._db.close()

    def change_counter(self) -> int:
        """The number of change notifications heard; listening starts at the first call."""
        self._db.listener.start()
        return self._db.listener.count

    def add_listener(self, callback: Callback) -> None:
        """Call ``callback(payload)`` on the listening thread after each commit of any store on
        this schema (this one too: compare ``payload.get("r")`` with ``replica``). The payload:
        ``{"r": replica, "w": workspace, "a": [agent, …]}`` when those mailboxes' deliveries
        changed, ``{"r", "w"}`` for any mailbox of the workspace, ``{"r"}`` for another change,
        ``{}`` for anything at all (the listener reconnected). It must not block."""
        self._db.listener.add_callback(callback)
        self._db.listener.start()

    def submit_message(
        self,
        message: Message,
        deliveries: Sequence[NewDelivery],
        result: SendResult,
        idempotency_key: str | None,
        request_hash: str | None,
        task: TaskWrite | None = None,
    ) -> Pending[dict[str, int]]:
        return messages.submit_message(self._db, message, deliveries, result, idempotency_key, request_hash, task)

    def deliveries_of(
        self, workspace: str, message_id: str, agents: Sequence[str]
    ) -> tuple[str, list[tuple[str, int, str, str | None, str | None, str | None]]] | None:
        """A new message as JSON and its deliveries to ``agents``, in one query (see sent)."""
        return sent.deliveries_of(self._db, workspace, message_id, agents)
