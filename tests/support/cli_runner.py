"""The ``callboard`` command line as a subprocess, shared by tests/cli and tests/hub.

A ``CLI`` is one isolated "machine": its own HOME and CALLBOARD_HOME, a working folder that
is not inside a git repository, and no CALLBOARD_* or XDG_* variable inherited from the
environment that runs pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.waiting import scaled

CALL_TIMEOUT = 60.0  # a command answered: a cold CLI takes seconds on a loaded machine (scaled where waited)
EXIT_USER_ERROR = 2


def mark_e2e(items: list[pytest.Item], folder: Path) -> None:
    """Mark every collected test below ``folder`` as e2e (for ``pytest_collection_modifyitems``)."""
    for item in items:
        if folder in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


def isolated_env(home: Path, callboard_home: Path, extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """This process's environment without CALLBOARD_*, CLAUDE_* or XDG_*, with its own HOME folders;
    ``extra`` values of None remove a variable."""
    # Nothing of a Claude Code session pytest may run in (its socket, config folder): a CLI or
    # MCP server under test must never push into the developer's own sessions.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CALLBOARD_", "CLAUDE_"))}
    for key in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env.pop(key, None)
    env.update(
        HOME=str(home),
        CALLBOARD_HOME=str(callboard_home),
        COLUMNS="200",  # human output: wide enough that rich never wraps a fact in two
        PYTHONDONTWRITEBYTECODE="1",
        # The warm server a first command starts (cli/warm_server.py) ends soon after a test's
        # last command, not 15 minutes later with hundreds of others.
        CALLBOARD_WARM_IDLE="5",
    )
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


class CLI:
    """Runs ``python -m callboard`` as one machine: its own HOME and CALLBOARD_HOME."""

    def __init__(self, root: Path, home: Path | None = None, callboard_home: Path | None = None) -> None:
        self.root = root
        self.home = home or root / "home"
        self.callboard_home = callboard_home or root / "callboard-home"
        self.workdir = root / "work"
        self.home.mkdir(parents=True, exist_ok=True)
        self.workdir.mkdir(parents=True)
        self.workdir = self.workdir.resolve()  # the CLI sees the real path (Path.cwd())

    @property
    def default_db(self) -> Path:
        return self.callboard_home / "callboard.db"

    @property
    def config_path(self) -> Path:
        return self.callboard_home / "config.toml"

    def outside_any_project(self) -> bool:
        """Whether the working folder is outside every git repository and agent file, so the
        identity rule names no agent (identity tests need it)."""
        for parent in (self.workdir, *self.workdir.parents):
            if any((parent / name).exists() for name in (".git", ".callboard-agent", ".agent-id")):
                return False
        return True

    def env(self, agent: str | None = None, env: Mapping[str, str | None] | None = None) -> dict[str, str]:
        """The environment of one call; ``env`` values of None remove a variable."""
        extra: dict[str, str | None] = {"CALLBOARD_AGENT": agent} if agent is not None else {}
        extra.update(env or {})
        return isolated_env(self.home, self.callboard_home, extra)

    @staticmethod
    def argv(*args: object) -> list[str]:
        return [sys.executable, "-m", "callboard", *(str(a) for a in args)]

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
            timeout=scaled(timeout),
        )

    def run_json(self, *args: object, **kwargs: Any) -> Any:
        """The parsed stdout of a call that must exit 0 (appends --json when missing)."""
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
    return f"callboard {command}\nexit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


def expect_error(
    proc: subprocess.CompletedProcess[str], code: str, *, as_json: bool, strict: bool = True
) -> dict[str, Any] | str:
    """Exit 2, no traceback, and exactly one line naming the stable ``code``.

    With --json the line is ``{"error": {"code": …, "message": …}}`` on stdout; otherwise
    ``error: <code>: <sentence>`` on stderr. Returns the error object or the line.
    ``strict`` also requires an empty stderr with --json and a non-empty sentence without it.
    """
    info = describe(proc)
    assert proc.returncode == EXIT_USER_ERROR, info
    assert "Traceback" not in proc.stdout + proc.stderr, info
    if as_json:
        if strict:
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
    if strict:
        assert len(lines[0]) > len(f"error: {code}: "), info
    return lines[0]


def texts(read_result: dict[str, Any]) -> list[str]:
    """The text of every message in a ``read --json`` result, in order."""
    return ["\n".join(p["text"] for p in item["message"]["parts"] if "text" in p) for item in read_result["items"]]
