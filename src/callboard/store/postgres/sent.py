"""A new message with its deliveries, read back for another replica's streams (the rest of the
sent part is ``parts.sent``'s): PostgreSQL's own, as only its replicas share a database."""

from __future__ import annotations

from collections.abc import Sequence

from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.rows import MESSAGE_COLUMNS, mail_item_from_row


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
