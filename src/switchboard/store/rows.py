"""Rows of the stores' schemas (SQLite's and PostgreSQL's share their columns) turned into the
mailbox's models, and times to and from Unix seconds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from switchboard.model import (
    Agent,
    AuditEntry,
    Channel,
    DeliveryState,
    MailItem,
    Message,
    RecipientStatus,
    Session,
    TokenInfo,
)
from switchboard.store.base import NewToken


def to_ts(moment: datetime) -> float:
    return moment.timestamp()


def from_ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


MESSAGE_COLUMNS = (
    "m.id, m.workspace, m.sender, m.sender_session, m.recipients, m.channel, m.subject, "
    "m.parts, m.thread_id, m.reply_to, m.created_at, m.urgent, m.sender_address, m.sender_terminal"
)
MAIL_QUERY = f"SELECT d.seq, d.state, {MESSAGE_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.message_id"
SESSION_COLUMNS = (
    "id, workspace, agent, machine, pid, proc_start, runtime, started_at, last_seen, ended_at, terminal, delivery_error"
)


def message_from_row(row: Sequence) -> Message:
    return Message.model_validate(
        {
            "id": row[0],
            "workspace": row[1],
            "sender": row[2],
            "sender_session": row[3],
            "recipients": json.loads(row[4]),
            "channel": row[5],
            "subject": row[6],
            "parts": json.loads(row[7]),
            "thread_id": row[8],
            "reply_to": row[9],
            "created_at": from_ts(row[10]),
            "urgent": bool(row[11]),
            "sender_address": row[12],
            "sender_terminal": row[13],
        }
    )


def mail_item_from_row(row: Sequence) -> MailItem:
    return MailItem(seq=row[0], state=DeliveryState(row[1]), message=message_from_row(row[2:]))


STATUS_COLUMNS = (
    "recipient, state, channel, queued_at, delivered_at, surfaced_at, read_at, acked_at, sessions, surfaced_via"
)


def status_from_row(row: Sequence) -> RecipientStatus:
    return RecipientStatus(
        address=row[0],
        agent=row[0],
        state=DeliveryState(row[1]),
        channel=row[2],
        queued_at=from_ts(row[3]),
        delivered_at=from_ts(row[4]),
        surfaced_at=from_ts(row[5]),
        read_at=from_ts(row[6]),
        acked_at=from_ts(row[7]),
        sessions=json.loads(row[8]),
        via=row[9],
    )


def session_from_row(row: Sequence) -> Session:
    return Session(
        id=row[0],
        workspace=row[1],
        agent=row[2],
        machine=row[3],
        pid=row[4],
        proc_start=row[5],
        runtime=row[6],
        started_at=from_ts(row[7]),
        last_seen=from_ts(row[8]),
        ended_at=from_ts(row[9]),
        terminal=row[10],
        delivery_error=row[11],
    )


def agent_from_row(row: Sequence) -> Agent:
    return Agent(
        workspace=row[0], name=row[1], description=row[2], skills=json.loads(row[3]), created_at=from_ts(row[4])
    )


CHANNEL_QUERY = (
    "SELECT c.workspace, c.name, c.description, c.created_by, c.created_at, "
    "(SELECT count(*) FROM channel_members m WHERE m.workspace = c.workspace AND m.channel = c.name), "
    "EXISTS (SELECT 1 FROM channel_members m WHERE m.workspace = c.workspace AND m.channel = c.name AND m.agent = ?), "
    "c.invite_only FROM channels c WHERE c.workspace = ?"
)


def channel_from_row(row: Sequence) -> Channel:
    return Channel(
        workspace=row[0],
        name=row[1],
        description=row[2],
        created_by=row[3],
        created_at=from_ts(row[4]),
        members=row[5],
        joined=bool(row[6]),
        invite_only=bool(row[7]),
    )


TOKEN_COLUMNS = "id, kind, workspace, agent, label, created_at, revoked_at"


def token_from_row(row: Sequence) -> TokenInfo:
    return TokenInfo(
        id=row[0],
        kind=row[1],
        workspace=row[2],
        agent=row[3],
        label=row[4],
        created_at=from_ts(row[5]),
        revoked_at=from_ts(row[6]),
    )


def check_token(token: NewToken) -> None:
    """Refuse a token whose fields do not fit its kind, before the schema's CHECKs would."""
    if token.kind not in ("admin", "user", "agent"):
        raise ValueError(f"unknown token kind {token.kind!r}")
    if (token.workspace is None) != (token.kind == "admin"):
        raise ValueError("an admin token has no workspace; every other token has one")
    if (token.agent is None) != (token.kind != "agent"):
        raise ValueError("an agent token names its agent; no other token does")


AUDIT_COLUMNS = "id, workspace, at, actor, token_kind, token_id, action, target, detail"


def audit_values(entry: AuditEntry, **more_detail: object) -> tuple:
    """The row of ``entry`` in AUDIT_COLUMNS' order, its detail with ``more_detail`` added."""
    detail = json.dumps({**entry.detail, **more_detail}, separators=(",", ":"))
    return (
        entry.id,
        entry.workspace,
        to_ts(entry.at),
        entry.actor,
        entry.token_kind,
        entry.token_id,
        entry.action,
        entry.target,
        detail,
    )


def audit_from_row(row: Sequence) -> AuditEntry:
    return AuditEntry(
        id=row[0],
        workspace=row[1],
        at=from_ts(row[2]),
        actor=row[3],
        token_kind=row[4],
        token_id=row[5],
        action=row[6],
        target=row[7],
        detail=json.loads(row[8]),
    )
