"""Storing a sent message in PostgreSQL: the message's row and one delivery row per recipient,
each numbered in its recipient's mailbox, in one statement (see ``SUBMIT``) — a transaction of
its own in autocommit, or two statements in one when the send creates recipients.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from callboard.model import Message, SendResult, parts_json
from callboard.pending import Pending
from callboard.store.parts import tasks
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.postgres.notices import NOTIFY, payload
from callboard.store.postgres.sql import PostgresConnection
from callboard.store.records import DuplicateIdempotencyKey, NewDelivery, RecipientsGone, TaskWrite
from callboard.store.rows import to_ts
from callboard.tasks import TASK_KEY_PREFIX

# SUBMIT's named parameters: each of its own type (text, numbers, arrays), looked up by name.
SubmitArgs = dict[str, Any]
PREPARED_UP_TO = 16  # recipients: a send to more is planned anew each time (see _store)

# Recipients created by the send itself: inserted first, in name order, by a statement of their
# own (a statement does not see its own CTEs' inserts), in the same transaction.
CREATE_RECIPIENTS = (
    "INSERT INTO agents (workspace, name, created_at) "
    "SELECT %(ws)s, n, %(at)s FROM unnest(%(names)s::text[]) AS n ORDER BY n ON CONFLICT DO NOTHING"
)

# Lock the recipients' agent rows in name order (two sends to overlapping recipients never
# deadlock, and the second numbers its deliveries after the first commits: sequence numbers
# become visible in order), then — only if every recipient exists — take each one's next
# number, insert the message (its idempotency key's unique index may refuse it) and a delivery
# per recipient from the arrays, and notify. The answer: whether all were there, the names
# found, and the new numbers by name. (``= ANY(ARRAY(SELECT …))`` rather than a join: it is an
# index condition whatever the planner's estimates, which a young table does not have yet.)
SUBMIT = f"""
WITH locked AS MATERIALIZED (
    SELECT name FROM agents WHERE workspace = %(ws)s AND name = ANY(%(names)s::text[])
    ORDER BY name FOR UPDATE
), complete AS MATERIALIZED (
    SELECT count(*) = %(count)s AS ok FROM locked
), bumped AS (
    UPDATE agents a SET last_seq = a.last_seq + 1
    WHERE a.workspace = %(ws)s AND a.name = ANY(ARRAY(SELECT name FROM locked)) AND (SELECT ok FROM complete)
    RETURNING a.name, a.last_seq
), message AS (
    INSERT INTO messages (id, workspace, sender, sender_session, recipients, channel, subject, parts,
        thread_id, reply_to, created_at, idempotency_key, request_hash, result, urgent, sender_address,
        sender_terminal, task_id, a2a_message_id)
    SELECT %(id)s, %(ws)s, %(sender)s, %(sender_session)s, %(recipients)s, %(channel_name)s, %(subject)s,
        %(parts)s, %(thread_id)s, %(reply_to)s, %(at)s, %(key)s, %(request_hash)s, %(result)s, %(urgent)s,
        %(sender_address)s, %(sender_terminal)s, %(task_id)s, %(a2a_message_id)s
    FROM complete WHERE ok
), delivered AS (
    INSERT INTO deliveries (workspace, recipient, seq, message_id, channel, state, sessions, target_session,
        queued_at, delivered_at, held_until, held_reason)
    SELECT %(ws)s, b.name, b.last_seq, %(id)s, d.channel, d.state, d.sessions, d.target, %(at)s,
        CASE WHEN d.state = 'delivered' THEN %(at)s::float8 END, d.held_until, d.held_reason
    FROM bumped b JOIN unnest(%(to)s::text[], %(channels)s::text[], %(states)s::text[], %(sessions)s::text[],
        %(targets)s::text[], %(held_until)s::float8[], %(held_reason)s::text[])
        AS d (name, channel, state, sessions, target, held_until, held_reason) ON d.name = b.name
)
SELECT c.ok, (SELECT array_agg(name) FROM locked), (SELECT json_object_agg(name, last_seq) FROM bumped),
    (SELECT {NOTIFY} WHERE c.ok)
FROM complete c
"""


def submit_message(
    db: PostgresDatabase,
    message: Message,
    deliveries: Sequence[NewDelivery],
    result: SendResult,
    idempotency_key: str | None,
    request_hash: str | None,
    task: TaskWrite | None = None,
) -> Pending[dict[str, int]]:
    """Store the message on a send thread (see ``Store.submit_message``); its notification names
    the recipients' mailboxes and the message, so that replicas read it once for their streams,
    and the task's own key (``task:<id>``), so that its subscribers on other replicas wake."""
    args = submit_args(message, deliveries, result, idempotency_key, request_hash)
    args["a2a_message_id"] = task.a2a_message_id if task is not None else None
    woken = args["names"] if task is None else [*args["names"], TASK_KEY_PREFIX + task.task.id]
    notice = payload(db.replica, message.workspace, woken, message.id)
    args = db.with_notify(args, notice)
    return db.submit(lambda conn: store_message(conn, args, task))


def submit_args(
    message: Message,
    deliveries: Sequence[NewDelivery],
    result: SendResult,
    idempotency_key: str | None,
    request_hash: str | None,
) -> SubmitArgs:
    """SUBMIT's parameters (less the notification's), prepared on the caller's thread: the send
    thread then only runs the statement. ``names``: the recipients, sorted."""
    names = sorted({d.recipient for d in deliveries})
    return {
        "ws": message.workspace,
        "names": names,
        "count": len(names),
        "creates": sorted({d.recipient for d in deliveries if d.create_agent}),
        "id": message.id,
        "sender": message.sender,
        "sender_session": message.sender_session,
        "recipients": json.dumps(message.recipients),
        "channel_name": message.channel,
        "subject": message.subject,
        "parts": parts_json(message.parts).decode(),
        "thread_id": message.thread_id,
        "reply_to": message.reply_to,
        "at": to_ts(message.created_at),
        "key": idempotency_key,
        "request_hash": request_hash,
        "result": result.as_json(),
        "urgent": bool(message.urgent),
        "sender_address": message.sender_address,
        "sender_terminal": message.sender_terminal,
        "task_id": message.task_id,
        "a2a_message_id": None,
        "to": [d.recipient for d in deliveries],
        "channels": [d.channel for d in deliveries],
        "states": [d.state.value for d in deliveries],
        "sessions": [json.dumps(list(d.sessions)) if d.sessions else "[]" for d in deliveries],
        "targets": [d.target_session for d in deliveries],
        "held_until": [d.held_until for d in deliveries],
        "held_reason": [d.held_reason for d in deliveries],
    }


def store_message(conn: psycopg.Connection, args: SubmitArgs, task: TaskWrite | None = None) -> dict[str, int]:
    """One attempt at storing the message, and the task's change it carries; each recipient's
    new sequence number. Raises DuplicateIdempotencyKey, RecipientsGone or TaskConflict, and
    then nothing of it is stored."""
    if not args["creates"] and task is None:
        return _store(conn, args)
    with conn.transaction():  # a missing recipient or a lost task race rolls back the rest
        if args["creates"]:
            conn.execute(CREATE_RECIPIENTS, {"ws": args["ws"], "names": args["creates"], "at": args["at"]})
        seqs = _store(conn, args)
        if task is not None:
            tasks.write_task(PostgresConnection(conn), task)  # by its module: a test replaces it
        return seqs


def _store(conn: psycopg.Connection, args: SubmitArgs) -> dict[str, int]:
    # psycopg prepares a statement run often, and PostgreSQL may then plan it once for any
    # parameters: a plan made for the usual send to a few can be far off for a post to a
    # thousand (it once took 100 ms instead of 15). Large sends are planned for their arrays.
    prepare = None if args["count"] <= PREPARED_UP_TO else False
    try:
        ok, found, seqs, _ = conn.execute(SUBMIT, args, prepare=prepare).fetchone()  # type: ignore[misc]  # SUBMIT answers one row, always
    except pg_errors.UniqueViolation as error:
        if error.diag.constraint_name == "messages_by_idempotency_key":
            raise DuplicateIdempotencyKey(args["key"]) from None
        raise
    if ok:
        return seqs or {}
    if args["key"] is not None and conn.execute(_KEY_USED, args).fetchone():
        raise DuplicateIdempotencyKey(args["key"])  # SQLite's answer too: it checks the key first
    present = set(found or ())
    missing = [n for n in args["names"] if n not in present]
    raise RecipientsGone(missing)


_KEY_USED = "SELECT FROM messages WHERE workspace = %(ws)s AND sender = %(sender)s AND idempotency_key = %(key)s"
