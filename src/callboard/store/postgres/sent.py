"""What a send left in the PostgreSQL schema, read back: the message, the send's answer (for an
idempotent repeat too), each recipient's delivery with its history, who is a party to a thread,
and a new message with its deliveries for another replica's streams. Functions on the database,
called by ``PostgresStore``."""

from __future__ import annotations

from collections.abc import Sequence

from callboard.model import Message, RecipientStatus, SendResult
from callboard.store.base import IdempotentSend
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.rows import (
    EVENT_COLUMNS,
    MESSAGE_COLUMNS,
    STATUS_COLUMNS,
    mail_item_from_row,
    message_from_row,
    status_from_row,
    with_history,
)

THREAD_PARTY = """
SELECT EXISTS (SELECT FROM messages WHERE workspace = %(ws)s AND thread_id = %(thread)s),
    EXISTS (SELECT FROM messages m WHERE m.workspace = %(ws)s AND m.thread_id = %(thread)s AND (m.sender = %(agent)s
        OR EXISTS (SELECT FROM deliveries d WHERE d.message_id = m.id AND d.recipient = %(agent)s)))
"""


def find_idempotent(db: PostgresDatabase, workspace: str, sender: str, key: str) -> IdempotentSend | None:
    row = db.one(
        "SELECT request_hash, result FROM messages WHERE workspace = %s AND sender = %s AND idempotency_key = %s",
        (workspace, sender, key),
    )
    if row is None:
        return None
    return IdempotentSend(request_hash=row[0] or "", result=SendResult.model_validate_json(row[1]))


def get_message(db: PostgresDatabase, workspace: str, message_id: str) -> Message | None:
    row = db.one(
        f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.workspace = %s AND m.id = %s", (workspace, message_id)
    )
    return message_from_row(row) if row else None


def task_ids_of(db: PostgresDatabase, workspace: str, message_ids: Sequence[str]) -> list[str]:
    rows = db.all(
        "SELECT DISTINCT task_id FROM messages WHERE workspace = %s AND id = ANY(%s) AND task_id IS NOT NULL",
        (workspace, list(message_ids)),
    )
    return [row[0] for row in rows]


def thread_party(db: PostgresDatabase, workspace: str, thread_id: str, agent: str) -> bool | None:
    row = db.one(THREAD_PARTY, {"ws": workspace, "thread": thread_id, "agent": agent})
    return bool(row[1]) if row and row[0] else None


def deliveries_of(
    db: PostgresDatabase, workspace: str, message_id: str, agents: Sequence[str]
) -> tuple[str, list[tuple[str, int, str, str | None, str | None, str | None]]] | None:
    """A new message as JSON and its deliveries to ``agents`` (recipient, seq, state, target
    session, and the message's task and its state, for a task's mail), read in one query: what
    a replica hands its streams when another replica's send names them, instead of each stream
    reading its mailbox. None if it is not there."""
    rows = db.all(
        f"SELECT {MESSAGE_COLUMNS}, d.recipient, d.seq, d.state, d.target_session "
        "FROM messages m JOIN deliveries d ON d.message_id = m.id "
        "WHERE m.workspace = %s AND m.id = %s AND d.workspace = %s AND d.recipient = ANY(%s)",
        (workspace, message_id, workspace, list(agents)),
    )
    if not rows:
        return None
    width = len(rows[0]) - 4
    item = mail_item_from_row((0, "queued", *rows[0][:width]))  # the message, and its task's state
    message_json = item.message.model_dump_json()
    task_state = item.task_state.value if item.task_state is not None else None
    return message_json, [(r[width], r[width + 1], r[width + 2], r[width + 3], item.task_id, task_state) for r in rows]


def send_result(db: PostgresDatabase, workspace: str, message_id: str) -> SendResult | None:
    row = db.one("SELECT result FROM messages WHERE workspace = %s AND id = %s", (workspace, message_id))
    return SendResult.model_validate_json(row[0]) if row else None


def delivery_statuses(db: PostgresDatabase, workspace: str, message_id: str) -> list[RecipientStatus]:
    rows = db.all(
        f"SELECT {STATUS_COLUMNS} FROM deliveries WHERE workspace = %s AND message_id = %s ORDER BY recipient",
        (workspace, message_id),
    )
    events = (
        db.all(
            f"SELECT {EVENT_COLUMNS} FROM delivery_events WHERE workspace = %s AND message_id = %s ORDER BY at, ctid",
            (workspace, message_id),
        )
        if rows
        else []
    )
    return with_history([status_from_row(r) for r in rows], events)
