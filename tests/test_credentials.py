"""The credential's own rules, without a hub: what each kind of token may manage."""

from __future__ import annotations

import pytest

from switchboard.credentials import Credential
from switchboard.errors import Forbidden


def test_an_agent_token_manages_only_its_own_agents_card():
    token = Credential("t1", "agent", "team", "bob")
    token.check_manages("bob")
    token.check_manages(" Bob ")  # as the endpoint's path may spell it: names are lowercase, trimmed
    with pytest.raises(Forbidden, match="this token acts only as agent bob; it cannot change alice"):
        token.check_manages("alice")


@pytest.mark.parametrize("kind", ["user", "admin"])
def test_a_persons_token_manages_any_agents_card(kind):
    Credential("t1", kind, "team" if kind == "user" else None, None).check_manages("alice")
