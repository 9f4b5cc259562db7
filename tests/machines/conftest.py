"""Fixtures of the multi-machine tests: a hub and two machines in network namespaces (tests/support/netns.py).

  network        one network for the whole module: tests on it keep to their own agent names
                 (``unique``), and any test that cuts a link restores it before it ends
  make_network   a factory of fresh networks, for tests that kill or restart the hub (or that
                 need a short liveness window: ``make_network(liveness_seconds=3)``)

Every hub's log is checked after each test: an unexpected error (a 500 or a crash) fails the
test that caused it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.cli_runner import mark_e2e
from tests.support.netns import Network

FAILURE_IN_LOG = ("Traceback", "unexpected error")

_open: list[Network] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_e2e(items, Path(__file__).parent)


def _opened(network: Network) -> Network:
    _open.append(network)
    return network.__enter__()


def _closed(network: Network) -> None:
    _open.remove(network)
    network.close()


@pytest.fixture(scope="module")
def network(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Network]:
    shared = Network(tmp_path_factory.mktemp("machines"))
    try:
        yield _opened(shared)
    finally:
        _closed(shared)


@pytest.fixture
def make_network(tmp_path: Path) -> Iterator[Callable[..., Network]]:
    made: list[Network] = []

    def make(*, liveness_seconds: float | None = None) -> Network:
        fresh = Network(tmp_path / f"network-{len(made)}", liveness_seconds=liveness_seconds)
        made.append(fresh)
        return _opened(fresh)

    try:
        yield make
    finally:
        for one in made:
            _closed(one)


@pytest.fixture(autouse=True)
def _hubs_log_no_unexpected_error() -> Iterator[None]:
    """Fail the test during which any hub logged an unexpected error (a 500 or a crash)."""
    before = {id(n): n.hub_log.stat().st_size for n in _open if n.hub_log.exists()}
    yield
    for one in list(_open):
        if not one.hub_log.exists():
            continue
        text = one.hub_log_text(before.get(id(one), 0))
        if any(marker in text for marker in FAILURE_IN_LOG):
            pytest.fail(f"the hub of {one.prefix}* logged an unexpected error during this test:\n{text[-4000:]}")
