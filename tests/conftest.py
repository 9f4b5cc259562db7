"""Fixtures shared by every test folder: async tests on asyncio, the MCP protocol eras, a
database on each store (``db``), and agents on one fresh embedded store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from callboard.client.local import LocalClient
from callboard.config import Settings
from tests.support.postgres import db  # noqa: F401  (the fixture, offered to every test)
from tests.support.waiting import scaled

# A test that starts real processes waits on them, and on a loaded machine (CI beside other work,
# two suites at once) a cold CLI takes seconds: a dozen of them add up. Such a test's guard
# against hanging is this long unless it names its own; every guard grows with the machine's
# slowness (CALLBOARD_TEST_SLOWNESS, tests/support/waiting.py). A guard only ends a test that
# hangs: a passing test never waits for it.
E2E_TIMEOUT = 600.0

# "legacy": the initialize handshake that current agent CLIs use; "2026-07-28": the sessionless era.
MCP_ERAS = ["legacy", "2026-07-28"]


@pytest.hookimpl(trylast=True)  # after the folders' hooks have marked their e2e tests
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    default = float(config.getini("timeout") or 0)
    for item in items:
        named = item.get_closest_marker("timeout")
        if named is not None and named.args:
            seconds = float(named.args[0])
        elif item.get_closest_marker("e2e") is not None:
            seconds = E2E_TIMEOUT
        else:
            seconds = default
        if seconds:
            item.add_marker(pytest.mark.timeout(scaled(seconds)), append=False)


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
