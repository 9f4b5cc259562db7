"""The tokens part: the hub's credentials (stored hashed). Its interface, and its SQL for both
dialects."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from callboard.store.records import NewToken, TokenTaken
from callboard.store.rows import TOKEN_COLUMNS, check_token, to_ts, token_from_row
from callboard.store.sql import Database
from callboard.tokens import TokenInfo


class TokensPart(Protocol):
    def create_token(self, token: NewToken, now: datetime) -> TokenInfo:
        """Store the token; TokenTaken when its id or secret hash is already stored."""
        ...

    def token_by_hash(self, secret_hash: str) -> TokenInfo | None:
        """The token with this secret hash, revoked or not (the caller checks ``revoked_at``)."""
        ...

    def list_tokens(self, workspace: str | None = None) -> list[TokenInfo]:
        """Tokens of one workspace (None: every token, admin ones included), oldest first."""
        ...

    def revoke_token(self, token_id: str, now: datetime) -> TokenInfo | None:
        """Mark revoked (keeping the first revocation time); None when no such token."""
        ...


# The unique constraint a taken field breaks, as each dialect names it.
_TAKEN: dict[str, Literal["id", "secret_hash"]] = {
    "tokens.secret_hash": "secret_hash",
    "tokens_secret_hash_key": "secret_hash",
    "tokens.id": "id",
    "tokens_pkey": "id",
}


class SQLTokens:
    def __init__(self, db: Database) -> None:
        self._db = db
        # Tokens created in the same instant: in the order they were created.
        self._oldest_first = f" ORDER BY created_at, {db.inserted('tokens')}"

    def create_token(self, token: NewToken, now: datetime) -> TokenInfo:
        check_token(token)
        try:
            (row,) = self._db.change(
                "INSERT INTO tokens (id, kind, workspace, agent, label, secret_hash, created_at) "
                f"VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING {TOKEN_COLUMNS}",
                (token.id, token.kind, token.workspace, token.agent, token.label, token.secret_hash, to_ts(now)),
            )
        except Exception as error:
            field = _TAKEN.get(self._db.unique_violation(error) or "")
            if field is None:
                raise
            raise TokenTaken(field) from None
        return token_from_row(row)

    def token_by_hash(self, secret_hash: str) -> TokenInfo | None:
        row = self._db.row(f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE secret_hash = ?", (secret_hash,))
        return token_from_row(row) if row else None

    def list_tokens(self, workspace: str | None = None) -> list[TokenInfo]:
        if workspace is None:
            rows = self._db.rows(f"SELECT {TOKEN_COLUMNS} FROM tokens" + self._oldest_first)
        else:
            rows = self._db.rows(
                f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE workspace = ?" + self._oldest_first, (workspace,)
            )
        return [token_from_row(r) for r in rows]

    def revoke_token(self, token_id: str, now: datetime) -> TokenInfo | None:
        rows = self._db.change(
            f"UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? RETURNING {TOKEN_COLUMNS}",
            (to_ts(now), token_id),
        )
        return token_from_row(rows[0]) if rows else None
