"""The SQLite schema's steps and constraints: what the contract suite cannot see."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from callboard.model import new_id
from callboard.store.records import NewToken
from callboard.store.sqlite.schema import MIGRATIONS
from callboard.store.sqlite.store import SQLiteStore
from tests.support.store_data import T0, WS


def test_a_database_made_by_the_first_schema_step_is_brought_forward_with_its_data(tmp_path):
    path = tmp_path / "old.db"
    old = sqlite3.connect(path, isolation_level=None)
    old.executescript(MIGRATIONS[0])
    old.execute("PRAGMA user_version = 1")
    old.execute("INSERT INTO workspaces (name, created_at) VALUES (?, ?)", (WS, T0.timestamp()))
    old.close()

    store = SQLiteStore(path)
    try:
        assert [w.name for w in store.directory.list_workspaces()] == [WS]
        token = store.tokens.create_token(NewToken(id=new_id(), kind="user", secret_hash="ab" * 32, workspace=WS), T0)
        assert store.tokens.list_tokens(WS) == [token]
    finally:
        store.close()
    with closing(sqlite3.connect(path)) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


@pytest.mark.parametrize(
    "kind, workspace, agent",
    [
        ("admin", WS, None),  # an admin token belongs to no workspace
        ("user", None, None),
        ("agent", WS, None),  # an agent token names its agent
        ("user", WS, "bob"),
        ("root", None, None),
    ],
)
def test_a_token_whose_fields_do_not_fit_its_kind_is_refused(tmp_path, kind, workspace, agent):
    store = SQLiteStore(tmp_path / "s.db")
    try:
        with pytest.raises(ValueError):
            store.tokens.create_token(
                NewToken(id=new_id(), kind=kind, secret_hash="cd" * 32, workspace=workspace, agent=agent), T0
            )
        assert store.tokens.list_tokens() == []
    finally:
        store.close()
    # and the schema itself refuses them, whatever code writes the row
    with closing(sqlite3.connect(tmp_path / "s.db")) as conn, pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        conn.execute(
            "INSERT INTO tokens (id, kind, workspace, agent, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, 0)",
            (new_id(), kind, workspace, agent, "cd" * 32),
        )
