"""Everything one hook run works with, each loaded only when first needed.

The settings, the identity and the session's state files are cheap and come first; the mailbox
client (the service and its models, or httpx for a hub) loads only when the quick look in
``probe`` cannot rule mail out, or when an event must write (register, heartbeat, surface).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING

from callboard.config import Settings
from callboard.errors import CallboardError
from callboard.identity import resolve_agent
from callboard.integrations.agent_clis import BY_NAME, UNKNOWN_RUNTIME, agent_process, runtime_of
from callboard.integrations.hooks import probe
from callboard.integrations.hooks.payload import HookInput
from callboard.integrations.hooks.state import SessionFiles, session_key
from callboard.procs import process_start_time

if TYPE_CHECKING:
    from callboard.client.base import Client


class HookContext:
    def __init__(self, event: str, client_name: str, payload: HookInput, env: Mapping[str, str] = os.environ) -> None:
        self.event = event
        self.client_name = client_name
        self.payload = payload
        self.env = env
        self.settings = Settings.load(env)
        self.warning: str | None = None  # the first thing that went wrong without ending the run
        self._client: Client | None = None

    # --- the agent CLI's process and session --------------------------------------------------

    @cached_property
    def agent_pid(self) -> int:
        """The agent CLI process this hook serves (the hook runs under a shell under it)."""
        return agent_process()

    @cached_property
    def agent_start(self) -> int | None:
        return process_start_time(self.agent_pid)

    @cached_property
    def runtime(self) -> str:
        """The agent CLI's runtime by its command line, else the one the hook was installed for."""
        found = runtime_of(self.agent_pid)
        return BY_NAME[self.client_name].runtime if found == UNKNOWN_RUNTIME else found

    @cached_property
    def files(self) -> SessionFiles:
        """This session's hook state: by the agent CLI's session id, or by its process when it sent none."""
        key = self.payload.session_id and session_key(self.payload.session_id)
        return SessionFiles(self.settings.home, key or f"pid-{self.agent_pid}-{self.agent_start or 0}")

    # --- the mailbox ----------------------------------------------------------------------------

    def may_have_mail(self, *, urgent_only: bool = False) -> bool:
        """False only when surely nothing waits to be surfaced (see ``probe`` and ``hub_probe``)."""
        agent = resolve_agent(self.env, self.payload.cwd, self.settings.agent).name
        if self.settings.uses_hub:
            from callboard.integrations.hooks import hub_probe  # http.client and ssl: only for a hub

            return hub_probe.may_have_mail(
                self.settings.hub_urls[0],  # the first of several replicas: a look, not a delivery
                self.settings.token,
                agent,
                self.settings.named_workspace(self.env),  # as client.opening names it to the hub
                urgent_only=urgent_only,
                ca_cert=self.settings.ca_cert,
            )
        if self.settings.db_url is not None:
            return True  # the quick look reads SQLite files only: a PostgreSQL store takes the ordinary path
        workspace = self.settings.workspace_in(self.env)
        return probe.may_have_mail(self.settings.db_path, workspace, agent, urgent_only=urgent_only)

    def may_have_handed(self) -> bool:
        """False when surely no mail of the agent waits, handed to a session, to be confirmed
        surfaced. Only the embedded store is looked into: with a hub or PostgreSQL the session's
        own ``callboard mcp`` watches its transcript (``transcript_watch``)."""
        if self.settings.uses_hub or self.settings.db_url is not None:
            return False
        agent = resolve_agent(self.env, self.payload.cwd, self.settings.agent).name
        workspace = self.settings.workspace_in(self.env)
        return probe.has_handed(self.settings.db_path, workspace, agent)

    def client(self) -> Client:
        """The mailbox as the agent the identity rule names for the session's folder."""
        if self._client is None:
            from callboard.client.opening import open_client

            self._client = open_client(self.settings, self.env, self.payload.cwd)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def warn(self, error: CallboardError) -> None:
        """Note a failure the run goes on after (only the first is reported)."""
        self.warning = self.warning or f"{error.code}: {error.message}"
