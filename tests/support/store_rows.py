"""Every table of a store and its rows, read through a connection of their own: a snapshot that
shows whether a command wrote anything (``changed``; ``writes_nothing`` for a call that must
fail), on the embedded SQLite file or a PostgreSQL schema."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

Snapshot = dict[str, list[str]]  # table -> its rows as text, in a stable order


def snapshot(db: str | Path) -> Snapshot:
    """Every table's rows: of the SQLite file ``db``, or of the schema a postgresql:// URL uses."""
    if str(db).startswith(("postgresql://", "postgres://")):
        return _postgres(str(db))
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)  # a reader of its own: it writes nothing
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{t}"')) for t in tables}
    finally:
        conn.close()


def _postgres(url: str) -> Snapshot:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                "ORDER BY table_name"
            )
        ]
        return {t: [r[0] for r in conn.execute(f'SELECT t::text FROM "{t}" t ORDER BY 1')] for t in tables}


def changed(before: Snapshot, after: Snapshot) -> dict[str, str]:
    """Per table that differs, how: its row count then and now, and a row that came or went."""
    found = {}
    for table in sorted(set(before) | set(after)):
        old, new = before.get(table, []), after.get(table, [])
        if old != new:
            came = next((row for row in new if row not in old), None)
            went = next((row for row in old if row not in new), None)
            found[table] = (
                f"{len(old)} -> {len(new)} rows"
                + (f"; new {came}" if came else "")
                + (f"; gone {went}" if went else "")
            )
    return found


@contextmanager
def writes_nothing(db: str | Path) -> Iterator[None]:
    """The block (a call that must fail) leaves every table of the store as it found it."""
    before = snapshot(db)
    yield
    after = snapshot(db)
    assert after == before, f"the failed call changed the database: {changed(before, after)}"
