"""Hub credentials in the PostgreSQL schema: functions on the database, called by PostgresStore."""

from __future__ import annotations

from datetime import datetime

from psycopg import errors as pg_errors

from callboard.model import TokenInfo
from callboard.store.base import NewToken, TokenTaken
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.rows import TOKEN_COLUMNS, check_token, to_ts, token_from_row

# ordinal breaks ties between tokens created in the same instant: the order they were created.
_OLDEST_FIRST = " ORDER BY created_at, ordinal"
# The unique constraint a taken field breaks.
_TAKEN = {"tokens_secret_hash_key": "secret_hash", "tokens_pkey": "id"}


def create_token(db: PostgresDatabase, token: NewToken, now: datetime) -> TokenInfo:
    check_token(token)
    try:
        (row,) = db.notifying(
            "INSERT INTO tokens (id, kind, workspace, agent, label, secret_hash, created_at) "
            "VALUES (%(id)s, %(kind)s, %(ws)s, %(agent)s, %(label)s, %(hash)s, %(at)s) "
            f"RETURNING {TOKEN_COLUMNS}",
            {
                "id": token.id,
                "kind": token.kind,
                "ws": token.workspace,
                "agent": token.agent,
                "label": token.label,
                "hash": token.secret_hash,
                "at": to_ts(now),
            },
        )
    except pg_errors.UniqueViolation as error:
        field = _TAKEN.get(error.diag.constraint_name or "")
        if field is None:
            raise
        raise TokenTaken(field) from None  # type: ignore[arg-type]
    return token_from_row(row)


def token_by_hash(db: PostgresDatabase, secret_hash: str) -> TokenInfo | None:
    row = db.one(f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE secret_hash = %s", (secret_hash,))
    return token_from_row(row) if row else None


def list_tokens(db: PostgresDatabase, workspace: str | None) -> list[TokenInfo]:
    if workspace is None:
        rows = db.all(f"SELECT {TOKEN_COLUMNS} FROM tokens" + _OLDEST_FIRST)
    else:
        rows = db.all(f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE workspace = %s" + _OLDEST_FIRST, (workspace,))
    return [token_from_row(r) for r in rows]


def revoke_token(db: PostgresDatabase, token_id: str, now: datetime) -> TokenInfo | None:
    rows = db.notifying(
        f"UPDATE tokens SET revoked_at = coalesce(revoked_at, %(at)s) WHERE id = %(id)s RETURNING {TOKEN_COLUMNS}",
        {"id": token_id, "at": to_ts(now)},
    )
    return token_from_row(rows[0]) if rows else None
