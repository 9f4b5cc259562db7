"""Fixtures for the Store contract suite, parametrized over every Store implementation.

A test asks for ``store`` (a fresh, empty database) and, when it needs a second connection
to that same database — another process's view — for ``reopen``, which opens one more.
A new implementation adds its name to ``IMPLEMENTATIONS`` and a branch to ``_open``; the
tests in this folder then run against it unchanged.
"""

from __future__ import annotations

import asyncio
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from callboard.store.base import Store
from callboard.store.sqlite import messages as sqlite_messages
from callboard.store.sqlite.connection import SQLiteDatabase
from callboard.store.sqlite.store import SQLiteStore
from tests.support.loop_thread import LOOP_DEADLINE, LoopThread
from tests.support.postgres import schema_url, server_url

T = TypeVar("T")

IMPLEMENTATIONS = ["sqlite", "sqlite-group-commit", "sqlite-loop-commit", "postgres"]


async def enter(manager: AbstractAsyncContextManager[None]) -> None:
    await manager.__aenter__()


async def leave(manager: AbstractAsyncContextManager[None]) -> None:
    await manager.__aexit__(None, None, None)


class PostgresSchema:
    """A fresh schema for one test on the test server (``tests.support.postgres``: 127.0.0.1:5432, database
    ``test``, or the URL in CALLBOARD_TEST_POSTGRES); ``.url`` connects to it, ``drop`` removes
    it and all in it. Without the server, the test skips or fails as ``server_url`` says."""

    def __init__(self) -> None:
        import psycopg

        self.server = server_url()
        self.name = f"cb_test_{secrets.token_hex(6)}"
        with psycopg.connect(self.server, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE SCHEMA "{self.name}"')
        self.url = schema_url(self.server, self.name)

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.server, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE')


class StoreFactory:
    """Opens connections to one fresh database of one implementation; closes them at the end."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self._opened: list[Store] = []
        # sqlite-loop-commit: one loop commits for every store opened, as each would in its own hub
        self._loop: LoopThread | None = None
        self._attached: dict[int, AbstractAsyncContextManager[None]] = {}
        self._schema: PostgresSchema | None = None  # postgres: every store of the test shares it

    def open(self) -> Store:
        store = self._open()
        self._opened.append(store)
        return store

    def _open(self) -> Store:
        if self.kind == "sqlite":
            return SQLiteStore(self.tmp_path / "callboard.db")
        if self.kind == "sqlite-group-commit":  # writes batched by a writer thread (a caller without a loop)
            return SQLiteStore(self.tmp_path / "callboard.db", group_commit=True)
        if self.kind == "sqlite-loop-commit":  # as the hub opens it: batched on its event loop
            return self._open_on_loop()
        if self.kind == "postgres":  # each store on its own pool, as each hub replica would be
            from callboard.store.postgres.store import PostgresStore

            if self._schema is None:
                self._schema = PostgresSchema()
            return PostgresStore(self._schema.url)
        raise ValueError(f"no store implementation named {self.kind!r}")

    def _open_on_loop(self) -> SQLiteStore:
        store = SQLiteStore(self.tmp_path / "callboard.db")
        # Every send's deliveries are written out after its answer, as a hub does for large
        # ones: the contract must hold for readers all the same.
        store.fan_out_later_from = 1
        if self._loop is None:
            self._loop = LoopThread()
        # Entered on the loop itself, as the hub's lifespan does: attach() takes the thread it
        # runs on as the loop's. The tests then call the store from their own thread.
        attached = store.committing_on_loop()
        self._loop.run(enter(attached))
        self._attached[id(store)] = attached
        return store

    def close_all(self) -> None:
        failed: list[str] = []
        for store in reversed(self._opened):
            attached = self._attached.pop(id(store), None)
            if attached is not None:
                assert self._loop is not None
                try:  # every queued write commits before detach returns: then close finds none
                    self._loop.run(leave(attached))
                except TimeoutError:
                    failed.append("detach() never returned: a write queued on the loop never committed")
                except Exception as error:  # the other stores are closed all the same
                    failed.append(f"detach() raised {error!r}")
            try:
                store.close()
            except Exception:  # already closed by the test
                pass
        if self._loop is not None:
            self._loop.stop()
        if self._schema is not None:
            self._schema.drop()
        if failed:
            pytest.fail("; ".join(failed))


@pytest.fixture(params=IMPLEMENTATIONS)
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    factory = StoreFactory(request.param, tmp_path)
    try:
        yield factory
    finally:
        factory.close_all()


@pytest.fixture
def store(store_factory: StoreFactory) -> Store:
    """An open store on a fresh, empty database."""
    return store_factory.open()


@pytest.fixture
def reopen(store_factory: StoreFactory, store: Store) -> Callable[[], Store]:
    """Open another connection (its own Store object) to the same database as ``store``."""
    return store_factory.open


@pytest.fixture
def insert_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of messages of each insert_messages call the store makes, in order.

    The store passes the same function as every send's ``together``, and calls it with one
    message for a send that runs alone: a batch stored in one go shows as one call of N."""
    calls: list[int] = []
    real = sqlite_messages.insert_messages

    def counting(conn: sqlite3.Connection, messages: list) -> list[dict[str, int]]:
        calls.append(len(messages))
        return real(conn, messages)

    monkeypatch.setattr(sqlite_messages, "insert_messages", counting)
    return calls


# --- one store (or several) group-committing on a loop, as a hub runs it ---------------------------


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "callboard.db"


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    running = LoopThread()
    try:
        yield running
    finally:
        running.stop()


def db(store: SQLiteStore) -> SQLiteDatabase:
    return store._db


def on_loop(loop_thread: LoopThread, fn: Callable[[], T], timeout: float = LOOP_DEADLINE) -> T:
    """Call ``fn`` on the loop's thread, in one turn of the loop, and return what it returned
    (once the loop has also run what ``fn`` scheduled to run at once, such as a flush)."""

    async def call() -> T:
        return fn()

    return loop_thread.run(call(), timeout)


async def attach_here(store: SQLiteStore) -> None:
    db(store).attach(asyncio.get_running_loop())


@pytest.fixture
def opened(path: Path, loop_thread: LoopThread) -> Iterator[Callable[..., SQLiteStore]]:
    """Open SQLiteStores on one database file, attached to the loop unless told; at the end each
    is detached (its queued writes committed) and closed."""
    stores: list[SQLiteStore] = []

    def open_store(attach: bool = True) -> SQLiteStore:
        store = SQLiteStore(path)
        stores.append(store)
        if attach:
            loop_thread.run(attach_here(store), LOOP_DEADLINE)
        return store

    yield open_store
    stuck = []
    for store in reversed(stores):
        try:
            loop_thread.run(db(store).detach(), LOOP_DEADLINE)
        except FutureTimeout:
            stuck.append(store)
        store.close()
    assert not stuck, "detach() never returned: a write queued on the loop never committed"


@pytest.fixture
def attached(opened) -> SQLiteStore:
    """A store group-committing on the loop."""
    return opened()


@pytest.fixture
def elsewhere(opened) -> SQLiteStore:
    """Another connection to the same file, inline: what another process sees."""
    return opened(attach=False)


# --- the PostgreSQL store's own tests ----------------------------------------------------------------


@pytest.fixture
def postgres_schema() -> Iterator[PostgresSchema]:
    """A fresh, empty schema in the test database (``.url`` connects to it); dropped at the end."""
    schema = PostgresSchema()
    try:
        yield schema
    finally:
        schema.drop()


@pytest.fixture
def open_postgres(postgres_schema: PostgresSchema) -> Iterator[Callable[..., Any]]:
    """Open PostgresStores on one fresh schema (keyword arguments go to the constructor);
    every one is closed at the end."""
    from callboard.store.postgres.store import PostgresStore

    stores: list[PostgresStore] = []

    def open_store(**options: Any) -> PostgresStore:
        store = PostgresStore(postgres_schema.url, **options)
        stores.append(store)
        return store

    yield open_store
    for store in reversed(stores):
        store.close()
