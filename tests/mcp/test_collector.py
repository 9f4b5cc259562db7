"""``callboard mcp`` takes what start-up made out of the collector's sight before it serves:
otherwise the first full collection (about the 13th-16th tool call of every session) walked
every object of the MCP SDK, pydantic and httpx, and made that one call 86-98 ms."""

from __future__ import annotations

import gc

from callboard.cli.mcp_server import settle_collector


def test_settle_collector_freezes_what_exists() -> None:
    try:
        settle_collector()
        assert gc.get_freeze_count() > 0
        assert gc.get_count()[2] == 0  # a full collection ran just before the freeze
    finally:
        gc.unfreeze()
