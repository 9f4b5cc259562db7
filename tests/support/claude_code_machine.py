"""This machine as the Claude Code tests see it: Claude Code's config folder, project folders,
sessions (sleeping processes registered as Claude Code registers one, each listening on a
stand-in messaging socket) and clients of one store; ``machine`` is the fixture that makes one
and ends every session and client at the end."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from callboard.client.local import LocalClient
from callboard.config import Settings
from callboard.integrations.claude_code import sessions as claude_sessions
from callboard.procs import process_start_time
from tests.support.frame_listener import FrameListener


@dataclass
class FakeSession:
    """A live process registered as a Claude Code session, listening on a stand-in socket."""

    process: subprocess.Popen[bytes]
    listener: FrameListener
    project: Path
    session_id: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def frames(self) -> list[list[dict]]:
        return self.listener.frames()


class Machine:
    """This machine as the tests see it: Claude Code's config folder, projects, sessions, a store."""

    def __init__(self, root: Path, socket_dir: Path) -> None:
        self.root = root
        self.socket_dir = socket_dir
        self.config = root / "claude-config"
        (self.config / "sessions").mkdir(parents=True)
        self.env = {
            "CLAUDE_CONFIG_DIR": str(self.config),
            "CALLBOARD_HOME": str(root / "callboard-home"),
            "HOME": str(root / "home"),
        }
        self._sessions: list[FakeSession] = []
        self._clients: list[LocalClient] = []

    def project(self, agent: str) -> Path:
        """A project folder whose agent file names ``agent``."""
        folder = self.root / f"{agent}-project"
        folder.mkdir(exist_ok=True)
        (folder / ".callboard-agent").write_text(f"{agent}\n")
        return folder

    def session(
        self, project: Path, *args: str, environ: Mapping[str, str] | None = None, socket: bool = True
    ) -> FakeSession:
        """A sleeping process run in ``project`` with ``args`` on its command line, registered
        as Claude Code 2.1.332 registers a session."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("CALLBOARD_")}
        process = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)", *args], cwd=project, env={**env, **(environ or {})}
        )
        start = process_start_time(process.pid)
        assert start is not None
        path = str(self.socket_dir / f"{process.pid}.sock")
        listener = FrameListener(path)
        if not socket:
            listener.close()  # the socket is gone, the registry file not yet
        session = FakeSession(process, listener, project, f"session-{process.pid}")
        entry = {
            "pid": process.pid,
            "sessionId": session.session_id,
            "cwd": str(project),
            "procStart": str(start),
            "version": "2.1.332",
            "kind": "interactive",
            "entrypoint": "sdk-cli",
            "messagingSocketPath": path,
            "name": "alpha",
            "status": "idle",
        }
        (self.config / "sessions" / f"{process.pid}.json").write_text(json.dumps(entry))
        self._sessions.append(session)
        return session

    def key_file(self, session: FakeSession, token: str) -> None:
        digest = hashlib.sha256(session.listener.path.encode()).hexdigest()
        key = {"peerToken": token, "procStart": "1", "pidDomain": "linux:test"}
        (self.config / "sessions" / f"{session.pid}.{digest}.key").write_text(json.dumps(key))

    def settings(self, path: Path, document: dict) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document))

    def client(self, agent: str) -> LocalClient:
        client = LocalClient.open(Settings.load(self.env), agent=agent, env=self.env)
        self._clients.append(client)
        return client

    def close(self) -> None:
        for session in self._sessions:
            session.process.kill()
            session.process.wait()
            session.listener.close()
        for client in self._clients:
            client.close()


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    # No settings of this machine's administrator apply; a socket path has about 100 bytes.
    monkeypatch.setattr(claude_sessions, "MANAGED_SETTINGS", tmp_path / "managed-settings.json")
    with tempfile.TemporaryDirectory(prefix="cb-") as socket_dir:
        machine = Machine(tmp_path, Path(socket_dir))
        try:
            yield machine
        finally:
            machine.close()
