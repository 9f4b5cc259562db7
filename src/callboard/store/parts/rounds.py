"""The rounds part: each round (what it was opened with, where it stands), its participants (to
list a participant's rounds), and its events in order. The rules are ``rounds.py``'s, applied by
the service inside ``act``'s transaction; a unique key per epoch, kind and agent keeps a replayed
proposal or vote from counting twice. Its interface, and its SQL for both dialects."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from callboard.rounds import Event, RoundInfo
from callboard.store.rows import from_ts, to_ts
from callboard.store.sql import Connection, Database, Notice, marks

ROUND_COLUMNS = (
    "id, workspace, coordinator, goal, participants, quorum, max_rounds, kind, phase_seconds, channel, "
    "epoch, phase, deadline, decision, created_at, updated_at"
)
# What a round's act computes from the round and its events: the events it adds, and where the
# round then stands (both written in the same transaction).
Decide = Callable[[RoundInfo, list[Event]], tuple[list[Event], RoundInfo]]


class RoundsPart(Protocol):
    def open_round(self, info: RoundInfo, first: Event) -> None:
        """Store a new round with its first event."""
        ...

    def get_round(self, workspace: str, round_id: str) -> RoundInfo | None: ...

    def round_events(self, workspace: str, round_id: str) -> list[Event]:
        """Its events, oldest first."""
        ...

    def act(self, workspace: str, round_id: str, decide: Decide) -> tuple[RoundInfo, list[Event]] | None:
        """In one transaction, taking turns with every other act on the round: read it and its
        events, ``decide``, append what it adds and keep where it stands. The round as it then
        stands and the events added; None when there is no such round."""
        ...

    def rounds_of(self, workspace: str, agent: str, open_only: bool) -> list[RoundInfo]:
        """The rounds ``agent`` takes part in or opened, newest first."""
        ...

    def due_rounds(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        """Open rounds whose phase deadline has passed: (workspace, id), earliest first."""
        ...


class SQLRounds:
    def __init__(self, db: Database) -> None:
        self._db = db

    def open_round(self, info: RoundInfo, first: Event) -> None:
        def write(conn: Connection) -> None:
            conn.execute(f"INSERT INTO rounds ({ROUND_COLUMNS}) VALUES ({marks(range(16))})", _values(info))
            for agent in dict.fromkeys([info.coordinator, *info.participants]):
                conn.execute(
                    "INSERT INTO round_members (workspace, round_id, agent) VALUES (?, ?, ?)",
                    (info.workspace, info.id, agent),
                )
            _append(conn, info, [first], 0)

        self._db.transact(write, _notice(info.workspace, info.id))

    def get_round(self, workspace: str, round_id: str) -> RoundInfo | None:
        row = self._db.row(f"SELECT {ROUND_COLUMNS} FROM rounds WHERE workspace = ? AND id = ?", (workspace, round_id))
        return None if row is None else _from_row(row)

    def round_events(self, workspace: str, round_id: str) -> list[Event]:
        rows = self._db.rows(
            "SELECT event FROM round_events WHERE workspace = ? AND round_id = ? ORDER BY seq", (workspace, round_id)
        )
        return [Event.model_validate_json(row[0]) for row in rows]

    def act(self, workspace: str, round_id: str, decide: Decide) -> tuple[RoundInfo, list[Event]] | None:
        def write(conn: Connection) -> tuple[RoundInfo, list[Event]] | None:
            row = conn.execute(
                f"SELECT {ROUND_COLUMNS} FROM rounds WHERE workspace = ? AND id = ? {self._db.lock_rows}",
                (workspace, round_id),
            ).fetchone()
            if row is None:
                return None
            info = _from_row(row)
            events = [
                Event.model_validate_json(r[0])
                for r in conn.execute(
                    "SELECT event FROM round_events WHERE workspace = ? AND round_id = ? ORDER BY seq",
                    (workspace, round_id),
                )
            ]
            added, after = decide(info, events)
            if added:
                _append(conn, info, added, len(events))
                conn.execute(
                    "UPDATE rounds SET epoch = ?, phase = ?, deadline = ?, decision = ?, updated_at = ? "
                    "WHERE workspace = ? AND id = ?",
                    (*_status(after), to_ts(after.updated_at), workspace, round_id),
                )
            return after, added

        return self._db.transact(write, _notice(workspace, round_id), lock=f"callboard round {workspace} {round_id}")

    def rounds_of(self, workspace: str, agent: str, open_only: bool) -> list[RoundInfo]:
        columns = ", ".join(f"r.{c}" for c in ROUND_COLUMNS.split(", "))
        still = " AND r.phase IN ('proposal', 'vote')" if open_only else ""
        rows = self._db.rows(
            f"SELECT {columns} FROM round_members m JOIN rounds r ON r.workspace = m.workspace AND r.id = m.round_id "
            f"WHERE m.workspace = ? AND m.agent = ?{still} ORDER BY r.created_at DESC, r.id DESC",
            (workspace, agent),
        )
        return [_from_row(row) for row in rows]

    def due_rounds(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        rows = self._db.rows(
            "SELECT workspace, id FROM rounds WHERE phase IN ('proposal', 'vote') AND deadline <= ? "
            "ORDER BY deadline LIMIT ?",
            (to_ts(now), limit),
        )
        return [(row[0], row[1]) for row in rows]


def round_key(round_id: str) -> str:
    """A round's own key beside the mailboxes: (workspace, "round:" + id) wakes whoever follows it."""
    return "round:" + round_id


def _notice(workspace: str, round_id: str) -> Notice:
    return Notice(workspace=workspace, agents=[round_key(round_id)])


def _append(conn: Connection, info: RoundInfo, events: Sequence[Event], first_seq: int) -> None:
    for seq, event in enumerate(events, start=first_seq):
        # Only accepted proposals and votes are unique per (epoch, kind, agent): a refusal is kept as often as it comes.
        unique_agent = event.agent if event.kind in ("proposal", "vote") else None
        conn.execute(
            "INSERT INTO round_events (workspace, round_id, seq, epoch, kind, agent, at, event) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                info.workspace,
                info.id,
                seq,
                event.epoch,
                event.kind,
                unique_agent,
                to_ts(event.at),
                event.model_dump_json(),
            ),
        )


def _status(info: RoundInfo) -> tuple[Any, ...]:
    deadline = to_ts(info.deadline) if info.deadline is not None else None
    decision = info.decision.model_dump_json() if info.decision is not None else None
    return info.epoch, info.phase, deadline, decision


def _values(info: RoundInfo) -> tuple[Any, ...]:
    return (
        info.id,
        info.workspace,
        info.coordinator,
        info.goal,
        json.dumps(info.participants),
        info.quorum,
        info.max_rounds,
        info.kind,
        info.phase_seconds,
        info.channel,
        *_status(info),
        to_ts(info.created_at),
        to_ts(info.updated_at),
    )


def _from_row(row: Sequence[Any]) -> RoundInfo:
    return RoundInfo(
        id=row[0],
        workspace=row[1],
        coordinator=row[2],
        goal=row[3],
        participants=json.loads(row[4]),
        quorum=row[5],
        max_rounds=row[6],
        kind=row[7],
        phase_seconds=row[8],
        channel=row[9],
        epoch=row[10],
        phase=row[11],
        deadline=from_ts(row[12]) if row[12] is not None else None,
        decision=Event.model_validate_json(row[13]) if row[13] is not None else None,
        created_at=from_ts(row[14]),
        updated_at=from_ts(row[15]),
    )
