"""What the Store's interface takes and gives besides the core's models: the rows of a send
being stored, a task's change riding on it, the outboxes' rows, and the exceptions a write
raises when it stored nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from callboard.model import (
    DeliveryState,
    SendResult,
    TokenKind,
)
from callboard.tasks import Task, TaskArtifact, TaskEvent


@dataclass(frozen=True, slots=True)
class NewDelivery:
    """One recipient's row of a message being stored."""

    recipient: str
    state: DeliveryState  # queued, or delivered when live sessions could read it at send time
    channel: str | None = None
    sessions: Sequence[str] = ()
    target_session: str | None = None  # set when the address named one exact session
    create_agent: bool = False  # the recipient did not exist: create it in the same transaction
    held_until: float | None = None  # a guard holds it back from being surfaced until then (Unix seconds)
    held_reason: str | None = None  # which guard: echo_loop or flood (see guard.py)


@dataclass(frozen=True, slots=True)
class IdempotentSend:
    """What an earlier send with the same idempotency key stored."""

    request_hash: str
    result: SendResult


@dataclass(frozen=True, slots=True)
class StoredMachine:
    name: str
    last_seen: datetime


@dataclass(slots=True)
class NewSession:
    workspace: str
    agent: str
    machine: str
    pid: int
    runtime: str
    proc_start: int | None = None
    terminal: str | None = None
    id: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    # Other agents' open sessions of this process that registering it may end (the service
    # found them not live); any other agent's open session there makes the claim fail.
    may_end: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NewToken:
    id: str
    kind: TokenKind
    secret_hash: str  # sha256 hex of the secret; the secret itself is never stored
    workspace: str | None = None
    agent: str | None = None
    label: str | None = None


@dataclass(frozen=True, slots=True)
class TaskWrite:
    """A task's change that rides on a message: written in the message's transaction, so the
    mail and the task commit together or not at all.

    ``task`` is the task as the change leaves it (its generation counts ``events`` on from
    ``expected_generation``); ``artifacts`` the artifacts it added or changed (whole, as they
    are now). ``expected_generation`` None: a new task, inserted; else the stored row must still
    be at that generation (optimistic: TaskConflict, and nothing is stored, when another change
    came first). Every push config of the task gets one outbox row per event."""

    task: Task
    events: Sequence[TaskEvent]
    expected_generation: int | None = None
    artifacts: Sequence[TaskArtifact] = ()
    a2a_message_id: str | None = None  # the A2A client's message id of the mail, kept beside it
    # The mail goes to this outside A2A agent: its row in the remote outbox, written with it.
    remote_send: NewRemoteSend | None = None


@dataclass(frozen=True, slots=True)
class NewRemoteSend:
    """A message for an outside A2A agent, to be sent by a pump (see RemoteSend)."""

    message_id: str
    remote: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RemoteSend:
    """One message in the remote outbox: pending until the remote took it (tried again, with the
    same message id, until the remote's deadline), then following its task, then done or failed.
    A claimer holds it under a lease, so two pumps never send it at once."""

    workspace: str
    message_id: str
    task_id: str
    remote: str
    state: str  # pending, following, done, failed
    attempts: int
    created_at: datetime
    next_attempt_at: datetime
    last_error: str | None
    remote_task_id: str | None
    remote_context_id: str | None


class TaskConflict(Exception):
    """Raised by submit_message when its TaskWrite found the task changed (or, for a new task,
    already there); nothing of the message was stored. The service reads it again and retries."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


@dataclass(frozen=True, slots=True)
class TaskQuery:
    """Which tasks a list takes: the agent's (as requester or worker), newest updated first,
    after the keyset position ``after`` (updated_at, id) of the previous page."""

    workspace: str
    agent: str
    limit: int
    context_id: str | None = None
    state: str | None = None
    updated_after: float | None = None  # Unix seconds
    after: tuple[float, str] | None = None
    with_agent: str | None = None  # only the tasks between ``agent`` and this one


@dataclass(frozen=True, slots=True)
class PushDelivery:
    """One post of the push outbox, claimed with a lease, with its config's target."""

    id: str
    workspace: str
    task_id: str
    config_id: str
    generation: int
    payload: str  # the TaskEvent's JSON (the poster renders it as A2A wants)
    attempts: int
    url: str
    token: str | None
    auth_scheme: str | None
    auth_credentials: str | None


class DuplicateIdempotencyKey(Exception):
    """Raised by submit_message when (workspace, sender, key) was stored by a racing send."""


class RecipientsGone(Exception):
    """Raised by submit_message when recipients that were not to be created no longer exist
    (deleted since the service looked them up); nothing of the message was stored."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(", ".join(names))
        self.names = list(names)


class TokenTaken(Exception):
    """Raised by create_token when a stored token already has this ``field`` ("id" or
    "secret_hash"); nothing was stored."""

    def __init__(self, field: Literal["id", "secret_hash"]) -> None:
        super().__init__(field)
        self.field = field
