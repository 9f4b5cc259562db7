"""Hub credentials in the SQLite schema: functions on the database, called by SQLiteStore."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from callboard.model import TokenInfo
from callboard.store.base import NewToken, TokenTaken
from callboard.store.rows import TOKEN_COLUMNS, check_token, to_ts, token_from_row
from callboard.store.sqlite.connection import SQLiteDatabase

# rowid breaks ties between tokens created in the same instant: the order they were created.
_OLDEST_FIRST = " ORDER BY created_at, rowid"


def create_token(db: SQLiteDatabase, token: NewToken, now: datetime) -> TokenInfo:
    check_token(token)

    def insert(conn: sqlite3.Connection) -> tuple:
        try:
            return conn.execute(
                "INSERT INTO tokens (id, kind, workspace, agent, label, secret_hash, created_at) "
                f"VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING {TOKEN_COLUMNS}",
                (token.id, token.kind, token.workspace, token.agent, token.label, token.secret_hash, to_ts(now)),
            ).fetchone()
        except sqlite3.IntegrityError as error:
            if "secret_hash" in str(error):
                raise TokenTaken("secret_hash") from None
            if "tokens.id" in str(error):
                raise TokenTaken("id") from None
            raise

    return token_from_row(db.transact(insert))


def token_by_hash(db: SQLiteDatabase, secret_hash: str) -> TokenInfo | None:
    with db.read() as conn:
        row = conn.execute(f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE secret_hash = ?", (secret_hash,)).fetchone()
    return token_from_row(row) if row else None


def list_tokens(db: SQLiteDatabase, workspace: str | None) -> list[TokenInfo]:
    with db.read() as conn:
        if workspace is None:
            rows = conn.execute(f"SELECT {TOKEN_COLUMNS} FROM tokens" + _OLDEST_FIRST).fetchall()
        else:
            rows = conn.execute(
                f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE workspace = ?" + _OLDEST_FIRST, (workspace,)
            ).fetchall()
    return [token_from_row(r) for r in rows]


def revoke_token(db: SQLiteDatabase, token_id: str, now: datetime) -> TokenInfo | None:
    row = db.transact(
        lambda conn: conn.execute(
            f"UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? RETURNING {TOKEN_COLUMNS}",
            (to_ts(now), token_id),
        ).fetchone()
    )
    return token_from_row(row) if row else None
