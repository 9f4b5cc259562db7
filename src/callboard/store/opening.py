"""Which store a location names: a ``postgresql://`` URL is the PostgreSQL store (for several hub
replicas), anything else the embedded SQLite file."""

from __future__ import annotations

from pathlib import Path

from callboard.errors import BadRequest
from callboard.store.base import Store

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def store_kind(store: Store) -> str:
    """ "postgresql" or "sqlite", as /health says; ``location`` tells them apart."""
    return "postgresql" if is_postgres(store.location) else "sqlite"


def open_store(location: str | Path, *, replica: str | None = None) -> Store:
    """The store at ``location``; ``replica`` names this process among a PostgreSQL store's hubs."""
    if is_postgres(location):
        assert isinstance(location, str)
        try:
            from callboard.store.postgres.store import PostgresStore
        except ImportError as error:  # psycopg is an extra: the embedded store does without it
            raise BadRequest(
                f"the PostgreSQL store needs psycopg ({error.name} is not installed): "
                "pip install 'callboard[postgres]'."
            ) from None
        return PostgresStore(location, replica=replica)
    from callboard.store.sqlite.store import SQLiteStore

    return SQLiteStore(location)
