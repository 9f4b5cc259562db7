"""The SQLite database as the store's shared parts use it (``store.sql.Database``): statements
run as written; reads on the calling thread's read connection, writes through ``transact`` (so
group commit takes them as well); no notices (other processes watch the file)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from callboard.store.sql import CHANGED, Connection, Notice
from callboard.store.sqlite.connection import SQLiteDatabase
from callboard.store.sqlite.messages import deliveries_written

T = TypeVar("T")


class SQLiteSQL:
    greatest = "max"
    lock_rows = ""  # one writer at a time: a transaction's reads are its own till it commits

    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db

    def inserted(self, table: str) -> str:
        return "rowid"

    def rows(self, statement: str, args: Sequence[object] = ()) -> list[Any]:
        with self.db.read() as conn:
            return conn.execute(statement, args).fetchall()

    def row(self, statement: str, args: Sequence[object] = ()) -> Any:
        with self.db.read() as conn:
            return conn.execute(statement, args).fetchone()

    def reading(self, read: Callable[[Connection], T]) -> T:
        with self.db.read() as conn:
            return read(conn)

    def change(self, statement: str, args: Sequence[object] = (), notice: Notice = CHANGED) -> list[Any]:
        return self.db.transact(lambda conn: conn.execute(statement, args).fetchall())

    def transact(self, write: Callable[[Connection], T], notice: Notice = CHANGED, lock: str | None = None) -> T:
        return self.db.transact(write)

    def deliveries_written(self) -> None:
        deliveries_written(self.db)

    def unique_violation(self, error: BaseException) -> str | None:
        # "UNIQUE constraint failed: tokens.secret_hash" names the table's column.
        if isinstance(error, sqlite3.IntegrityError) and "UNIQUE constraint failed: " in str(error):
            return str(error).split("UNIQUE constraint failed: ", 1)[1].split(",")[0].strip()
        return None
