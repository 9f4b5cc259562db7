"""What a send left in the SQLite schema, read back: the message, the send's answer (for an
idempotent repeat too), each recipient's delivery with its history, and who is a party to a
thread. Functions on the database, called by ``SQLiteStore``."""

from __future__ import annotations

from collections.abc import Sequence

from callboard.model import Message, RecipientStatus, SendResult
from callboard.store.base import IdempotentSend
from callboard.store.rows import MESSAGE_COLUMNS, STATUS_COLUMNS, message_from_row, status_from_row, with_history
from callboard.store.sqlite import handing
from callboard.store.sqlite.connection import SQLiteDatabase
from callboard.store.sqlite.messages import deliveries_written


def find_idempotent(db: SQLiteDatabase, workspace: str, sender: str, key: str) -> IdempotentSend | None:
    with db.read() as conn:
        row = conn.execute(
            "SELECT request_hash, result FROM messages WHERE workspace = ? AND sender = ? AND idempotency_key = ?",
            (workspace, sender, key),
        ).fetchone()
    if row is None:
        return None
    return IdempotentSend(request_hash=row[0] or "", result=SendResult.model_validate_json(row[1]))


def get_message(db: SQLiteDatabase, workspace: str, message_id: str) -> Message | None:
    with db.read() as conn:
        row = conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.workspace = ? AND m.id = ?", (workspace, message_id)
        ).fetchone()
    return message_from_row(row) if row else None


def task_ids_of(db: SQLiteDatabase, workspace: str, message_ids: Sequence[str]) -> list[str]:
    marks = ",".join("?" * len(message_ids))
    with db.read() as conn:
        rows = conn.execute(
            f"SELECT DISTINCT task_id FROM messages WHERE workspace = ? AND id IN ({marks}) AND task_id IS NOT NULL",
            (workspace, *message_ids),
        ).fetchall()
    return [row[0] for row in rows]


def thread_party(db: SQLiteDatabase, workspace: str, thread_id: str, agent: str) -> bool | None:
    deliveries_written(db)
    with db.read() as conn:
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM messages WHERE workspace = ?1 AND thread_id = ?2), "
            "EXISTS (SELECT 1 FROM messages m WHERE m.workspace = ?1 AND m.thread_id = ?2 AND (m.sender = ?3 "
            "OR EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = m.id AND d.recipient = ?3)))",
            (workspace, thread_id, agent),
        ).fetchone()
    return bool(row[1]) if row[0] else None


def send_result(db: SQLiteDatabase, workspace: str, message_id: str) -> SendResult | None:
    with db.read() as conn:
        row = conn.execute(
            "SELECT result FROM messages WHERE workspace = ? AND id = ?", (workspace, message_id)
        ).fetchone()
    return SendResult.model_validate_json(row[0]) if row else None


def delivery_statuses(db: SQLiteDatabase, workspace: str, message_id: str) -> list[RecipientStatus]:
    deliveries_written(db)
    with db.read() as conn:
        rows = conn.execute(
            f"SELECT {STATUS_COLUMNS} FROM deliveries WHERE workspace = ? AND message_id = ? ORDER BY recipient",
            (workspace, message_id),
        ).fetchall()
        events = handing.history(conn, workspace, message_id) if rows else []
    return with_history([status_from_row(r) for r in rows], events)
