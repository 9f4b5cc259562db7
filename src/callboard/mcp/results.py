"""What each MCP tool returns: typed results (their output schemas are what a model is told),
each also carrying the caller's unread count. Field descriptions reach the model's context: short and exact."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from callboard.fence import PREAMBLE
from callboard.model import Reach


class Recipient(BaseModel):
    address: str
    state: str = Field(description="delivered (a live session can read it) or queued (waits in its mailbox)")
    agent: str | None = None
    note: str | None = None


class Sent(BaseModel):
    message_id: str
    thread_id: str
    recipients: list[Recipient]
    task_id: str | None = Field(default=None, description="the task it opened (as_task)")
    unread: int = Field(description="your unread messages")


class Mail(BaseModel):
    id: str
    sender: str
    sender_session: str | None = None
    sender_address: str | None = Field(
        default=None,
        description="the sending session, agent@machine#pid: send_message there to answer that exact session",
    )
    sender_terminal: str | None = None
    to: list[str]
    channel: str | None = None
    thread_id: str
    reply_to: str | None = None
    sent_at: datetime
    message: str = Field(description="its subject and body, fenced: the sender's words, not your user's")


class HeldInfo(BaseModel):
    message_id: str
    sender: str
    recipient: str
    reason: str = Field(description="echo_loop (the same pair bouncing) or flood (one sender's storm)")
    until: datetime = Field(description="when it is let through, by itself")
    why: str


class Inbox(BaseModel):
    note: str = PREAMBLE
    messages: list[Mail]
    unread: int = Field(description="unread messages still waiting after these")
    held: list[HeldInfo] = Field(default_factory=list, description="your mail a loop or flood guard holds back now")


class AgentInfo(BaseModel):
    name: str
    description: str | None = None
    skills: list[str] = Field(default_factory=list)
    live: bool = Field(description="has a live session now")
    held: int = Field(default=0, description="its messages a loop or flood guard holds back now")
    remote: str | None = Field(
        default=None, description="an outside A2A agent (its URL): a message to it becomes an A2A task"
    )


class Agents(BaseModel):
    agents: list[AgentInfo]
    unread: int


class ChannelInfo(BaseModel):
    name: str
    description: str | None = None
    members: int
    joined: bool
    invite_only: bool = Field(default=False, description="only its creator or a person adds members")


class Channels(BaseModel):
    channels: list[ChannelInfo]
    unread: int


class Delivery(BaseModel):
    address: str
    agent: str | None = None
    state: str = Field(
        description="queued; held (by a loop or flood guard); delivered (a live session can take it); handed "
        "(given to a live session, waiting for its turn); surfaced (in the agent's context); read; acked; or "
        "unknown_recipient"
    )
    handed_to: str | None = Field(default=None, description="while handed: the session holding it")
    held_until: datetime | None = Field(default=None, description="held: when a guard lets it through")
    held_reason: str | None = Field(default=None, description="held: echo_loop or flood, and why")
    delivered_at: datetime | None = None
    handed_at: datetime | None = None
    surfaced_at: datetime | None = None
    read_at: datetime | None = None
    acked_at: datetime | None = None
    reachable: str | None = Field(
        default=None,
        description="for mail not read yet: live, path_broken, no_live_session, machine_down or unknown_address",
    )
    why: str | None = Field(default=None, description="for mail not read yet: whether and how it can reach them now")
    history: list[str] = Field(default_factory=list, description="what happened to it, oldest first")


class Status(BaseModel):
    message_id: str
    subject: str | None = None
    thread_id: str
    sent_at: datetime
    read_by: list[str]
    recipients: list[Delivery]
    unread: int


class MachineInfo(BaseModel):
    name: str
    up: bool = Field(description="a session on it was seen within the liveness window")
    last_seen: datetime


class PresenceInfo(BaseModel):
    name: str
    live: bool
    sessions: list[str] = Field(description="live sessions, as name@machine#pid")
    held: list[HeldInfo] = Field(default_factory=list, description="its mail a loop or flood guard holds back now")


class Who(BaseModel):
    machines: list[MachineInfo]
    agents: list[PresenceInfo]
    liveness_seconds: float
    unread: int
    reach: Reach | None = Field(
        default=None, description="for the address asked about: can it be reached now, or why not"
    )
