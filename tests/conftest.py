"""Fixtures shared by every test folder: async tests on asyncio, the MCP protocol eras, a
database on each store (``db``), and agents on one fresh embedded store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from callboard.client.local import LocalClient
from callboard.config import Settings
from tests.support.postgres import db  # noqa: F401  (the fixture, offered to every test)

# "legacy": the initialize handshake that current agent CLIs use; "2026-07-28": the sessionless era.
MCP_ERAS = ["legacy", "2026-07-28"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=MCP_ERAS)
def era(request: pytest.FixtureRequest) -> str:
    """An MCP protocol era: a test that takes it runs once in each."""
    return request.param


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Callable[[str], LocalClient]]:
    """``agents(name)``: a LocalClient acting as ``name``, all on one fresh embedded store."""
    env = {"CALLBOARD_HOME": str(tmp_path / "home")}
    first = LocalClient.open(Settings.load(env), agent="someone", env=env)
    try:
        yield first.as_agent
    finally:
        first.service.store.close()
