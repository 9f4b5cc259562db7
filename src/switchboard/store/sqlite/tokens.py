"""Hub credentials in the SQLite schema: functions on a connection, called by SQLiteStore."""

from __future__ import annotations

import sqlite3

from switchboard.store.base import NewToken, TokenTaken
from switchboard.store.rows import TOKEN_COLUMNS

# rowid breaks ties between tokens created in the same instant: the order they were created.
_OLDEST_FIRST = " ORDER BY created_at, rowid"


def insert_token(conn: sqlite3.Connection, token: NewToken, at: float) -> tuple:
    try:
        return conn.execute(
            "INSERT INTO tokens (id, kind, workspace, agent, label, secret_hash, created_at) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING {TOKEN_COLUMNS}",
            (token.id, token.kind, token.workspace, token.agent, token.label, token.secret_hash, at),
        ).fetchone()
    except sqlite3.IntegrityError as error:
        if "secret_hash" in str(error):
            raise TokenTaken("secret_hash") from None
        if "tokens.id" in str(error):
            raise TokenTaken("id") from None
        raise


def token_by_hash(conn: sqlite3.Connection, secret_hash: str) -> tuple | None:
    return conn.execute(f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE secret_hash = ?", (secret_hash,)).fetchone()


def list_tokens(conn: sqlite3.Connection, workspace: str | None) -> list[tuple]:
    if workspace is None:
        return conn.execute(f"SELECT {TOKEN_COLUMNS} FROM tokens" + _OLDEST_FIRST).fetchall()
    return conn.execute(
        f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE workspace = ?" + _OLDEST_FIRST, (workspace,)
    ).fetchall()


def revoke_token(conn: sqlite3.Connection, token_id: str, at: float) -> tuple | None:
    return conn.execute(
        f"UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? RETURNING {TOKEN_COLUMNS}",
        (at, token_id),
    ).fetchone()
