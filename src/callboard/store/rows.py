"""Rows of the stores' schemas (SQLite's and PostgreSQL's share their columns) turned into the
mailbox's models, and times to and from Unix seconds."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, overload

import pydantic_core

from callboard.address import json_problem
from callboard.guards import Exchange
from callboard.model import (
    Agent,
    AuditEntry,
    Channel,
    DeliveryEvent,
    DeliveryState,
    Held,
    HeldMail,
    MailItem,
    Message,
    Part,
    RecipientStatus,
    Session,
    built,
    mail_item,
)
from callboard.store.records import NewToken
from callboard.tasks import TaskState
from callboard.tokens import TokenInfo

log = logging.getLogger("callboard.store")


def to_ts(moment: datetime) -> float:
    return moment.timestamp()


@overload
def from_ts(value: float) -> datetime: ...
@overload
def from_ts(value: None) -> None: ...
def from_ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


# The last column is not the message's: for a task's mail, the state that message moved its task
# to (its own newest event: every task mail writes at least one), for a mailbox item
# (``mail_item_from_row``). Not the task's state now: an old "working" update read after the task
# asked for input still says working.
MESSAGE_COLUMNS = (
    "m.id, m.workspace, m.sender, m.sender_session, m.recipients, m.channel, m.subject, "
    "m.parts, m.thread_id, m.reply_to, m.created_at, m.urgent, m.sender_address, m.sender_terminal, "
    "m.task_id, (SELECT e.state FROM task_events e WHERE e.task_id = m.task_id AND e.message_id = m.id "
    "ORDER BY e.generation DESC LIMIT 1)"
)
_TASK_STATE = 15  # MESSAGE_COLUMNS' task state
MAIL_QUERY = f"SELECT d.seq, d.state, {MESSAGE_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.message_id"
SESSION_COLUMNS = (
    "id, workspace, agent, machine, pid, proc_start, runtime, started_at, last_seen, ended_at, terminal, delivery_error"
)


def message_from_row(row: Sequence) -> Message:
    """The stored message, or — when the row cannot be rendered (written by hand, by an older
    version, or damaged) — a stand-in that says so: one bad row must not stop its recipient's
    whole mailbox from reading."""
    try:
        message = Message.model_validate(
            {
                "id": row[0],
                "workspace": row[1],
                "sender": row[2],
                "sender_session": row[3],
                "recipients": _json(row[4]),
                "channel": row[5],
                "subject": row[6],
                "parts": _json(row[7]),
                "thread_id": row[8],
                "reply_to": row[9],
                "created_at": from_ts(row[10]),
                "urgent": bool(row[11]),
                "sender_address": row[12],
                "sender_terminal": row[13],
                "task_id": row[14] if len(row) > 14 else None,  # a row read without it: no task
            }
        )
    except (ValueError, TypeError, OverflowError) as error:  # pydantic's ValidationError is a ValueError
        return unreadable_message(row, _first_line(error))
    problem = next(filter(None, (_part_problem(part) for part in message.parts)), None)
    return message if problem is None else unreadable_message(row, problem)


def _json(text: Any) -> Any:
    """Stored JSON text, read strictly: NaN and infinities are refused, as JSON has none."""
    return pydantic_core.from_json(text, allow_inf_nan=False)


def _part_problem(part: Part) -> str | None:
    """What keeps a stored part from being rendered (a number like 1e400 reads as infinity)."""
    if part.text is not None and part.metadata is None:
        return None  # the usual part: nothing in it can be out of JSON's reach
    for field, value in (("data", part.data), ("metadata", part.metadata)):
        problem = None if value is None else json_problem(value, field)
        if problem is not None:
            return f"its {problem}"
    return None


UNREADABLE_NOTE = "[callboard] message {id} from {sender} cannot be shown: its stored content is damaged ({reason})."


def unreadable_message(row: Sequence, reason: str) -> Message:
    """A stand-in for a stored message that cannot be rendered: its id, sender, thread and time
    where the row still has them, and one text part that says what happened (its metadata says
    so to a program: ``{"unreadable": reason}``)."""
    message_id, sender = _text(row[0], "unknown"), _text(row[2], "unknown")
    reason = reason[:200]
    log.warning("message %s of workspace %s cannot be rendered: %s", message_id, _text(row[1], "?"), reason)
    note = UNREADABLE_NOTE.format(id=message_id, sender=sender, reason=reason)
    return built(
        Message,
        id=message_id,
        workspace=_text(row[1], ""),
        sender=sender,
        sender_session=None,
        sender_address=None,
        sender_terminal=None,
        recipients=[],
        channel=_text(row[5], None),
        subject=None,
        parts=[built(Part, text=note, metadata={"unreadable": reason})],
        thread_id=_text(row[8], message_id),
        reply_to=None,
        created_at=_time(row[10]),
        urgent=False,
    )


def _text(value: Any, default: Any) -> Any:
    return value if isinstance(value, str) and json_problem(value) is None else default


def _time(value: Any) -> datetime:
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return datetime.fromtimestamp(0, UTC)


def _first_line(error: BaseException) -> str:
    """The gist of why a row did not make a Message: pydantic's first complaint, or the error's first line."""
    if isinstance(error, pydantic_core.ValidationError):
        first = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        return f"{where + ': ' if where else ''}{first.get('msg', '')}"[:200]
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def mail_item_from_row(row: Sequence, state: DeliveryState | None = None) -> MailItem:
    """A mailbox item from (seq, state, *MESSAGE_COLUMNS); ``state`` given overrides the row's."""
    message_row = row[2:]
    task_state = message_row[_TASK_STATE] if len(message_row) > _TASK_STATE else None
    return mail_item(
        row[0],
        state if state is not None else DeliveryState(row[1]),
        message_from_row(message_row),
        TaskState(task_state) if task_state else None,
    )


STATUS_COLUMNS = (
    "recipient, state, channel, queued_at, delivered_at, surfaced_at, read_at, acked_at, sessions, surfaced_via, "
    "held_until, held_reason, handed_at, handed_session"
)
# A delivery's stored history, oldest first (``delivery_events``).
EVENT_COLUMNS = "recipient, at, event, session, via, detail"


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
        held=Held(until=from_ts(row[10]), reason=row[11]) if row[10] is not None else None,
        handed_at=from_ts(row[12]),
        handed_to=row[13],  # the session's id: the service names it agent@machine#pid
    )


def with_history(statuses: list[RecipientStatus], events: Sequence[Sequence]) -> list[RecipientStatus]:
    """Each recipient's status with its stored events (rows of EVENT_COLUMNS, oldest first)."""
    if not events:
        return statuses
    by_recipient: dict[str, list[DeliveryEvent]] = {}
    for row in events:
        by_recipient.setdefault(row[0], []).append(event_from_row(row))
    return [s.model_copy(update={"history": by_recipient.get(s.agent or "", [])}) for s in statuses]


def event_from_row(row: Sequence) -> DeliveryEvent:
    return DeliveryEvent(at=from_ts(row[1]), event=row[2], session=row[3], via=row[4], detail=row[5])


HELD_COLUMNS = "d.message_id, m.sender, d.recipient, d.held_reason, d.held_until"


def held_mail_from_row(row: Sequence) -> HeldMail:
    return HeldMail(message_id=row[0], sender=row[1], recipient=row[2], reason=row[3], until=from_ts(row[4]))


def exchange_from_row(row: Sequence) -> Exchange:
    """(sender, created_at, held_until, held_reason) as the guard reads it."""
    return Exchange(sender=row[0], at=row[1], held_until=row[2], held_reason=row[3])


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
