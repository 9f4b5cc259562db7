"""Fixtures shared by every test folder: async tests on asyncio, and the MCP protocol eras."""

from __future__ import annotations

import pytest

# "legacy": the initialize handshake that current agent CLIs use; "2026-07-28": the sessionless era.
MCP_ERAS = ["legacy", "2026-07-28"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=MCP_ERAS)
def era(request: pytest.FixtureRequest) -> str:
    """An MCP protocol era: a test that takes it runs once in each."""
    return request.param
