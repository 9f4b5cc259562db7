"""The credentials' own rules, without a hub: what each kind of token may manage, and how a new
token that collides with a stored one is phrased (the store says which field; the person reads
what to do)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from callboard.errors import AlreadyExists, Forbidden
from callboard.service import credentials as credentials_module
from callboard.service.credentials import Credential, Credentials
from callboard.store.sqlite.store import SQLiteStore


@pytest.fixture
def credentials(tmp_path: Path) -> Iterator[Credentials]:
    store = SQLiteStore(tmp_path / "callboard.db")
    try:
        yield Credentials(store)
    finally:
        store.close()


def test_a_secret_issued_twice_is_refused_with_what_to_do(credentials, monkeypatch):
    monkeypatch.setattr(credentials_module.secrets, "token_urlsafe", lambda n: "the-same-secret")
    first = credentials.issue(None, "admin")
    with pytest.raises(AlreadyExists) as refused:
        credentials.issue(None, "admin")
    assert refused.value.code == "already_exists"
    assert refused.value.message == "a token with this secret already exists; issue it again with a new secret."
    assert [t.id for t in credentials.store.tokens.list_tokens()] == [first.id]


def test_a_token_id_issued_twice_is_refused_with_what_to_do(credentials, monkeypatch):
    monkeypatch.setattr(credentials_module, "new_id", lambda: "tok-1")
    credentials.issue(None, "admin")
    with pytest.raises(AlreadyExists) as refused:
        credentials.issue(None, "admin")
    assert refused.value.message == "a token with id tok-1 already exists; issue it again."


def test_an_agent_token_manages_only_its_own_agents_card():
    token = Credential("t1", "agent", "team", "bob")
    token.check_manages("bob")
    token.check_manages(" Bob ")  # as the endpoint's path may spell it: names are lowercase, trimmed
    with pytest.raises(Forbidden, match="this token acts only as agent bob; it cannot change alice"):
        token.check_manages("alice")


@pytest.mark.parametrize("kind", ["user", "admin"])
def test_a_persons_token_manages_any_agents_card(kind):
    Credential("t1", kind, "team" if kind == "user" else None, None).check_manages("alice")
