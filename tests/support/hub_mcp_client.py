"""An MCP client of a test hub's ``/mcp``, in a given protocol era, acting with a token (and, for
a user token, as a named agent)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.hub.conftest import Hub, auth_headers

LONG_WAIT = 30.0  # a read that waits this long and returns early was woken; the client waits twice it


@asynccontextmanager
async def mcp_client(
    hub: Hub, era: str, token: str, agent: str | None = None, hooks: dict[str, list[Any]] | None = None
) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(
        headers=auth_headers(token, agent), timeout=LONG_WAIT * 2, event_hooks=hooks or {}
    ) as http:
        async with Client(streamable_http_client(f"{hub.url}/mcp", http_client=http), mode=era) as client:
            yield client
