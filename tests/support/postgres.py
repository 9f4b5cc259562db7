"""A fresh PostgreSQL schema for a test, on the server CI runs beside the suite (127.0.0.1:5432,
trust auth, database ``test``), dropped afterwards. CALLBOARD_TEST_POSTGRES overrides the
server's URL; CALLBOARD_TEST_POSTGRES=0 skips the PostgreSQL runs (a developer without one).

With no CALLBOARD_TEST_POSTGRES, a machine without that server skips the PostgreSQL runs, each
with a line saying why (``pytest -ra`` lists them): a newcomer's first run of the suite passes.
A server named in CALLBOARD_TEST_POSTGRES must answer, or the test fails: CI names its server
(.ci/run), so that it cannot pass by skipping."""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/test"
STORES = ("sqlite", "postgres")


@pytest.fixture(params=STORES)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The database of one test: an embedded file, or a fresh PostgreSQL schema (a test that
    takes ``db`` runs on each store; tests/conftest.py offers it to every test)."""
    if request.param == "sqlite":
        yield str(tmp_path / "callboard.db")
        return
    with fresh_schema() as url:
        yield url


def server_url() -> str:
    """The test server's URL; skips (or fails, see above) when there is none to use."""
    configured = os.environ.get("CALLBOARD_TEST_POSTGRES", "").strip()
    if configured == "0":
        pytest.skip("CALLBOARD_TEST_POSTGRES=0: the PostgreSQL runs are skipped")
    server = configured or DEFAULT_SERVER
    problem = unreachable(server)
    if problem is not None and configured:
        pytest.fail(
            f"cannot reach PostgreSQL at {server} (CALLBOARD_TEST_POSTGRES): {problem}; start it, point "
            "CALLBOARD_TEST_POSTGRES at one, or set CALLBOARD_TEST_POSTGRES=0 to skip the PostgreSQL runs"
        )
    if problem is not None:
        pytest.skip(
            f"no PostgreSQL at {server} ({problem}): the PostgreSQL runs are skipped; start one there "
            "(trust auth, database 'test') or name one with CALLBOARD_TEST_POSTGRES=postgresql://…"
        )
    return server


@functools.cache
def unreachable(server: str) -> str | None:
    """Why ``server`` cannot be used (asked once per test process), or None."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed: pip install -e '.[dev]'"
    try:
        with psycopg.connect(server, connect_timeout=5):
            return None
    except psycopg.Error as error:
        return " ".join(str(error).split()) or type(error).__name__


def schema_url(server: str, schema: str) -> str:
    """``server`` with every connection's search_path set to ``schema``."""
    separator = "&" if "?" in server else "?"
    return f"{server}{separator}options={quote(f'-csearch_path={schema}')}"


@contextmanager
def fresh_schema() -> Iterator[str]:
    """The URL of a new, empty schema; it is dropped (with everything in it) afterwards."""
    import psycopg

    server = server_url()
    schema = f"cb_test_{secrets.token_hex(6)}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield schema_url(server, schema)
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a new, empty database (for hub replicas, which own a whole database); dropped
    afterwards, its connections closed first."""
    import psycopg

    server = server_url()
    name = f"cb_test_{secrets.token_hex(6)}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = server.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
