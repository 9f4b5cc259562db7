"""Fixtures for the MCP tool tests: agents on one embedded store, each with its own tool server,
and the official ``mcp`` client (in the protocol era of the ``era`` fixture, tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
from mcp import Client

from callboard.client.local import LocalClient
from callboard.mcp.tools import mailbox_server, one_client


@pytest.fixture
def tools(agents: Callable[[str], LocalClient], era: str) -> Callable[[str], object]:
    """``async with tools("alice") as alice:`` — an MCP client of alice's tool server."""

    @asynccontextmanager
    async def connect(name: str) -> AsyncIterator[Client]:
        client = agents(name)
        async with Client(mailbox_server(one_client(client)), mode=era) as session:
            yield session

    return connect
