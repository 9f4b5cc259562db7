"""A Client that, after each send (and each task it opens: a task is mail to its worker), pushes
the mail into this machine's Claude Code sessions that Callboard does not serve (``push``), and
confirms what they took before a status.

The CLI hands it in once, where it opens the client for a command (``cli/app.open_client``):
the faces (the send and post commands, the MCP tools of ``callboard mcp``) only send, and
show what the result's ``pushed`` and ``push_problem`` say. Every other call is the client's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from callboard.client.base import Client
from callboard.config import Settings
from callboard.integrations.claude_code.push import confirm_pushed, push_sent
from callboard.model import MessageStatus, Part, SendResult
from callboard.requests import SendRequest
from callboard.tasks import TaskSent


class PushingClient:
    """``client``, with the sender's push after each send (best effort: it never fails a send)."""

    def __init__(self, client: Client, env: Mapping[str, str] | None = None, settings: Settings | None = None) -> None:
        self._client = client
        self._env = os.environ if env is None else env
        # The settings the client was opened with: a send then reads no config file again.
        self._settings = settings

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)  # every call but these three is the client's own

    def send(self, request: SendRequest) -> SendResult:
        return self._pushed(self._client.send(request))

    def open_task(self, worker: str, parts: Sequence[Part | dict], **options: Any) -> TaskSent:
        opened = self._client.open_task(worker, parts, **options)
        return opened.model_copy(update={"send": self._pushed(opened.send)})

    def _pushed(self, sent: SendResult) -> SendResult:
        report = push_sent(self._client, sent, self._env, self._settings)
        return sent.model_copy(update={"pushed": list(report.pushed), "push_problem": report.problem})

    def message_status(self, message_id: str) -> MessageStatus:
        # Mail pushed into sessions we do not serve: what their transcripts show their model
        # took is told before the service judges it.
        confirm_pushed(self._client, self._env, self._settings)
        return self._client.message_status(message_id)
