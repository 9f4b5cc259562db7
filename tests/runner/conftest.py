"""A machine with a real ``callboard run --cli generic:…`` runner and alice to mail it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runner import CLI
from tests.support.waiting import wait_until

AGENTS = Path(__file__).resolve().parents[1] / "support" / "generic_agents"


class RunnerMachine:
    """One isolated machine: ``start()`` a runner of rbot, ``send()`` it mail as alice."""

    def __init__(self, root: Path) -> None:
        self.cli = CLI(root)
        self.agent_log = root / "agent.log"
        self.proc: subprocess.Popen[str] | None = None
        self.out: list[str] = []
        self.err: list[str] = []

    def env(self, **extra: str) -> dict[str, str]:
        env = self.cli.env(None, {"ECHO_AGENT_LOG": str(self.agent_log), "CALLBOARD_WARM": "0", **extra})
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `callboard` for the agent
        return env

    def start(self, *args: str, script: str = "echo.py", agent: str = "rbot", **extra: str) -> subprocess.Popen[str]:
        cli = f"generic:{sys.executable} {AGENTS / script}"
        argv = [sys.executable, "-m", "callboard", "run", "--agent", agent, "--cli", cli, *args]
        self.proc = subprocess.Popen(
            argv, cwd=self.cli.workdir, env=self.env(**extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        _collect(self.proc.stdout, self.out)
        _collect(self.proc.stderr, self.err)
        wait_until(
            lambda: any(line.startswith("running ") for line in self.out) or self.proc.poll() is not None,
            30,
            "the runner's ready line",
        )
        assert self.proc.poll() is None, self.describe()
        return self.proc

    def send(self, text: str, *, urgent: bool = False) -> str:
        args = ["send", "rbot", text, *(["--urgent"] if urgent else [])]
        return self.cli.run_json(*args, agent="alice")["message_id"]

    def alice_got(self) -> list[str]:
        """Every text in alice's mailbox so far."""
        items = self.cli.run_json("inbox", "--all", agent="alice")
        return [part["text"] for item in items for part in item["message"]["parts"] if "text" in part]

    def records(self, event: str | None = None) -> list[dict[str, Any]]:
        if not self.agent_log.exists():
            return []
        rows = [json.loads(line) for line in self.agent_log.read_text().splitlines() if line.strip()]
        return [r for r in rows if event is None or r["event"] == event]

    def prompts(self) -> list[dict[str, Any]]:
        return self.records("prompt")

    def status(self, message_id: str) -> dict[str, Any]:
        return self.cli.run_json("status", message_id, agent="alice")["recipients"][0]

    def reports(self) -> list[Any]:
        """The workspace's runner reports, read from the machine's store as alice."""
        from callboard.client.local import LocalClient
        from callboard.model import Caller
        from callboard.service.door import Service
        from callboard.store.sqlite.store import SQLiteStore

        store = SQLiteStore(self.cli.default_db)
        try:
            return LocalClient(
                Service(store, machine="observer"), Caller(workspace="default", agent="alice")
            ).list_runners()
        finally:
            store.close()

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=35)

    def describe(self) -> str:
        return "runner stdout:\n" + "\n".join(self.out[-20:]) + "\nrunner stderr:\n" + "\n".join(self.err[-40:])


def _collect(stream: Any, into: list[str]) -> None:
    def read() -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[RunnerMachine]:
    m = RunnerMachine(tmp_path)
    yield m
    if m.proc is not None and m.proc.poll() is None:
        m.proc.kill()
        m.proc.wait(timeout=10)
