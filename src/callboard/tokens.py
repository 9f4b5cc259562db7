"""A hub credential as the mailbox shows it: listed (never its secret), or just issued (the only
time its secret is shown). The rules that make, check and revoke them are ``service.credentials``.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from callboard.model import Model, TokenKind


class TokenInfo(Model):
    """A hub credential as lists show it; the secret itself is never stored or shown again."""

    id: str
    kind: TokenKind
    workspace: str | None = Field(default=None, description="None for the admin token")
    agent: str | None = Field(default=None, description="set for agent tokens: the one agent it acts as")
    label: str | None = None
    created_at: datetime
    revoked_at: datetime | None = None


class IssuedToken(TokenInfo):
    """A credential just created: the only time its secret is shown."""

    token: str
