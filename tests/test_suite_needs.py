"""The README's test command on a machine without the suite's PostgreSQL: its PostgreSQL runs are
skipped, each with a line that says why (``pytest -ra``), not errors; a server named in
CALLBOARD_TEST_POSTGRES (as CI names its own) that does not answer fails them instead.

An inner pytest runs a few PostgreSQL-backed tests with the default server moved to a loopback
port nothing listens on (a machine without PostgreSQL), and once more with that port named.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.outside_agent import free_port

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parents[1]
# One test on each path to the server: a service on a fresh schema, and a store contract's schema.
SELECTED = [
    "tests/service/test_unreadable_mail.py::test_a_message_that_cannot_be_rendered_is_shown_as_such_and_the_rest_reads",
    "tests/store/test_store_contract.py",
]
INNER = """
import sys
import pytest
import tests.support.postgres as postgres
postgres.DEFAULT_SERVER = sys.argv[1]
sys.exit(pytest.main(["-p", "no:cacheprovider", "-n", "0", "-q", "-ra", "-k", "postgres", *sys.argv[2:]]))
"""


def inner_pytest(server: str, named: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CALLBOARD_", "PYTEST_XDIST"))}
    if named is not None:
        env["CALLBOARD_TEST_POSTGRES"] = named
    return subprocess.run(
        [sys.executable, "-c", INNER, server, *SELECTED],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_without_postgresql_its_runs_are_skipped_saying_why():
    nowhere = f"postgresql://postgres@127.0.0.1:{free_port()}/test"
    proc = inner_pytest(nowhere, named=None)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips and all(f"no PostgreSQL at {nowhere}" in line for line in skips), proc.stdout
    assert re.fullmatch(r"\d+ skipped, \d+ deselected in .*", proc.stdout.splitlines()[-1]), proc.stdout


def test_a_named_server_that_does_not_answer_fails_its_runs():
    nowhere = f"postgresql://postgres@127.0.0.1:{free_port()}/test"
    proc = inner_pytest(nowhere, named=nowhere)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"cannot reach PostgreSQL at {nowhere} (CALLBOARD_TEST_POSTGRES)" in proc.stdout, proc.stdout
    last = proc.stdout.splitlines()[-1]  # failed in a fixture: counted as errors
    assert "skipped" not in last and ("error" in last or "failed" in last), proc.stdout
