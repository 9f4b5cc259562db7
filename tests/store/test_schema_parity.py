"""The SQLite and PostgreSQL schemas, each migrated from nothing, hold the same tables with the
same columns: names, types (as families: each database spells them its own way), whether a
column may be NULL, primary keys and indexes. Every difference the two stores are allowed is
listed below with its reason; any other is a migration step missing on one side."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import NamedTuple

import psycopg

from callboard.store.sqlite.store import SQLiteStore


class Column(NamedTuple):
    type: str  # the family: text, integer or real (a boolean is an integer: see BOOLEAN_AS_INTEGER)
    nullable: bool


Schema = dict[str, dict[str, Column]]  # table -> column -> what it is

# Tables only one store has.
ONLY_SQLITE = {
    # A large send's deliveries wait there to be written out after the send is answered (see
    # store/sqlite/messages.py): a way around SQLite's one writer. PostgreSQL writes a send's
    # deliveries in the send's own statement.
    "fanout_parts",
}
ONLY_POSTGRES = {
    # The schema's step number. SQLite keeps it in the file's header (PRAGMA user_version).
    "callboard_schema",
}
# Columns only one store has: (table, column).
ONLY_POSTGRES_COLUMNS = {
    # Orders tokens created in the same instant as they were created; SQLite has its rowid.
    ("tokens", "ordinal"),
}

# SQLite's declared types and PostgreSQL's, as families. SQLite has no boolean type: a boolean
# column is an INTEGER there (0 or 1), so "integer" on SQLite matches "boolean" on PostgreSQL.
SQLITE_TYPES = {"TEXT": "text", "INTEGER": "integer", "REAL": "real"}
POSTGRES_TYPES = {"text": "text", "bigint": "integer", "integer": "integer", "double precision": "real"}
BOOLEAN_AS_INTEGER = {"boolean": "integer"}


def read_sqlite(path: Path) -> tuple[Schema, dict[str, list[str]], set[str]]:
    """Columns, primary keys and index names of every table of the file."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        columns: Schema = {}
        keys: dict[str, list[str]] = {}
        for table in tables:
            info = conn.execute(f"PRAGMA table_info({table})").fetchall()  # cid, name, type, notnull, default, pk
            # A PRIMARY KEY column of a rowid table may hold NULL in SQLite (a quirk kept for old
            # files); no store ever writes one, and PostgreSQL's primary keys are NOT NULL.
            columns[table] = {
                name: Column(SQLITE_TYPES[declared], not notnull and not pk)
                for _, name, declared, notnull, _, pk in info
            }
            keys[table] = [name for *_, name, _, _, _, pk in sorted(info, key=lambda r: r[5]) if pk]
        indexes = {
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        }
    finally:
        conn.close()
    return columns, keys, indexes


def read_postgres(url: str) -> tuple[Schema, dict[str, list[str]], set[str]]:
    """The same, of the connection's current schema."""
    with psycopg.connect(url, autocommit=True) as conn:
        columns: Schema = {}
        for table, name, declared, nullable in conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        ):
            family = POSTGRES_TYPES.get(declared) or BOOLEAN_AS_INTEGER[declared]
            columns.setdefault(table, {})[name] = Column(family, nullable == "YES")
        keys: dict[str, list[str]] = {table: [] for table in columns}
        for table, name in conn.execute(
            "SELECT k.table_name, k.column_name FROM information_schema.table_constraints c "
            "JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name "
            "AND k.table_schema = c.table_schema AND k.table_name = c.table_name "
            "WHERE c.table_schema = current_schema() AND c.constraint_type = 'PRIMARY KEY' "
            "ORDER BY k.table_name, k.ordinal_position"
        ):
            keys[table].append(name)
        # Indexes made by CREATE INDEX: not those behind a PRIMARY KEY or UNIQUE constraint
        # (SQLite makes those without a name of ours: sqlite_autoindex_*).
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT i.indexname FROM pg_indexes i WHERE i.schemaname = current_schema() AND NOT EXISTS "
                "(SELECT FROM pg_constraint c WHERE c.conname = i.indexname AND c.connamespace = "
                "(SELECT oid FROM pg_namespace WHERE nspname = current_schema()))"
            )
        }
    return columns, keys, indexes


def migrated_sqlite(tmp_path: Path) -> Path:
    path = tmp_path / "callboard.db"
    SQLiteStore(path).close()
    return path


def test_both_stores_migrate_to_the_same_tables_columns_keys_and_indexes(tmp_path, open_postgres, postgres_schema):
    lite_columns, lite_keys, lite_indexes = read_sqlite(migrated_sqlite(tmp_path))
    open_postgres()  # migrates the fresh schema
    pg_columns, pg_keys, pg_indexes = read_postgres(postgres_schema.url)

    assert set(lite_columns) - set(pg_columns) == ONLY_SQLITE
    assert set(pg_columns) - set(lite_columns) == ONLY_POSTGRES
    for table, name in ONLY_POSTGRES_COLUMNS:  # still a difference: else take it off the list
        assert name in pg_columns[table] and name not in lite_columns[table]
    for table in sorted(set(lite_columns) & set(pg_columns)):
        pg_table = {
            name: column for name, column in pg_columns[table].items() if (table, name) not in ONLY_POSTGRES_COLUMNS
        }
        assert lite_columns[table] == pg_table, f"table {table} differs"
        assert lite_keys[table] == pg_keys[table], f"the primary key of {table} differs"
    assert lite_indexes == pg_indexes
