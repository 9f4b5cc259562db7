"""End-to-end tests of the ``callboard`` command line: every call is a real subprocess.

Each test gets its own HOME and CALLBOARD_HOME under ``tmp_path`` (so its own embedded
database), runs in a working folder that is not inside a git repository, and never inherits
a CALLBOARD_* variable from the environment that runs pytest.

Fixtures:
  run(*args, agent=None, input=None, env=None, cwd=None)  -> CompletedProcess (text, timeout)
  run_json(*args, ...)  -> the parsed stdout; asserts exit 0 (appends --json when missing)
  expect_error(proc, code, as_json=...)  asserts exit 2 and one clean line naming the code
  cli  the helper object behind them (.env(), .spawn() for a Popen, .workdir, .home)
  live_process  a sleeping child process whose pid can stand for a live session
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runner import CLI, expect_error, mark_e2e, texts
from tests.support.waiting import wait_until


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_e2e(items, Path(__file__).parent)


@pytest.fixture
def cli(tmp_path: Path) -> CLI:
    return CLI(tmp_path)


@pytest.fixture
def run(cli: CLI) -> Callable[..., subprocess.CompletedProcess[str]]:
    return cli.run


@pytest.fixture
def run_json(cli: CLI) -> Callable[..., Any]:
    return cli.run_json


@pytest.fixture(name="expect_error")
def expect_error_fixture() -> Callable[..., Any]:
    return expect_error


@pytest.fixture(name="wait_until")
def wait_until_fixture() -> Callable[..., Any]:
    return wait_until


@pytest.fixture
def live_process() -> Iterator[subprocess.Popen[bytes]]:
    """A child that sleeps until the test ends: its pid is a live process on this machine."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], stdin=subprocess.DEVNULL)
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


@pytest.fixture(name="texts")
def texts_fixture() -> Callable[[dict[str, Any]], list[str]]:
    return texts
