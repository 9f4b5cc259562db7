"""The quick look into the embedded store (hooks/probe.py) agrees with the service: it says
"nothing" only when there is nothing to surface."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from callboard.client.local import LocalClient
from callboard.config import Settings
from callboard.integrations.hooks.probe import may_have_mail
from callboard.requests import SendRequest, SurfaceQuery


def test_the_probe_agrees_with_surface(tmp_path: Path) -> None:
    env = {"CALLBOARD_HOME": str(tmp_path / "home")}
    settings = Settings.load(env)
    db = settings.db_path
    assert not may_have_mail(db, "default", "bob")  # no database yet: no mail was ever sent here
    alice = LocalClient.open(settings, agent="alice", env=env)
    try:
        bob = alice.as_agent("bob")
        alice.send(SendRequest(to="bob", text="hello"))
        assert may_have_mail(db, "default", "bob")
        assert not may_have_mail(db, "default", "bob", urgent_only=True)
        assert not may_have_mail(db, "default", "carol") and not may_have_mail(db, "elsewhere", "bob")
        assert len(bob.surface(SurfaceQuery(via="hook")).items) == 1
        assert not may_have_mail(db, "default", "bob")  # surfaced: nothing new
        alice.send(SendRequest(to="bob", text="now!", urgent=True))
        assert may_have_mail(db, "default", "bob", urgent_only=True)
        bob.read()
        assert not may_have_mail(db, "default", "bob") and not may_have_mail(db, "default", "bob", urgent_only=True)
    finally:
        alice.close()


def test_the_probe_says_maybe_when_unsure(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    assert may_have_mail(garbage, "default", "bob")
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()  # a database without the store's tables
    assert may_have_mail(empty, "default", "bob")
