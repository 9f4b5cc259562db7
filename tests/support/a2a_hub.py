"""A real hub in this process, for the A2A tests: the hub's own app on uvicorn on a loopback
port (real HTTP, real routing and authentication, SSE unbuffered), over an embedded store that
the test also holds, so a worker can answer tasks through the Service as an agent's tools do.

The hub runs on a thread of its own with its own event loop, as ``callboard up`` runs it;
errors the hub logs are kept (``errors``) so a test can fail on a hub-side traceback.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import uvicorn

from callboard.hub.app import A2AOptions, create_app
from callboard.hub.replicas import Notifying, new_replica_id, replica_wakeups
from callboard.model import Caller
from callboard.service.door import Service
from callboard.service.events import MailboxEvents
from callboard.store.opening import open_store
from tests.support.waiting import wait_until

START_TIMEOUT = 20.0


class _ErrorLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


class InProcessHub:
    """``with InProcessHub(tmp_path) as hub:`` then ``hub.url``, ``hub.service``, ``hub.token(agent)``."""

    def __init__(
        self,
        root: Path,
        *,
        a2a: A2AOptions | None = None,
        allow_private_webhooks: bool = False,
        workspace: str = "default",
        store: str | None = None,
    ) -> None:
        """``store``: a PostgreSQL URL, for one of several replicas (each an InProcessHub) on it;
        else an embedded store under ``root``."""
        self.root = root
        self.workspace = workspace
        replica = new_replica_id()
        self.store = open_store(store or root / "callboard.db", replica=replica)
        events = MailboxEvents()
        if isinstance(self.store, Notifying):  # as `up` does: other replicas' commits wake this one
            self.store.add_listener(replica_wakeups(events, replica, self.store))
        self.service = Service(
            self.store, machine="a2a-test", events=events, allow_private_webhooks=allow_private_webhooks
        )
        app = create_app(self.service, running=self.store.committing_on_loop, a2a=a2a or A2AOptions())
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="in-process-hub", daemon=True)
        self._log = _ErrorLog()
        self.url = ""

    def __enter__(self) -> InProcessHub:
        for name in ("callboard", "a2a", "uvicorn.error"):
            logging.getLogger(name).addHandler(self._log)
        self._thread.start()
        wait_until(lambda: self._server.started or not self._thread.is_alive(), START_TIMEOUT, "the hub to listen")
        assert self._server.started, "the in-process hub did not start"
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(30)
        self.store.close()
        for name in ("callboard", "a2a", "uvicorn.error"):
            logging.getLogger(name).removeHandler(self._log)

    @property
    def errors(self) -> list[str]:
        """What the hub logged at ERROR or worse (a traceback of a request, a crash)."""
        return list(self._log.records)

    def token(self, agent: str, workspace: str | None = None) -> str:
        """A new agent token: acts as ``agent`` of ``workspace`` only."""
        issued = self.service.credentials().issue(None, "agent", workspace or self.workspace, agent)
        return issued.token

    def user_token(self, workspace: str) -> str:
        return self.service.credentials().issue(None, "user", workspace).token

    def caller(self, agent: str, workspace: str | None = None) -> Caller:
        return Caller(workspace=workspace or self.workspace, agent=agent, person=False)

    def agent_url(self, agent: str, workspace: str | None = None) -> str:
        return f"{self.url}/a2a/{workspace or self.workspace}/{agent}"

    def describe(self, agent: str, description: str, skills: list[str], workspace: str | None = None) -> Any:
        caller = self.caller(agent, workspace)
        self.service.directory.enter(caller)
        return self.service.directory.update_agent(caller, agent, description, skills)
