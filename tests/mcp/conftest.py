"""Fixtures for the MCP tool tests: agents on one embedded store, each with its own tool server,
and the official ``mcp`` client (in the protocol era of the ``era`` fixture, tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client

from switchboard.client import LocalClient
from switchboard.config import Settings
from switchboard.mcp import mailbox_server, one_client


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Callable[[str], LocalClient]]:
    """``agents(name)``: a LocalClient acting as ``name``, all on one fresh embedded store."""
    env = {"SWITCHBOARD_HOME": str(tmp_path / "home")}
    first = LocalClient.open(Settings.load(env), agent="someone", env=env)
    try:
        yield first.as_agent
    finally:
        first.service.store.close()


@pytest.fixture
def tools(agents: Callable[[str], LocalClient], era: str) -> Callable[[str], object]:
    """``async with tools("alice") as alice:`` — an MCP client of alice's tool server."""

    @asynccontextmanager
    async def connect(name: str) -> AsyncIterator[Client]:
        client = agents(name)
        async with Client(mailbox_server(one_client(client)), mode=era) as session:
            yield session

    return connect
