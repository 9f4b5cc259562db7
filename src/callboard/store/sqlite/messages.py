"""Storing sent messages: each message's row and one delivery row per recipient, numbered in
the recipient's mailbox, for one message or for every message of a group commit at once.

A few statements serve the whole lot — one insert of every message, one sequence update per
group of recipients, one insert of every delivery — whatever the number of messages and
recipients: a channel post to a thousand members, or a hundred sends that arrived together.

A large send's delivery rows can wait (``NewMessage.fan_out_later``): each lands in another
mailbox, on a page of its own, and SQLite's log writes every changed page whole, so a post to a
thousand members wrote and fsynced megabytes before anyone could have it. Instead the send
stores its deliveries in a few ``fanout_parts`` rows (``PART_MAILBOXES`` recipients each),
durable and numbered as before, and ``write_out_step`` writes them out later, a part per
transaction, so that a send arriving meanwhile waits for one part, not for all of them. A step
takes the same part of every send waiting: the same mailboxes when they went to one channel, so
a backlog is written out with fewer pages per delivery. Readers of deliveries wait for all of it
(``deliveries_written``), and a store opened after a crash finishes the job (``expand_fanouts``).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from callboard.model import DeliveryState, Message, SendResult, parts_json
from callboard.pending import Pending
from callboard.store.parts import tasks
from callboard.store.records import DuplicateIdempotencyKey, NewDelivery, RecipientsGone, TaskWrite
from callboard.store.rows import to_ts
from callboard.store.sqlite.connection import SQLiteDatabase

# A send to at least this many recipients, group-committed on an event loop (the hub's), is
# answered and pushed to live streams before its delivery rows are written out.
FAN_OUT_LATER_FROM = 32

# Names per "IN (...)" list, and rows per multi-row INSERT: well under SQLite's limit on bound
# parameters (32,766 by default), and short enough to compile quickly.
_NAMES_PER_STATEMENT = 500
_MAX_ROWS_PER_STATEMENT = 1000

_INSERT_MESSAGE = (
    "INSERT INTO messages (id, workspace, sender, sender_session, recipients, channel, subject, parts, "
    "thread_id, reply_to, created_at, idempotency_key, request_hash, result, urgent, sender_address, "
    "sender_terminal, task_id, a2a_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_DELIVERY = (
    "INSERT INTO deliveries (workspace, recipient, seq, message_id, channel, state, sessions, "
    "target_session, queued_at, delivered_at, held_until, held_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_AGENT = "INSERT OR IGNORE INTO agents (workspace, name, created_at) VALUES (?, ?, ?)"
_INSERT_PART = "INSERT INTO fanout_parts (message_id, part, size, deliveries) VALUES (?, ?, ?, ?)"
# SQLite unpacks the parts itself (json_each): Python's sqlite3 lets go of the GIL while a
# statement runs, so a write-out costs the event loop beside it nothing.
_WRITE_OUT = (
    "INSERT INTO deliveries (workspace, recipient, seq, message_id, channel, state, sessions, "
    "target_session, queued_at, delivered_at, held_until, held_reason) "
    "SELECT d.value ->> 0, d.value ->> 1, d.value ->> 2, d.value ->> 3, d.value ->> 4, d.value ->> 5, "
    "d.value ->> 6, d.value ->> 7, d.value ->> 8, d.value ->> 9, d.value ->> 10, d.value ->> 11 "
    "FROM fanout_parts f, json_each(f.deliveries) d"
)
PART_MAILBOXES = 128  # recipients per part: a step writes about two pages per mailbox
STEP_DELIVERIES = 1024  # at most this many deliveries per step (at least one part)


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message ready to store, prepared on the sender's thread (JSON encoded, times as numbers)
    so that the group commit, which every sender waits for, only runs statements."""

    workspace: str
    id: str
    at: float
    idempotency_key: str | None
    row: tuple
    deliveries: Sequence[NewDelivery]
    sessions: Sequence[str]  # per delivery: its live sessions as JSON
    fan_out_later: bool  # store the delivery rows as one fanouts row (see the module's doc)
    task: TaskWrite | None = None  # the task's change the message carries, in the same transaction

    @classmethod
    def prepare(
        cls,
        message: Message,
        deliveries: Sequence[NewDelivery],
        result: SendResult,
        idempotency_key: str | None,
        request_hash: str | None,
        *,
        fan_out_later: bool = False,
        task: TaskWrite | None = None,
    ) -> NewMessage:
        at = to_ts(message.created_at)
        parts = parts_json(message.parts).decode()
        row = (
            message.id,
            message.workspace,
            message.sender,
            message.sender_session,
            json.dumps(message.recipients),
            message.channel,
            message.subject,
            parts,
            message.thread_id,
            message.reply_to,
            at,
            idempotency_key,
            request_hash,
            result.as_json(),
            int(message.urgent),
            message.sender_address,
            message.sender_terminal,
            message.task_id,
            task.a2a_message_id if task is not None else None,
        )
        sessions = [json.dumps(list(d.sessions)) if d.sessions else "[]" for d in deliveries]
        return cls(message.workspace, message.id, at, idempotency_key, row, deliveries, sessions, fan_out_later, task)


def submit_message(
    db: SQLiteDatabase,
    message: Message,
    deliveries: Sequence[NewDelivery],
    result: SendResult,
    idempotency_key: str | None,
    request_hash: str | None,
    fan_out_later_from: int = FAN_OUT_LATER_FROM,
    task: TaskWrite | None = None,
) -> Pending[dict[str, int]]:
    """Store the message (see ``Store.submit_message``): with the sends queued beside it in one
    go (``insert_messages``), its delivery rows left for later when it is large (``write_out_step``)."""
    later = len(deliveries) >= fan_out_later_from and db.follows_up
    new = NewMessage.prepare(message, deliveries, result, idempotency_key, request_hash, fan_out_later=later, task=task)
    return db.submit(
        lambda conn: insert_messages(conn, [new])[0],
        together=insert_messages,
        item=new,
        follow_up=write_out_step if later else None,
    )


def deliveries_written(db: SQLiteDatabase) -> None:
    """Return once every delivery of a send answered so far is in ``deliveries``: those a large
    send left for later are written out by then. Every reader of deliveries calls it first."""
    db.wait_for_follow_ups()  # this process's own are written out by a follow-up
    with db.read() as conn:
        pending = has_fanouts(conn)
    if pending:  # another process's (a hub's) not written out yet, or left by a crash
        db.transact(expand_fanouts)


def insert_messages(conn: sqlite3.Connection, messages: list[NewMessage]) -> list[dict[str, int]]:
    """Store ``messages``; per message, each recipient's new sequence number.

    Raises DuplicateIdempotencyKey (a message's key was used before), RecipientsGone (a
    recipient that was not to be created is gone), or TaskConflict (a message's task changed
    since the service read it, see ``tasks.write_task``). Either way nothing of the call is kept: the
    caller runs it in a savepoint, and runs a group's messages one by one after a failure so
    that only the message at fault fails."""
    try:
        _insert_rows(conn, _INSERT_MESSAGE, [m.row for m in messages])
    except sqlite3.IntegrityError:
        keys = [m.idempotency_key for m in messages if m.idempotency_key is not None]
        if len(messages) == 1 and keys:
            raise DuplicateIdempotencyKey(keys[0]) from None
        raise
    new_agents = {(m.workspace, d.recipient, m.at) for m in messages for d in m.deliveries if d.create_agent}
    if new_agents:
        _insert_rows(conn, _INSERT_AGENT, list(new_agents))
    next_seq = _allocate_seqs(conn, Counter((m.workspace, d.recipient) for m in messages for d in m.deliveries))
    rows: list[tuple] = []
    parts: list[tuple[str, int, int, str]] = []
    answers: list[dict[str, int]] = []
    for m in messages:
        seqs: dict[str, int] = {}
        own: list[tuple] = []  # this message's delivery rows
        for delivery, sessions in zip(m.deliveries, m.sessions, strict=True):
            key = (m.workspace, delivery.recipient)
            seq = next_seq[key]
            next_seq[key] = seq + 1
            delivered = m.at if delivery.state is DeliveryState.delivered else None
            own.append(
                (
                    m.workspace,
                    delivery.recipient,
                    seq,
                    m.id,
                    delivery.channel,
                    delivery.state.value,
                    sessions,
                    delivery.target_session,
                    m.at,
                    delivered,
                    delivery.held_until,
                    delivery.held_reason,
                )
            )
            seqs[delivery.recipient] = seq
        if m.fan_out_later:
            own.sort(key=lambda row: row[1])  # a part's mailboxes lie together in the index
            for part, start in enumerate(range(0, len(own), PART_MAILBOXES)):
                chunk = own[start : start + PART_MAILBOXES]
                parts.append((m.id, part, len(chunk), json.dumps(chunk)))
        else:
            rows.extend(own)
        answers.append(seqs)
    _insert_rows(conn, _INSERT_DELIVERY, rows)
    _insert_rows(conn, _INSERT_PART, parts)
    for m in messages:
        if m.task is not None:
            tasks.write_task(conn, m.task)  # by its module: a test replaces it
    return answers


def write_out_step(conn: sqlite3.Connection) -> bool:
    """Write out one part of the deliveries waiting in ``fanout_parts``: the oldest send's next
    part, with the same part of the sends after it (up to ``STEP_DELIVERIES``). True while more
    are waiting."""
    oldest = conn.execute("SELECT part FROM fanout_parts ORDER BY message_id, part LIMIT 1").fetchone()
    if oldest is None:
        return False
    (part,) = oldest
    taken: list[str] = []
    size = 0
    for message_id, part_size in conn.execute(
        "SELECT message_id, size FROM fanout_parts WHERE part = ? ORDER BY message_id", (part,)
    ):
        if taken and size + part_size > STEP_DELIVERIES:
            break
        taken.append(message_id)
        size += part_size
    chosen = f"f.part = ? AND f.message_id IN ({','.join('?' * len(taken))})"
    conn.execute(f"{_WRITE_OUT} WHERE {chosen}", (part, *taken))
    conn.execute(f"DELETE FROM fanout_parts AS f WHERE {chosen}", (part, *taken))
    return conn.execute("SELECT EXISTS (SELECT 1 FROM fanout_parts)").fetchone()[0] == 1


def expand_fanouts(conn: sqlite3.Connection) -> int:
    """Write out every delivery waiting in ``fanout_parts`` at once; how many."""
    written = conn.execute(_WRITE_OUT).rowcount
    if written:
        conn.execute("DELETE FROM fanout_parts")
    return written


def has_fanouts(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM fanout_parts)").fetchone()[0] == 1


def _insert_rows(conn: sqlite3.Connection, insert: str, rows: Sequence[tuple]) -> None:
    """``executemany(insert, rows)`` as a few multi-row statements: SQLite steps once per
    statement instead of once per row: each step is SQLite's work, and Python's sqlite3 lets
    go of the GIL at every step (another thread then takes it, and gives it back late)."""
    if not rows:
        return
    width = len(rows[0])
    head, _, one = insert.rpartition(" VALUES ")
    per_statement = max(1, min(_MAX_ROWS_PER_STATEMENT, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width))
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        conn.execute(f"{head} VALUES {','.join([one] * len(chunk))}", [value for row in chunk for value in row])


def _allocate_seqs(conn: sqlite3.Connection, counts: Counter[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Reserve ``count`` sequence numbers in each (workspace, recipient)'s mailbox; the first of each.

    Recipients that take the same count share the statements (a channel post: two for all
    members, however many): one update, and one read of the new values as a single JSON row."""
    groups: defaultdict[tuple[str, int], list[str]] = defaultdict(list)
    for (workspace, recipient), count in counts.items():
        groups[(workspace, count)].append(recipient)
    first: dict[tuple[str, str], int] = {}
    for (workspace, count), names in groups.items():
        for start in range(0, len(names), _NAMES_PER_STATEMENT):
            chunk = names[start : start + _NAMES_PER_STATEMENT]
            marks = ",".join("?" * len(chunk))
            conn.execute(
                f"UPDATE agents SET last_seq = last_seq + ? WHERE workspace = ? AND name IN ({marks})",
                (count, workspace, *chunk),
            )
            (last_seqs,) = conn.execute(
                f"SELECT json_group_object(name, last_seq) FROM agents WHERE workspace = ? AND name IN ({marks})",
                (workspace, *chunk),
            ).fetchone()
            for name, last in json.loads(last_seqs).items():
                first[(workspace, name)] = last - count + 1
    missing = [name for (workspace, name) in counts if (workspace, name) not in first]
    if missing:  # deleted by another process since the service looked them up
        raise RecipientsGone(missing)
    return first
