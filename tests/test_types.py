"""The type checker is part of the test run: ``python3 -m mypy`` from the repository root, as
configured in pyproject.toml (``[tool.mypy]``: src/callboard, pydantic's plugin), finds nothing.

mypy keeps its cache in .mypy_cache at the root, so a run after a small change rechecks only
what the change touches. Each ``# type: ignore[code]`` left in src/ says why on its line.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


# A first run without a cache reads every module and its imports' stubs: on a busy machine, a
# minute or more (the suite's default timeout is for one test's own work).
@pytest.mark.timeout(600)
def test_mypy_finds_nothing_in_src() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is not installed: it comes with the dev extra (pip install -e '.[dev]')")
    done = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, f"mypy exited {done.returncode}:\n{done.stdout}{done.stderr}"
