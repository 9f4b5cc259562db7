"""A Client that, after each send (and each task it opens: a task is mail to its worker), injects
the mail into this machine's Claude Code sessions that Callboard does not serve (``inject``), and
confirms what they took before a status.

The CLI hands it in once, where it opens the client for a command (``cli/app.open_client``):
the faces (the send and post commands, the MCP tools of ``callboard mcp``) only send, and
show what the result's ``injected`` and ``inject_problem`` say. Every other call is the client's
own, forwarded one by one: the wrapper is a ``Client`` (``client/base.py``), method for method.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from callboard.client.base import Client
from callboard.config import Settings
from callboard.integrations.claude_code.inject import confirm_injected, inject_sent
from callboard.model import (
    AckResult,
    Agent,
    AuditEntry,
    Channel,
    ChannelMember,
    DeletedAgent,
    MailItem,
    MarkResult,
    MessageStatus,
    Part,
    Reach,
    ReadResult,
    SendResult,
    Session,
    WhoAmI,
    WhoReport,
    Workspace,
)
from callboard.remotes import RemoteAgent
from callboard.requests import InboxQuery, ReadQuery, SendRequest, SurfaceQuery, TaskListQuery, TaskRequest
from callboard.runners import RunnerReport
from callboard.tasks import Task, TaskArtifact, TaskPage, TaskSent, TaskState


class InjectingClient:
    """``client``, with the sender's injection after each send (best effort: it never fails a send)."""

    def __init__(self, client: Client, env: Mapping[str, str] | None = None, settings: Settings | None = None) -> None:
        self._client = client
        self._env = os.environ if env is None else env
        # The settings the client was opened with: a send then reads no config file again.
        self._settings = settings

    # --- what injecting adds -----------------------------------------------------------------

    def send(self, request: SendRequest) -> SendResult:
        return self._injected(self._client.send(request))

    def open_task(self, request: TaskRequest) -> TaskSent:
        opened = self._client.open_task(request)
        return opened.model_copy(update={"send": self._injected(opened.send)})

    def _injected(self, sent: SendResult) -> SendResult:
        report = inject_sent(self._client, sent, self._env, self._settings)
        return sent.model_copy(update={"injected": list(report.injected), "inject_problem": report.problem})

    def message_status(self, message_id: str) -> MessageStatus:
        # Mail injected into sessions we do not serve: what their transcripts show their model
        # took is told before the service judges it.
        confirm_injected(self._client, self._env, self._settings)
        return self._client.message_status(message_id)

    # --- the client's own ----------------------------------------------------------------------

    def whoami(self) -> WhoAmI:
        return self._client.whoami()

    def as_agent(self, agent: str, session_id: str | None = None) -> Client:
        return self._client.as_agent(agent, session_id)

    def read(self, query: ReadQuery = ReadQuery()) -> ReadResult:
        return self._client.read(query)

    def inbox(self, query: InboxQuery = InboxQuery()) -> list[MailItem]:
        return self._client.inbox(query)

    def unread_count(self) -> int:
        return self._client.unread_count()

    def last_unread(self) -> int:
        return self._client.last_unread()

    def ack(self, message_ids: Sequence[str]) -> AckResult:
        return self._client.ack(message_ids)

    def mark_read(self, message_ids: Sequence[str]) -> MarkResult:
        return self._client.mark_read(message_ids)

    def surface(self, query: SurfaceQuery) -> ReadResult:
        return self._client.surface(query)

    def confirm_surfaced(self, message_ids: Sequence[str], evidence: str = "transcript") -> MarkResult:
        return self._client.confirm_surfaced(message_ids, evidence)

    def record_receipt(self, message_ids: Sequence[str], status: str, reason: str | None = None) -> MarkResult:
        return self._client.record_receipt(message_ids, status, reason)

    def who(self) -> WhoReport:
        return self._client.who()

    def reach(self, address: str) -> Reach:
        return self._client.reach(address)

    def register_session(
        self, *, runtime: str, pid: int | None = None, machine: str | None = None, terminal: str | None = None
    ) -> Session:
        return self._client.register_session(runtime=runtime, pid=pid, machine=machine, terminal=terminal)

    def heartbeat(self, session_id: str, delivery_error: str | None = None) -> Session:
        return self._client.heartbeat(session_id, delivery_error)

    def end_session(self, session_id: str) -> Session:
        return self._client.end_session(session_id)

    def create_agent(self, name: str, description: str | None = None, skills: Sequence[str] = ()) -> Agent:
        return self._client.create_agent(name, description, skills)

    def describe_agent(self, name: str) -> Agent:
        return self._client.describe_agent(name)

    def agent_card(self, name: str) -> dict[str, Any] | None:
        return self._client.agent_card(name)

    def update_agent(self, name: str, description: str | None = None, skills: Sequence[str] | None = None) -> Agent:
        return self._client.update_agent(name, description, skills)

    def list_agents(self, skill: str | None = None) -> list[Agent]:
        return self._client.list_agents(skill)

    def delete_agent(self, name: str, *, force: bool = False) -> DeletedAgent:
        return self._client.delete_agent(name, force=force)

    def add_remote(self, name: str, url: str, *, token: str | None = None) -> RemoteAgent:
        return self._client.add_remote(name, url, token=token)

    def remove_remote(self, name: str) -> RemoteAgent:
        return self._client.remove_remote(name)

    def list_remotes(self) -> list[RemoteAgent]:
        return self._client.list_remotes()

    def create_channel(self, name: str, description: str | None = None, *, invite_only: bool = False) -> Channel:
        return self._client.create_channel(name, description, invite_only=invite_only)

    def join_channel(self, name: str) -> Channel:
        return self._client.join_channel(name)

    def leave_channel(self, name: str) -> Channel:
        return self._client.leave_channel(name)

    def invite_to_channel(self, name: str, agents: Sequence[str]) -> Channel:
        return self._client.invite_to_channel(name, agents)

    def remove_from_channel(self, name: str, agent: str) -> Channel:
        return self._client.remove_from_channel(name, agent)

    def list_channels(self) -> list[Channel]:
        return self._client.list_channels()

    def channel_members(self, name: str) -> list[ChannelMember]:
        return self._client.channel_members(name)

    def audit_trail(self, *, limit: int = 50) -> list[AuditEntry]:
        return self._client.audit_trail(limit=limit)

    def update_task(
        self,
        task_id: str,
        *,
        state: TaskState | str | None = None,
        parts: Sequence[Part | dict] = (),
        artifacts: Sequence[TaskArtifact | dict[str, Any]] = (),
    ) -> Task:
        return self._client.update_task(task_id, state=state, parts=parts, artifacts=artifacts)

    def cancel_task(self, task_id: str) -> Task:
        return self._client.cancel_task(task_id)

    def get_task(self, task_id: str, *, history_length: int | None = None) -> Task:
        return self._client.get_task(task_id, history_length=history_length)

    def list_tasks(self, query: TaskListQuery = TaskListQuery()) -> TaskPage:
        return self._client.list_tasks(query)

    def list_workspaces(self) -> list[Workspace]:
        return self._client.list_workspaces()

    def report_runner(self, report: RunnerReport) -> RunnerReport:
        return self._client.report_runner(report)

    def list_runners(self, agent: str | None = None) -> list[RunnerReport]:
        return self._client.list_runners(agent)

    def run_background(self) -> Callable[[], None]:
        return self._client.run_background()

    def send_to_outside_agents(self, message_id: str, seconds: float) -> None:
        return self._client.send_to_outside_agents(message_id, seconds)

    def close(self) -> None:
        return self._client.close()
