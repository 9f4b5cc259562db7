"""End-to-end tests of the ``switchboard`` command line: every call is a real subprocess.

Each test gets its own HOME and SWITCHBOARD_HOME under ``tmp_path`` (so its own embedded
database), runs in a working folder that is not inside a git repository, and never inherits
a SWITCHBOARD_* variable from the environment that runs pytest.

Fixtures:
  run(*args, agent=None, input=None, env=None, cwd=None)  -> CompletedProcess (text, timeout)
  run_json(*args, ...)  -> the parsed stdout; asserts exit 0 (appends --json when missing)
  expect_error(proc, code, as_json=...)  asserts exit 2 and one clean line naming the code
  cli  the helper object behind them (.env(), .spawn() for a Popen, .workdir, .home)
  live_process  a sleeping child process whose pid can stand for a live session
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import wait_until

CALL_TIMEOUT = 30.0
EXIT_USER_ERROR = 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


class CLI:
    """Runs ``python -m switchboard`` in an isolated home."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path
        self.home = tmp_path / "home"
        self.switchboard_home = tmp_path / "switchboard-home"
        self.workdir = tmp_path / "work"
        self.home.mkdir()
        self.workdir.mkdir()
        self.workdir = self.workdir.resolve()  # the CLI sees the real path (Path.cwd())
        base = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
        for key in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            base.pop(key, None)
        base.update(
            HOME=str(self.home),
            SWITCHBOARD_HOME=str(self.switchboard_home),
            COLUMNS="200",  # human output: wide enough that rich never wraps a fact in two
            PYTHONDONTWRITEBYTECODE="1",
        )
        self.base_env = base

    def outside_any_project(self) -> bool:
        """Whether the default cwd is outside every git repository and agent file (identity tests need it)."""
        folder = self.workdir.resolve()
        for parent in (folder, *folder.parents):
            if any((parent / name).exists() for name in (".git", ".switchboard-agent", ".agent-id")):
                return False
        return True

    @property
    def default_db(self) -> Path:
        return self.switchboard_home / "switchboard.db"

    def env(self, agent: str | None = None, env: Mapping[str, str | None] | None = None) -> dict[str, str]:
        """The environment of one call; ``env`` values of None remove a variable."""
        full = dict(self.base_env)
        if agent is not None:
            full["SWITCHBOARD_AGENT"] = agent
        for key, value in (env or {}).items():
            if value is None:
                full.pop(key, None)
            else:
                full[key] = value
        return full

    @staticmethod
    def argv(*args: object) -> list[str]:
        return [sys.executable, "-m", "switchboard", *(str(a) for a in args)]

    def run(
        self,
        *args: object,
        agent: str | None = None,
        input: str | None = None,
        env: Mapping[str, str | None] | None = None,
        cwd: Path | str | None = None,
        timeout: float = CALL_TIMEOUT,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args),
            env=self.env(agent, env),
            cwd=cwd or self.workdir,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=timeout,
        )

    def run_json(self, *args: object, **kwargs: Any) -> Any:
        if "--json" not in args:
            args = (*args, "--json")
        proc = self.run(*args, **kwargs)
        assert proc.returncode == 0, describe(proc)
        assert "Traceback" not in proc.stderr, describe(proc)
        try:
            return json.loads(proc.stdout)
        except json.JSONDecodeError as error:
            raise AssertionError(f"stdout is not one JSON document ({error}):\n{describe(proc)}") from None

    def spawn(
        self, *args: object, agent: str | None = None, env: Mapping[str, str | None] | None = None
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*args),
            env=self.env(agent, env),
            cwd=self.workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )


def describe(proc: subprocess.CompletedProcess[str]) -> str:
    command = " ".join(proc.args[3:]) if isinstance(proc.args, list) else proc.args
    return f"switchboard {command}\nexit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


def expect_error(proc: subprocess.CompletedProcess[str], code: str, *, as_json: bool) -> dict[str, Any] | str:
    """Exit 2, no traceback, and exactly one line naming the stable ``code``.

    With --json the line is ``{"error": {"code": …, "message": …}}`` on stdout; otherwise
    ``error: <code>: <sentence>`` on stderr. Returns the error object or the line.
    """
    info = describe(proc)
    assert proc.returncode == EXIT_USER_ERROR, info
    assert "Traceback" not in proc.stdout + proc.stderr, info
    if as_json:
        assert proc.stderr == "", info
        lines = proc.stdout.splitlines()
        assert len(lines) == 1, info
        document = json.loads(lines[0])
        assert set(document) == {"error"}, info
        assert document["error"]["code"] == code, info
        assert isinstance(document["error"]["message"], str) and document["error"]["message"].strip(), info
        return document["error"]
    assert proc.stdout == "", info
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, info
    assert lines[0].startswith(f"error: {code}: "), info
    assert len(lines[0]) > len(f"error: {code}: "), info
    return lines[0]


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


def texts(read_result: dict[str, Any]) -> list[str]:
    """The text of every message in a ``read --json`` result, in order."""
    return ["\n".join(p["text"] for p in item["message"]["parts"] if "text" in p) for item in read_result["items"]]


@pytest.fixture(name="texts")
def texts_fixture() -> Callable[[dict[str, Any]], list[str]]:
    return texts
