"""Request bodies of the REST API. Unknown fields are refused, so a typo is an error, not ignored."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from switchboard.model import Part


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SendRequest(Body):
    to: str | list[str] = Field(description="name, name@machine, name@machine#pid or #channel; several as a list")
    text: str | None = None
    subject: str | None = None
    parts: list[Part] = Field(default_factory=list)
    thread_id: str | None = None
    reply_to: str | None = None
    require_live: bool = False
    idempotency_key: str | None = None
    urgent: bool = Field(default=False, description="may reach a busy agent between tool calls")


class AckRequest(Body):
    message_ids: list[str]


class MarkReadRequest(Body):
    message_ids: list[str]


class SessionRequest(Body):
    pid: int
    runtime: str = "script"
    machine: str | None = Field(default=None, description="default: the hub's machine")
    proc_start: int | None = Field(default=None, description="the process's start time, to tell a recycled pid apart")
    terminal: str | None = Field(default=None, description="the terminal window or pane, e.g. tmux:%3")


class HeartbeatRequest(Body):
    delivery_error: str | None = Field(default=None, description="what the session's delivery path reports broken")


class AgentRequest(Body):
    name: str
    description: str | None = None
    skills: list[str] = Field(default_factory=list)


class AgentUpdate(Body):
    description: str | None = None
    skills: list[str] | None = None


class ChannelRequest(Body):
    name: str
    description: str | None = None
    invite_only: bool = Field(default=False, description="members are added by its creator or a person's token")


class InviteRequest(Body):
    agents: list[str] = Field(description="existing agents to add to the channel")


class TokenRequest(Body):
    kind: Literal["admin", "user", "agent"] | None = Field(
        default=None, description="default: agent if agent is given, else user"
    )
    agent: str | None = None
    workspace: str | None = None
    label: str | None = None
