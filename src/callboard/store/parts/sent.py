"""The sent part: what a send left, read back — the message, the send's answer (for an idempotent
repeat too), each recipient's delivery with its history, and who is a party to a thread. Its
interface, and its SQL for both dialects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from callboard.model import Message, RecipientStatus, SendResult
from callboard.store.records import IdempotentSend
from callboard.store.rows import (
    EVENT_COLUMNS,
    MESSAGE_COLUMNS,
    STATUS_COLUMNS,
    message_from_row,
    status_from_row,
    with_history,
)
from callboard.store.sql import Database, marks


class SentPart(Protocol):
    def find_idempotent(self, workspace: str, sender: str, key: str) -> IdempotentSend | None: ...
    def get_message(self, workspace: str, message_id: str) -> Message | None: ...
    def task_ids_of(self, workspace: str, message_ids: Sequence[str]) -> list[str]:
        """The tasks these messages belong to (each once; messages of no task pass over)."""
        ...

    def thread_party(self, workspace: str, thread_id: str, agent: str) -> bool | None:
        """Whether ``agent`` sent or received a message of this thread; None when no message of
        the workspace is in it."""
        ...

    def send_result(self, workspace: str, message_id: str) -> SendResult | None: ...
    def delivery_statuses(self, workspace: str, message_id: str) -> list[RecipientStatus]: ...


_THREAD_PARTY = (
    "SELECT EXISTS (SELECT 1 FROM messages WHERE workspace = ? AND thread_id = ?), "
    "EXISTS (SELECT 1 FROM messages m WHERE m.workspace = ? AND m.thread_id = ? AND (m.sender = ? "
    "OR EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = m.id AND d.recipient = ?)))"
)


class SQLSent:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._history = (
            f"SELECT {EVENT_COLUMNS} FROM delivery_events WHERE workspace = ? AND message_id = ? "
            f"ORDER BY at, {db.inserted('delivery_events')}"
        )

    def find_idempotent(self, workspace: str, sender: str, key: str) -> IdempotentSend | None:
        row = self._db.row(
            "SELECT request_hash, result FROM messages WHERE workspace = ? AND sender = ? AND idempotency_key = ?",
            (workspace, sender, key),
        )
        if row is None:
            return None
        return IdempotentSend(request_hash=row[0] or "", result=SendResult.model_validate_json(row[1]))

    def get_message(self, workspace: str, message_id: str) -> Message | None:
        row = self._db.row(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.workspace = ? AND m.id = ?", (workspace, message_id)
        )
        return message_from_row(row) if row else None

    def task_ids_of(self, workspace: str, message_ids: Sequence[str]) -> list[str]:
        if not message_ids:
            return []
        rows = self._db.rows(
            f"SELECT DISTINCT task_id FROM messages WHERE workspace = ? AND id IN ({marks(message_ids)}) "
            "AND task_id IS NOT NULL",
            (workspace, *message_ids),
        )
        return [row[0] for row in rows]

    def thread_party(self, workspace: str, thread_id: str, agent: str) -> bool | None:
        self._db.deliveries_written()
        row = self._db.row(_THREAD_PARTY, (workspace, thread_id, workspace, thread_id, agent, agent))
        return bool(row[1]) if row and row[0] else None

    def send_result(self, workspace: str, message_id: str) -> SendResult | None:
        row = self._db.row("SELECT result FROM messages WHERE workspace = ? AND id = ?", (workspace, message_id))
        return SendResult.model_validate_json(row[0]) if row else None

    def delivery_statuses(self, workspace: str, message_id: str) -> list[RecipientStatus]:
        self._db.deliveries_written()
        rows = self._db.rows(
            f"SELECT {STATUS_COLUMNS} FROM deliveries WHERE workspace = ? AND message_id = ? ORDER BY recipient",
            (workspace, message_id),
        )
        events = self._db.rows(self._history, (workspace, message_id)) if rows else []
        return with_history([status_from_row(r) for r in rows], events)
