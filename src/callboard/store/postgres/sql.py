"""The PostgreSQL database as the store's shared parts use it (``store.sql.Database``).

Shared statements are written with ``?`` placeholders; ``postgres_style`` turns a statement's
text into psycopg's ``%s`` once (cached by text). A write notifies the other replicas in its own
transaction when it changed a row (``notices``): a single statement as a CTE beside its
``pg_notify`` (one round trip), several statements in a transaction that notifies before it
commits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors

from callboard.store.postgres import notices
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.sql import CHANGED, Connection, Notice

T = TypeVar("T")


@lru_cache(maxsize=2048)
def postgres_style(statement: str) -> str:
    """``statement`` with psycopg's placeholders: ``?`` becomes ``%s``, a literal ``%`` ``%%``.
    (No shared statement has a ``?`` in a string literal.)"""
    return statement.replace("%", "%%").replace("?", "%s")


_WRITES = ("INSERT", "UPDATE", "DELETE")


class PostgresConnection:
    """A psycopg connection that runs shared statements, and remembers whether one changed a row."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.changed = False

    def execute(self, statement: str, args: Sequence[object] = (), /) -> psycopg.Cursor:
        cursor = self.conn.execute(postgres_style(statement), args)
        if cursor.rowcount > 0 and statement.lstrip()[:6].upper() in _WRITES:
            self.changed = True
        return cursor


class PostgresSQL:
    greatest = "greatest"
    lock_rows = " FOR UPDATE"

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    def inserted(self, table: str) -> str:
        # ctid is a row's place, kept until it is updated; tokens are updated (revoked), so they
        # carry their own ordinal.
        return "ordinal" if table == "tokens" else "ctid"

    def rows(self, statement: str, args: Sequence[object] = ()) -> list[Any]:
        return self.db.all(postgres_style(statement), args)

    def row(self, statement: str, args: Sequence[object] = ()) -> Any:
        return self.db.one(postgres_style(statement), args)

    def reading(self, read: Callable[[Connection], T]) -> T:
        return self.db.run(lambda conn: read(PostgresConnection(conn)), reads_only=True)

    def change(self, statement: str, args: Sequence[object] = (), notice: Notice = CHANGED) -> list[Any]:
        if notice.quiet:
            return self.db.run(lambda conn: conn.execute(postgres_style(statement), args).fetchall())
        notifying = f"WITH w AS ({postgres_style(statement)}) SELECT w.*, pg_notify(%s, %s)::text FROM w"
        args = (*args, self.db.channel, self._payload(notice))
        rows = self.db.run(lambda conn: conn.execute(notifying, args).fetchall())
        return [row[:-1] for row in rows]

    def transact(self, write: Callable[[Connection], T], notice: Notice = CHANGED, lock: str | None = None) -> T:
        def run(conn: psycopg.Connection) -> T:
            with conn.transaction():
                if lock is not None:
                    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock,))
                shared = PostgresConnection(conn)
                value = write(shared)
                if shared.changed and not notice.quiet:
                    self.db.notify(conn, self._payload(notice))
                return value

        return self.db.run(run)

    def deliveries_written(self) -> None:
        pass  # a send's deliveries commit with it

    def unique_violation(self, error: BaseException) -> str | None:
        return error.diag.constraint_name if isinstance(error, pg_errors.UniqueViolation) else None

    def _payload(self, notice: Notice) -> str:
        return notices.payload(self.db.replica, notice.workspace, notice.agents)
