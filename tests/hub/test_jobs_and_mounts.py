"""The hub's background jobs run together and stop together (hub/jobs.py), and its doors are one
table (hub/mounts.py): an exact path, every path under a prefix, the REST API for the rest."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from callboard.hub.jobs import Job, running
from callboard.hub.mounts import Mount, Mounts

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_every_job_runs_while_inside_and_each_is_stopped_on_the_way_out() -> None:
    started: list[str] = []
    stopped: list[str] = []

    def job(name: str, fails: bool = False) -> Job:
        async def run() -> None:
            started.append(name)
            if fails:
                raise RuntimeError("a job's own failure")
            try:
                await asyncio.Event().wait()
            finally:
                stopped.append(name)

        return Job(name, run)

    async with running([job("poster"), job("broken", fails=True), job("pump")]):
        for _ in range(100):  # the tasks begin at the loop's next turns
            if len(started) == 3:
                break
            await asyncio.sleep(0)
        assert started == ["poster", "broken", "pump"]
    assert sorted(stopped) == ["poster", "pump"]


class App:
    def __init__(self, name: str, seen: list[str]) -> None:
        self.name, self.seen = name, seen

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.seen.append(self.name)


async def test_each_request_goes_to_its_mount_and_the_rest_to_the_rest_api() -> None:
    seen: list[str] = []
    mounts = Mounts([Mount("/mcp", App("mcp", seen)), Mount("/a2a/", App("a2a", seen), under=True)], App("rest", seen))
    for path in ("/mcp", "/mcp/x", "/a2a/team/bob/v1/card", "/v1/messages", "/health"):
        await mounts({"type": "http", "path": path}, None, None)
    await mounts({"type": "lifespan"}, None, None)
    assert seen == ["mcp", "rest", "a2a", "rest", "rest", "rest"]
