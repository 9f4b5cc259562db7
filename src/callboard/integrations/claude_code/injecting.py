"""The CLI's step after each send: the mail injected into this machine's Claude Code sessions
that Callboard does not serve (``inject``), and what they took confirmed before a status.

The CLI hands it to the client it opens for a command (``cli/app.open_client``) as the client's
``after_send`` (``client/base.AfterSend``): the faces (the send and post commands, the MCP tools of
``callboard mcp``) only send, and show what the result's ``injected`` and ``inject_problem`` say.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from callboard.client.base import Client
from callboard.config import Settings
from callboard.integrations.claude_code.inject import confirm_injected, inject_sent
from callboard.model import SendResult


class ClaudeCodeInjector:
    """Injection after each send (best effort: it never fails a send), as a client's AfterSend."""

    def __init__(self, env: Mapping[str, str] | None = None, settings: Settings | None = None) -> None:
        self._env = os.environ if env is None else env
        # The settings the client was opened with: a send then reads no config file again.
        self._settings = settings

    def sent(self, client: Client, result: SendResult) -> SendResult:
        report = inject_sent(client, result, self._env, self._settings)
        return result.model_copy(update={"injected": list(report.injected), "inject_problem": report.problem})

    def before_status(self, client: Client) -> None:
        # Mail injected into sessions we do not serve: what their transcripts show their model
        # took is told before the service judges it.
        confirm_injected(client, self._env, self._settings)
