"""What the store tests write, straight through the Store interface as the service would:
workspaces and agents, messages (built, or stored with a delivery per recipient), tokens, at
whole seconds after ``T0`` so every store keeps the times exactly."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from callboard.model import (
    DeliveryState,
    MailItem,
    Message,
    Part,
    RecipientOutcome,
    RecipientStatus,
    SendResult,
    new_id,
)
from callboard.store.base import Store
from callboard.store.records import NewDelivery, NewSession, NewToken

WS = "acme"
OTHER_WS = "globex"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def agents(store: Store, workspace: str, *names: str) -> None:
    store.directory.ensure_workspace(workspace, T0)
    for name in names:
        store.directory.ensure_agent(workspace, name, T0)


@dataclass(frozen=True)
class Sent:
    message: Message
    result: SendResult
    seqs: dict[str, int]

    @property
    def id(self) -> str:
        return self.message.id


def build(
    workspace: str,
    sender: str,
    recipients: Sequence[str],
    *,
    text: str = "hello",
    parts: Sequence[Part] | None = None,
    created_at: datetime = T0,
    subject: str | None = None,
    channel: str | None = None,
    thread_id: str | None = None,
    reply_to: str | None = None,
    sender_session: str | None = None,
) -> tuple[Message, SendResult]:
    message_id = new_id()
    message = Message(
        id=message_id,
        workspace=workspace,
        sender=sender,
        sender_session=sender_session,
        recipients=[f"#{channel}"] if channel else list(recipients),
        channel=channel,
        subject=subject,
        parts=list(parts) if parts is not None else [Part(text=text)],
        thread_id=thread_id or message_id,
        reply_to=reply_to,
        created_at=created_at,
    )
    result = SendResult(
        message_id=message_id,
        thread_id=message.thread_id,
        created_at=created_at,
        recipients=[RecipientOutcome(address=r, state="queued", agent=r, channel=channel) for r in recipients],
    )
    return message, result


def send(
    store: Store,
    workspace: str,
    sender: str,
    recipients: Sequence[str],
    *,
    key: str | None = None,
    request_hash: str | None = None,
    state: DeliveryState = DeliveryState.queued,
    sessions: Sequence[str] = (),
    create: Sequence[str] = (),
    **fields: object,
) -> Sent:
    """Store one message with a delivery per recipient, as the service would."""
    message, result = build(workspace, sender, recipients, **fields)  # type: ignore[arg-type]
    deliveries = [
        NewDelivery(
            recipient=r,
            state=state,
            channel=message.channel,
            sessions=list(sessions),
            create_agent=r in create,
        )
        for r in recipients
    ]
    seqs = store.submit_message(message, deliveries, result, key, request_hash).result()
    return Sent(message, result, seqs)


def ids(items: Sequence[MailItem]) -> list[str]:
    return [item.message.id for item in items]


def seqs(items: Sequence[MailItem]) -> list[int]:
    return [item.seq for item in items]


def status_of(store: Store, workspace: str, message_id: str, agent: str) -> RecipientStatus:
    (row,) = [s for s in store.sent.delivery_statuses(workspace, message_id) if s.agent == agent]
    return row


def session_spec(
    agent: str = "bob",
    machine: str = "host-a",
    pid: int = 100,
    proc_start: int | None = 5000,
    runtime: str = "claude-code",
    workspace: str = WS,
) -> NewSession:
    return NewSession(
        workspace=workspace, agent=agent, machine=machine, pid=pid, runtime=runtime, proc_start=proc_start
    )


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_token(kind: str = "user", workspace: str | None = WS, agent: str | None = None, **fields: str) -> NewToken:
    fields = {"id": new_id(), "secret_hash": secret_hash(new_id()), **fields}
    return NewToken(kind=kind, workspace=workspace, agent=agent, **fields)  # type: ignore[arg-type]


@dataclass
class Outgoing:
    """A send prepared as the service prepares one (the recipients checked, deliveries decided),
    not yet submitted."""

    message: Message
    result: SendResult
    deliveries: list[NewDelivery]
    key: str | None = None

    @property
    def id(self) -> str:
        return self.message.id

    def submit(self, store: Store) -> Future[dict[str, int]]:
        return store.submit_message(self.message, self.deliveries, self.result, self.key, None)


def outgoing(
    sender: str, recipients: list[str], *, key: str | None = None, create: Collection[str] = (), text: str = "hello"
) -> Outgoing:
    message, result = build(WS, sender, recipients, text=text)
    deliveries = [NewDelivery(r, DeliveryState.queued, create_agent=r in create) for r in recipients]
    return Outgoing(message, result, deliveries, key)
