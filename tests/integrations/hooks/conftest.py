"""End-to-end tests of ``callboard hook``: every hook is a real subprocess fed the exact JSON
an agent CLI writes (tests/support/hook_stdin.py), on an isolated machine (tests/support/cli_runner.py).

The agent is named by a ``.callboard-agent`` file in a project folder that the hook's JSON
gives as ``cwd``; the hook process itself runs elsewhere, so only the JSON can name the agent.

Fixtures:
  hooks  a ``Hooks`` helper: run(event, client, ...), context(...), send(...), status(...), spawn_wake(...)
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runner import CLI, describe, mark_e2e
from tests.support.hook_stdin import stdin_for

AGENT = "webapp"
SENDER = "reviewer"
# A hook's own deadline (3 s) is about a person's prompt, not a test machine running four
# workers on two cores: here it is long, and only the tests of the deadline set it short.
PATIENT = {"CALLBOARD_HOOK_SECONDS": "60"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_e2e(items, Path(__file__).parent)


class Hooks:
    def __init__(self, cli: CLI) -> None:
        self.cli = cli
        self.project = self.project_named(AGENT)
        self.spawned: list[subprocess.Popen[str]] = []

    def project_named(self, name: str) -> Path:
        folder = self.cli.root / "projects" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".callboard-agent").write_text(name + "\n")
        return folder.resolve()

    def stdin(self, event: str, client: str = "claude", session: str = "sess-1", **kwargs: Any) -> str:
        cwd = kwargs.pop("cwd", self.project)
        return json.dumps(stdin_for(client, event, cwd, session, **kwargs))

    def run(
        self,
        event: str,
        client: str = "claude",
        *,
        session: str = "sess-1",
        raw: str | None = None,
        env: Mapping[str, str | None] | None = None,
        **kwargs: Any,
    ) -> subprocess.CompletedProcess[str]:
        payload = raw if raw is not None else self.stdin(event, client, session, **kwargs)
        return self.cli.run("hook", event, "--client", client, input=payload, env=self.patient(env))

    @staticmethod
    def patient(env: Mapping[str, str | None] | None = None) -> dict[str, str | None]:
        """A hook run's environment overrides: the long test deadline, then ``env``."""
        return {**PATIENT, **(env or {})}

    def output(self, proc: subprocess.CompletedProcess[str]) -> dict[str, Any] | None:
        """The hook's JSON answer (None for an empty stdout); asserts a clean exit 0."""
        assert proc.returncode == 0, describe(proc)
        assert proc.stderr == "", describe(proc)
        if proc.stdout == "":
            return None
        lines = proc.stdout.splitlines()
        assert len(lines) == 1, describe(proc)
        return json.loads(lines[0])

    def modules_loaded(self, event: str, env: Mapping[str, str | None] | None = None) -> set[str]:
        """The modules an empty-output run of ``hook event`` imported (``python -X importtime``)."""
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "callboard", "hook", event],
            input=self.stdin(event),
            env=self.cli.env(env=self.patient(env)),
            cwd=self.cli.workdir,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 0 and proc.stdout == "", describe(proc)
        return {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}

    def context(self, event: str, client: str = "claude", **kwargs: Any) -> dict[str, Any] | None:
        return self.output(self.run(event, client, **kwargs))

    def send(self, text: str, *, to: str = AGENT, sender: str = SENDER, urgent: bool = False) -> str:
        args = ["send", to, text, *(["--urgent"] if urgent else [])]
        return self.cli.run_json(*args, agent=sender)["message_id"]

    def status(self, message_id: str, sender: str = SENDER) -> dict[str, Any]:
        """The (only) recipient's entry of ``callboard status``."""
        return self.cli.run_json("status", message_id, agent=sender)["recipients"][0]

    def sessions(self, agent: str = AGENT) -> list[dict[str, Any]]:
        report = self.cli.run_json("who", agent=SENDER)
        return [s for a in report["agents"] if a["name"] == agent for s in a["sessions"]]

    def spawn_wake(self, session: str = "sess-1", env: Mapping[str, str | None] | None = None) -> subprocess.Popen[str]:
        """``hook wake`` as a child of this test process (which stands for the agent CLI)."""
        proc = subprocess.Popen(
            self.cli.argv("hook", "wake", "--client", "claude"),
            env=self.cli.env(None, env),
            cwd=self.cli.workdir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        assert proc.stdin is not None
        proc.stdin.write(self.stdin("session-start", "claude", session))
        proc.stdin.close()
        self.spawned.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.spawned:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[Hooks]:
    helper = Hooks(CLI(tmp_path))
    try:
        yield helper
    finally:
        helper.close()
