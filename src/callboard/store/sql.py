"""What a store part's SQL, written once, asks of a dialect: statements run on SQLite as they are
written and on PostgreSQL after one conversion of their placeholders.

Shared statements use ``?`` placeholders (SQLite's own style); PostgreSQL's connection wrapper
turns each statement text into ``%s`` style once (``postgres/sql.py``, cached by text). A
statement written here uses only SQL both dialects run alike: ``INSERT … ON CONFLICT``,
``RETURNING``, row values, ``coalesce``; what differs is named by the database (``greatest``,
``lock_rows``, ``inserted``) or stays in the dialect's folder (group commit, row locking
with SKIP LOCKED, change notifications, DDL).

Every write names whom its change concerns (``Notice``): PostgreSQL tells the other hub
replicas, in the write's own transaction; SQLite's watchers see the file change and need nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Cursor(Protocol):
    """What a statement's execution gives back (sqlite3's and psycopg's cursors both are one)."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection that runs shared statements (``?`` placeholders), inside a transaction or
    reading."""

    def execute(self, statement: str, args: Sequence[object] = ..., /) -> Cursor: ...


@dataclass(frozen=True, slots=True)
class Notice:
    """Whom a write's change concerns, for the other replicas of a shared store: ``agents``'
    mailboxes of ``workspace``; neither: something changed. ``quiet``: nothing waits on it, so
    nobody is told (a runner's heartbeat, an outbox's lease)."""

    workspace: str | None = None
    agents: Sequence[str] | None = None
    quiet: bool = False


CHANGED = Notice()
QUIET = Notice(quiet=True)


class Database(Protocol):
    """A store's database as its shared parts use it."""

    # The dialect's names for what SQL does not spell alike.
    greatest: str  # the larger of two values: SQLite's max(a, b), PostgreSQL's greatest(a, b)
    lock_rows: str  # after a SELECT in a transaction: lock its rows till commit ("" where one writer is all)

    def inserted(self, table: str) -> str:
        """A column of ``table`` that orders its rows as they were inserted."""
        ...

    def rows(self, statement: str, args: Sequence[object] = ()) -> list[Any]:
        """The rows a read answers (the latest committed state)."""
        ...

    def row(self, statement: str, args: Sequence[object] = ()) -> Any:
        """The first row a read answers, or None."""
        ...

    def reading(self, read: Callable[[Connection], T]) -> T:
        """``read(conn)``: several reads on one connection."""
        ...

    def change(self, statement: str, args: Sequence[object] = (), notice: Notice = CHANGED) -> list[Any]:
        """One write statement (with ``RETURNING``), its own transaction, committed; the rows it
        returned. It notifies ``notice`` when it returned any."""
        ...

    def transact(self, write: Callable[[Connection], T], notice: Notice = CHANGED, lock: str | None = None) -> T:
        """``write(conn)`` as one transaction, committed; notifies ``notice`` when a statement
        changed a row. ``lock``: a name that writes of the same name take turns on (one writer
        at a time is already so for SQLite)."""
        ...

    def deliveries_written(self) -> None:
        """Return once every delivery of a send answered so far can be read (SQLite writes a
        large send's deliveries after answering it); every reader of deliveries calls it first."""
        ...

    def unique_violation(self, error: BaseException) -> str | None:
        """The unique constraint (or ``table.column``) ``error`` broke, or None when it is not a
        unique violation."""
        ...


def marks(values: Sequence[object]) -> str:
    """The placeholders of an ``IN (…)`` list of ``values`` (at least one)."""
    return ", ".join("?" * len(values))
