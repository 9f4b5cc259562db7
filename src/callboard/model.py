"""The mailbox's types: what is stored, what operations return, what faces print.

Pure: pydantic models and small helpers, no I/O, nothing of ours imported. Every face renders
these same shapes (``--json`` is ``model_dump(mode="json")``), so their field names are API.
"""

from __future__ import annotations

import functools
import operator
import os
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, computed_field, model_validator


def utcnow() -> datetime:
    return datetime.now(UTC)


class _UUID7Clock:
    """UUIDv7 (RFC 9562): 48-bit Unix milliseconds, then randomness, so ids sort by creation.

    Within one millisecond the 12-bit ``rand_a`` field counts up, so ids made by one process
    are strictly increasing even when made faster than the clock ticks.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._counter = 0
        # A seeded generator, not os.urandom per id: that system call lets other threads take the
        # GIL in the middle of a hub request. Reseeded in a forked child, so no two processes share it.
        self._random = random.Random(os.urandom(32))
        os.register_at_fork(after_in_child=lambda: self._random.seed(os.urandom(32)))

    def new(self) -> int:
        with self._lock:
            now_ms = time.time_ns() // 1_000_000
            if now_ms > self._last_ms:
                self._last_ms = now_ms
                self._counter = self._random.getrandbits(10)  # leave room to count up
            else:
                self._counter += 1
                if self._counter > 0xFFF:  # counter spent: borrow the next millisecond
                    self._last_ms += 1
                    self._counter = 0
            ms, counter = self._last_ms, self._counter
            rand_b = self._random.getrandbits(62)
        value = (ms << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | rand_b
        return value


_clock = _UUID7Clock()


def new_id() -> str:
    """A new time-ordered id (UUIDv7, canonical text form)."""
    h = f"{_clock.new():032x}"  # str(uuid.UUID(int=...)) spelled out: a hub makes one per send
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


M = TypeVar("M", bound=BaseModel)
_REQUIRED = object()
# Per model class: every field with its default (in declaration order), and the fields whose
# default comes from a factory (a fresh list each time; pydantic's may take the data, ours none).
_templates: dict[type[BaseModel], tuple[dict[str, Any], list[tuple[str, Callable[..., Any]]], list[str]]] = {}


def built(cls: type[M], **values: Any) -> M:
    """``cls.model_construct(**values)``: a model from values the caller has already checked, at
    a fraction of the cost (the hub builds a few per send; model_construct resolves every
    field's aliases and default on each call). Fields not given take their defaults."""
    known = _templates.get(cls)
    if known is None:
        fields = cls.model_fields.items()
        template = {n: _REQUIRED if f.is_required() else f.default for n, f in fields}
        factories = [(n, f.default_factory) for n, f in fields if f.default_factory]
        known = _templates[cls] = (template, factories, [n for n, f in fields if f.is_required()])
    template, factories, required = known
    # In declaration order (the template's), as pydantic serialises a model's __dict__.
    ordered = {**template, **values}
    if len(ordered) != len(template):
        raise TypeError(f"{cls.__name__} has no field {sorted(ordered.keys() - template.keys())[0]}")
    for name, factory in factories:
        if name not in values:
            ordered[name] = factory()
    # By name, not by scanning the values for the marker: that compares each value with it (a
    # model's __eq__ is Python code).
    for name in required:
        if name not in values:
            raise TypeError(f"{cls.__name__}.{name} is required")
    given = set(values)
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", ordered)
    object.__setattr__(model, "__pydantic_fields_set__", given)
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


# --- messages -------------------------------------------------------------------------------


# "Leave it out when it is None", as a C-level call: pydantic asks it of every field of every
# part each time a message is serialised.
_unset = functools.partial(operator.is_, None)


class Part(Model):
    """One piece of a message, shaped like an A2A 1.0 Part: exactly one of text, data, url, raw.

    Only the fields that are set are serialised, as A2A does: ``{"text": "hi"}``."""

    # The JSON schema says "exactly one of" too, so that a client generated from it agrees.
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {"required": [k], "properties": {k: {"not": {"type": "null"}}}} for k in ("text", "data", "url", "raw")
            ]
        },
    )

    text: str | None = Field(default=None, exclude_if=_unset)
    data: Any = Field(default=None, exclude_if=_unset)
    url: str | None = Field(default=None, exclude_if=_unset)
    raw: str | None = Field(default=None, description="base64-encoded bytes", exclude_if=_unset)
    filename: str | None = Field(default=None, exclude_if=_unset)
    media_type: str | None = Field(default=None, exclude_if=_unset)
    metadata: dict[str, Any] | None = Field(default=None, exclude_if=_unset)

    @model_validator(mode="after")
    def _exactly_one_content(self) -> Part:
        filled = [k for k in ("text", "data", "url", "raw") if getattr(self, k) is not None]
        if len(filled) != 1:
            raise ValueError("a part holds exactly one of text, data, url or raw")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("text", "data", "url", "raw") if getattr(self, k) is not None)


_PARTS = TypeAdapter(list[Part])


def parts_json(parts: list[Part]) -> bytes:
    """The parts as stored and sent: compact JSON, only the fields that are set."""
    return _PARTS.dump_json(parts)


class Message(Model):
    id: str
    workspace: str
    sender: str
    sender_session: str | None = None
    sender_address: str | None = Field(
        default=None, description="the sending session, agent@machine#pid: reply there to reach that exact session"
    )
    sender_terminal: str | None = Field(
        default=None, description="the terminal window or pane the sending session runs in, where known"
    )
    recipients: list[str] = Field(description="the addresses as the sender gave them")
    channel: str | None = Field(default=None, description="set when the message was posted to a channel")
    subject: str | None = None
    parts: list[Part]
    thread_id: str
    reply_to: str | None = None
    created_at: datetime
    urgent: bool = Field(default=False, description="the sender asked that it reach a busy agent between tool calls")
    task_id: str | None = Field(
        default=None, description="the task this message belongs to (an A2A task)", exclude_if=_unset
    )

    @property
    def text(self) -> str:
        """The text parts joined, for faces that print a body."""
        return "\n".join(p.text for p in self.parts if p.text is not None)


# How a message reaches a coding agent's context: written into its session's messaging socket,
# put in by one of its hooks (session start, prompt, after a tool, stop), or by the waiter that
# wakes an idle session.
SurfacePath = Literal["socket", "hook", "waiter", "runner"]
SURFACE_PATHS: tuple[SurfacePath, ...] = ("socket", "hook", "waiter", "runner")


class TaskState(StrEnum):
    """A2A 1.0's task states, spelled as A2A's JSON spells them (``input-required``)."""

    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required"
    AUTH_REQUIRED = "auth-required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    REJECTED = "rejected"


class DeliveryState(StrEnum):
    """How far a message got with one recipient; each later state implies the earlier ones.

    delivered: a live session can take it. handed: handed to one live session (a frame its
    messaging socket accepted, a waiter's wake), waiting for that session's next model request;
    it goes back to delivered or queued if that session ends first. surfaced: the agent's
    context holds it (a hook's own output carried it, or the session's transcript recorded a
    turn with it)."""

    queued = "queued"
    delivered = "delivered"
    handed = "handed"
    surfaced = "surfaced"
    read = "read"
    acked = "acked"

    @property
    def rank(self) -> int:
        return _STATE_ORDER.index(self)


_STATE_ORDER = list(DeliveryState)

# unknown_recipient: only in the stored results of sends from before a refused address failed the
# whole send (service/recipients.py); a send answered now reached every recipient it names.
SendState = Literal["unknown_recipient", "queued", "delivered"]

# What can happen to a message with one recipient, as its history records it. delivered, read
# and acked come from the delivery's own timestamps; the others are stored as they happen.
DeliveryEventKind = Literal[
    "queued", "delivered", "handed", "surfaced", "returned", "held", "expired", "refused", "read", "acked"
]


class DeliveryEvent(Model):
    """One step of a message's way to one recipient."""

    at: datetime
    event: DeliveryEventKind
    session: str | None = Field(default=None, description="the session concerned (agent@machine#pid, or its id)")
    via: str | None = Field(default=None, description="socket, hook or waiter: the path it took")
    detail: str | None = Field(
        default=None, description="the evidence (surfaced), the reason (returned, held, expired)"
    )


GuardReason = Literal["echo_loop", "flood"]


class Held(Model):
    """Why, and until when, a loop or flood guard holds a delivery back from being surfaced
    (guard.py). It stays stored and unread; at ``until`` it is let through by itself."""

    reason: GuardReason = Field(description="echo_loop (the same pair bouncing) or flood (one sender's storm)")
    until: datetime = Field(description="when it is let through")
    why: str = Field(default="", description="one sentence on why")


class HeldMail(Held):
    """One message a guard holds now, in a recipient's mailbox."""

    message_id: str
    sender: str
    recipient: str


class RecipientOutcome(Model):
    """What a send did for one address, decided when the send committed."""

    address: str
    state: SendState
    agent: str | None = None
    channel: str | None = Field(default=None, description="the channel this recipient was reached through")
    sessions: list[str] = Field(default_factory=list, description="live sessions that can read it now")
    session: str | None = Field(default=None, description="the live session it is pushed to")
    new_agent: bool = Field(default=False, description="no agent of this name existed; the send created it")
    held: Held | None = Field(default=None, description="a loop or flood guard holds it back until held.until")
    reason: str | None = None
    remote: str | None = Field(
        default=None, description="an outside A2A agent's URL: the mail is sent to it as an A2A task", exclude_if=_unset
    )


class InjectedInto(Model):
    """A recipient's session on the sender's machine that the sender's client wrote the sent
    mail into, right after the send (a session no Callboard process serves)."""

    agent: str
    pid: int
    name: str | None = None
    session_id: str
    messages: list[str]  # the ids of the messages written


class SendResult(Model):
    message_id: str
    thread_id: str
    created_at: datetime
    recipients: list[RecipientOutcome]
    duplicate: bool = Field(default=False, description="an earlier send with this idempotency key")
    # What the sender's own client did on its machine after the send: never stored, never on
    # the wire (a face shows it).
    injected: list[InjectedInto] = Field(default_factory=list, exclude=True)
    inject_problem: str | None = Field(default=None, exclude=True)  # what went wrong injecting, one sentence

    # Its JSON, once encoded: a send's stored row and the hub's answer are the same text. A slot,
    # not a field: a copy (``model_copy``: a repeat's ``duplicate``) starts without it.
    __slots__ = ("_json",)

    def as_json(self) -> str:
        """``model_dump_json()``, encoded once for this result (it is frozen)."""
        encoded: str | None = getattr(self, "_json", None)
        if encoded is None:
            encoded = self.model_dump_json()
            object.__setattr__(self, "_json", encoded)
        return encoded


class MailItem(Model):
    """One message in one recipient's mailbox."""

    seq: int = Field(description="this recipient's delivery sequence number, the resume cursor")
    state: DeliveryState
    message: Message
    # A task's mail says so at the top of the item, where a script looks first: the task and the
    # state this message moved it to (a "working" update says working, however the task moved
    # since: ``task show`` tells its state now). Left out of the JSON for other mail.
    task_id: str | None = Field(default=None, description="the task this message belongs to", exclude_if=_unset)
    task_state: TaskState | None = Field(
        default=None, description="the state this message moved the task to", exclude_if=_unset
    )


def mail_item(seq: int, state: DeliveryState, message: Message, task_state: TaskState | None = None) -> MailItem:
    """A mailbox item; its task id is its message's (one source), its state the one the message made."""
    return built(MailItem, seq=seq, state=state, message=message, task_id=message.task_id, task_state=task_state)


class ReadResult(Model):
    items: list[MailItem]
    cursor: int = Field(description="the highest sequence number returned (or passed in) — resume after it")
    unread: int = Field(description="unread messages left in the mailbox after this read")
    held: list[HeldMail] = Field(
        default_factory=list, description="mail a loop or flood guard holds back from being surfaced until its time"
    )


class AckResult(Model):
    acked: list[str]


class MarkResult(Model):
    marked: list[str]


class RecipientStatus(Model):
    address: str
    state: DeliveryState | Literal["unknown_recipient", "held"] = Field(
        description="held: a loop or flood guard holds it back from being surfaced until held.until"
    )
    agent: str | None = None
    channel: str | None = None
    held: Held | None = Field(default=None, description="a guard held it back (or holds it now: state held)")
    queued_at: datetime | None = None
    delivered_at: datetime | None = None
    handed_at: datetime | None = None
    surfaced_at: datetime | None = None
    read_at: datetime | None = None
    acked_at: datetime | None = None
    sessions: list[str] = Field(default_factory=list)
    via: SurfacePath | None = Field(default=None, description="how it was handed to or put before the agent")
    handed_to: str | None = Field(
        default=None, description="while handed: the session holding it, waiting for its turn (agent@machine#pid)"
    )
    history: list[DeliveryEvent] = Field(default_factory=list, description="what happened to it, oldest first")
    reach: Reach | None = Field(default=None, description="for mail not yet read: can the recipient be reached now")


class RemoteSendStatus(Model):
    """A message to an outside A2A agent: where its sending stands, and the remote's task."""

    remote: str = Field(description="the outside agent's name")
    state: Literal["pending", "following", "done", "failed"] = Field(
        description="pending: not yet taken by the remote (tried again until its deadline); following: the "
        "remote took it and its task is followed; done: the remote's task finished or waits on you; failed"
    )
    attempts: int
    last_error: str | None = None
    remote_task_id: str | None = Field(default=None, description="the task's id at the remote")


class MessageStatus(Model):
    message_id: str
    sender: str
    subject: str | None
    thread_id: str
    created_at: datetime
    recipients: list[RecipientStatus]
    task_id: str | None = Field(default=None, description="the task this message belongs to", exclude_if=_unset)
    task_state: TaskState | None = Field(default=None, description="that task's state now", exclude_if=_unset)
    remote: RemoteSendStatus | None = Field(
        default=None, description="sent to an outside A2A agent: how that went", exclude_if=_unset
    )


# --- directory --------------------------------------------------------------------------------


class Workspace(Model):
    name: str
    created_at: datetime


class Agent(Model):
    workspace: str
    name: str
    description: str | None = None
    skills: list[str] = Field(default_factory=list)
    created_at: datetime
    remote: str | None = Field(default=None, description="an outside A2A agent: the URL of its card", exclude_if=_unset)


# A session of an agent CLI that Callboard does not serve (neither our MCP server nor our hooks
# run in it), registered by a sender that writes mail into it: it reports only when written into,
# so it is aimed at only when the agent has no other live session. What kind of session it is
# shows in its runtime, the CLI's own with this mark (``unserved_runtime``), whichever CLI it is.
UNSERVED_MARK = "-unserved"


def unserved_runtime(runtime: str) -> str:
    """The runtime an unserved session of a CLI of ``runtime`` is registered with."""
    return runtime + UNSERVED_MARK


class Session(Model):
    """One live process acting as an agent."""

    # Its address is part of its JSON (people and programs address sessions by it); reading
    # that JSON back ignores it, as it is computed.
    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    workspace: str
    agent: str
    machine: str
    pid: int
    proc_start: int | None = Field(default=None, description="process start time, to tell a recycled pid apart")
    runtime: str
    started_at: datetime
    last_seen: datetime
    ended_at: datetime | None = None
    terminal: str | None = Field(default=None, description="the terminal window or pane it runs in, where known")
    delivery_error: str | None = Field(
        default=None, description="what its delivery path last reported broken (cleared when it works again)"
    )
    live: bool = False

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator over @property; pydantic documents this one
    @property
    def address(self) -> str:
        """agent@machine#pid: the address that reaches exactly this session."""
        return f"{self.agent}@{self.machine}#{self.pid}"

    @property
    def unserved(self) -> bool:
        """A session Callboard does not serve, registered by a sender writing mail into it."""
        return self.runtime.endswith(UNSERVED_MARK)


class Machine(Model):
    name: str
    last_seen: datetime
    up: bool


ReachState = Literal["live", "path_broken", "no_live_session", "machine_down", "unknown_address", "unknown_agent"]


class Reach(Model):
    """Whether an address can be reached now, and if not, plainly why."""

    address: str
    state: ReachState = Field(
        description="live; path_broken (a live session whose delivery path reports an error); "
        "no_live_session (the agent is known, no session of it is live); machine_down (no session "
        "on that machine was seen within the liveness window); unknown_address (the agent exists, "
        "but no session on that machine, or of that pid, ever reported); unknown_agent"
    )
    reason: str = Field(description="one sentence a person or a model can act on")
    sessions: list[str] = Field(default_factory=list, description="live sessions the address reaches")
    session: str | None = Field(default=None, description="the session mail to this address is pushed to")
    machine: str | None = None
    machine_last_seen: datetime | None = None


class AgentPresence(Model):
    name: str
    description: str | None = None
    skills: list[str] = Field(default_factory=list)
    live: bool
    unread: int
    sessions: list[Session]
    held: list[HeldMail] = Field(default_factory=list, description="its mail a loop or flood guard holds now")
    remote: str | None = Field(default=None, description="an outside A2A agent: the URL of its card", exclude_if=_unset)
    leases: list[str] = Field(
        default_factory=list, description="its active leases, each 'paths (exclusive|shared) in repository, id ID'"
    )


class WhoReport(Model):
    workspace: str
    agents: list[AgentPresence]
    machines: list[Machine]
    liveness_seconds: float
    replica: str | None = Field(
        default=None, description="the hub replica that answered (several share a PostgreSQL store)"
    )


class Channel(Model):
    workspace: str
    name: str
    description: str | None = None
    created_by: str
    created_at: datetime
    members: int = 0
    joined: bool = False
    invite_only: bool = Field(
        default=False, description="members are added by its creator or a person's token; none join on their own"
    )


class ChannelMember(Model):
    agent: str
    joined_at: datetime


class WhoAmI(Model):
    workspace: str
    agent: str
    source: str = Field(description="which identity rule named this agent")
    machine: str
    store: str = Field(description="the embedded database file, or the hub URL")
    session: str | None = Field(default=None, description="the session this caller acts in (agent@machine#pid)")
    liveness_seconds: float | None = Field(
        default=None, description="a session is live while it reports within this many seconds"
    )


TokenKind = Literal["admin", "user", "agent"]


class Caller(Model):
    """Who is calling the service: an agent of a workspace, maybe as one of its sessions; or a
    person who names no agent (``agent`` None), who may only look (see ``service.identity_gate``)."""

    workspace: str
    agent: str | None
    session_id: str | None = None
    # A person's credential (a user or admin token, or the embedded store on one's own machine)
    # may do what an agent token may not: create agents by sending, manage invite-only channels,
    # read the audit trail.
    person: bool = True
    token_kind: TokenKind | None = None  # over the hub: the credential's kind and id (for the audit trail)
    token_id: str | None = None


class AuditEntry(Model):
    """One action with large effects, as the workspace's audit trail keeps it (append-only)."""

    id: str
    workspace: str
    at: datetime
    actor: str = Field(description="the agent that acted")
    token_kind: TokenKind | None = Field(
        default=None, description="the credential's kind over the hub; None: the embedded store"
    )
    token_id: str | None = None
    action: str = Field(description="agent.delete, channel.create, channel.invite, channel.join or channel.remove")
    target: str = Field(description="the agent (name) or channel (#name) acted on")
    detail: dict[str, Any] = Field(default_factory=dict, description="e.g. the unread messages a delete dropped")


class DeletedAgent(Model):
    deleted: str
    unread_dropped: int = Field(
        default=0, description="unread messages its mailbox held (only a forced delete drops any)"
    )
