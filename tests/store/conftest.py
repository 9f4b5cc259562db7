"""Fixtures for the Store contract suite, parametrized over every Store implementation.

A test asks for ``store`` (a fresh, empty database) and, when it needs a second connection
to that same database — another process's view — for ``reopen``, which opens one more.
A new implementation adds its name to ``IMPLEMENTATIONS`` and a branch to ``_open``; the
tests in this folder then run against it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from switchboard.store.base import Store
from switchboard.store.sqlite import SQLiteStore

IMPLEMENTATIONS = ["sqlite", "sqlite-group-commit"]


class StoreFactory:
    """Opens connections to one fresh database of one implementation; closes them at the end."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self._opened: list[Store] = []

    def open(self) -> Store:
        store = self._open()
        self._opened.append(store)
        return store

    def _open(self) -> Store:
        if self.kind == "sqlite":
            return SQLiteStore(self.tmp_path / "switchboard.db")
        if self.kind == "sqlite-group-commit":  # as the hub opens it: writes batched by a writer thread
            return SQLiteStore(self.tmp_path / "switchboard.db", group_commit=True)
        raise ValueError(f"no store implementation named {self.kind!r}")

    def close_all(self) -> None:
        for store in reversed(self._opened):
            try:
                store.close()
            except Exception:  # already closed by the test
                pass


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
