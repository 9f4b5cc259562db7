"""The remotes part: outside A2A agents (``service/remotes.py``) and the outbox of mail to them
(``a2a/remote/pump.py``): a row is written in its message's transaction (``write_remote_send``,
called by ``tasks.write_task``), then claimed under a lease, renewed and settled. Its interface,
and its SQL for both dialects; a dialect claims the outbox its own way (``claim_remote_sends``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from callboard.remotes import RemoteAgent
from callboard.store.records import NewRemoteSend, RemoteSend
from callboard.store.remote_rows import (
    OUTBOX_COLUMNS,
    REMOTE_COLUMNS,
    agent_description,
    outbox_from_row,
    remote_from_row,
    remote_values,
)
from callboard.store.rows import to_ts
from callboard.store.sql import QUIET, Connection, Database, marks


class RemotesPart(Protocol):
    def add_remote_agent(self, remote: RemoteAgent, token: str | None) -> None:
        """Register (or replace) the outside agent, creating its workspace and agent row."""
        ...

    def get_remote_agent(self, workspace: str, name: str) -> tuple[RemoteAgent, str | None] | None:
        """The outside agent and its token, or None."""
        ...

    def remote_agent_by_url(self, workspace: str, url: str) -> RemoteAgent | None: ...
    def list_remote_agents(self, workspace: str, names: Sequence[str] | None = None) -> list[RemoteAgent]:
        """The workspace's outside agents (only those of ``names``, when given), by name."""
        ...

    def delete_remote_agent(self, workspace: str, name: str, unsent_error: str) -> bool:
        """Whether it was registered; its mail not yet sent is failed with it, ``unsent_error``
        (the service's words) recorded as why."""
        ...

    def claim_remote_sends(self, now: datetime, lease_seconds: float, limit: int) -> list[RemoteSend]:
        """Take up to ``limit`` due rows (pending or following, next attempt reached, no live
        lease), oldest first, leasing them until ``now + lease_seconds``."""
        ...

    def renew_remote_send(self, workspace: str, message_id: str, lease_until: datetime) -> None: ...
    def remote_send_started(self, workspace: str, message_id: str, remote_task_id: str, remote_context_id: str) -> None:
        """The remote took the message: its task's ids are kept, the row is following."""
        ...

    def remote_send_retry(self, workspace: str, message_id: str, error: str | None, retry_at: datetime) -> None: ...
    def remote_send_finished(self, workspace: str, message_id: str, state: str, error: str | None) -> None:
        """Done or failed: never claimed again."""
        ...

    def remote_sends(
        self, workspace: str, *, task_id: str | None = None, message_id: str | None = None
    ) -> list[RemoteSend]:
        """The outbox rows of a task (oldest first) or of one message."""
        ...


OPEN = "('pending', 'following')"  # the outbox's states that are still to be sent or followed
_REMOTE = f"SELECT {REMOTE_COLUMNS} FROM remote_agents r"


def write_remote_send(conn: Connection, workspace: str, task_id: str, send: NewRemoteSend) -> None:
    """The outbox row of a message, in the message's own transaction (``tasks.write_task``)."""
    at = to_ts(send.created_at)
    conn.execute(
        "INSERT INTO remote_outbox (workspace, message_id, task_id, remote, created_at, next_attempt_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (workspace, send.message_id, task_id, send.remote, at, at),
    )


class SQLRemotes:
    """Outside agents on a store's database; a dialect's subclass adds ``claim_remote_sends``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add_remote_agent(self, remote: RemoteAgent, token: str | None) -> None:
        added = to_ts(remote.added_at)

        def add(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO workspaces (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (remote.workspace, added),
            )
            conn.execute(
                "INSERT INTO agents (workspace, name, description, skills, created_at) VALUES (?, ?, ?, '[]', ?) "
                "ON CONFLICT DO NOTHING",
                (remote.workspace, remote.name, agent_description(remote), added),
            )
            conn.execute(
                "INSERT INTO remote_agents (workspace, name, url, card, token, added_at, card_fetched_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace, name) DO UPDATE SET url = excluded.url, "
                "card = excluded.card, token = excluded.token, card_fetched_at = excluded.card_fetched_at",
                remote_values(remote, token),
            )

        self._db.transact(add, QUIET)

    def get_remote_agent(self, workspace: str, name: str) -> tuple[RemoteAgent, str | None] | None:
        row = self._db.row(f"{_REMOTE} WHERE r.workspace = ? AND r.name = ?", (workspace, name))
        return remote_from_row(row) if row else None

    def remote_agent_by_url(self, workspace: str, url: str) -> RemoteAgent | None:
        row = self._db.row(f"{_REMOTE} WHERE r.workspace = ? AND r.url = ?", (workspace, url))
        return remote_from_row(row)[0] if row else None

    def list_remote_agents(self, workspace: str, names: Sequence[str] | None = None) -> list[RemoteAgent]:
        sql = f"{_REMOTE} WHERE r.workspace = ?"
        args: list[object] = [workspace]
        if names is not None:
            if not names:
                return []
            sql += f" AND r.name IN ({marks(names)})"
            args += names
        return [remote_from_row(r)[0] for r in self._db.rows(sql + " ORDER BY r.name", args)]

    def delete_remote_agent(self, workspace: str, name: str, unsent_error: str) -> bool:
        def delete(conn: Connection) -> bool:
            gone = conn.execute(
                "DELETE FROM remote_agents WHERE workspace = ? AND name = ? RETURNING 1", (workspace, name)
            ).fetchall()
            conn.execute(
                "UPDATE remote_outbox SET state = 'failed', lease_until = NULL, last_error = ? "
                f"WHERE workspace = ? AND remote = ? AND state IN {OPEN}",
                (unsent_error, workspace, name),
            )
            return bool(gone)

        return self._db.transact(delete, QUIET)

    def claim_remote_sends(self, now: datetime, lease_seconds: float, limit: int) -> list[RemoteSend]:
        raise NotImplementedError  # the dialect's: see the class

    def renew_remote_send(self, workspace: str, message_id: str, lease_until: datetime) -> None:
        self._update(workspace, message_id, "lease_until = ?", to_ts(lease_until), open_only=True)

    def remote_send_started(self, workspace: str, message_id: str, remote_task_id: str, remote_context_id: str) -> None:
        self._update(
            workspace,
            message_id,
            "state = 'following', remote_task_id = ?, remote_context_id = ?, last_error = NULL",
            remote_task_id,
            remote_context_id,
        )

    def remote_send_retry(self, workspace: str, message_id: str, error: str | None, retry_at: datetime) -> None:
        assignments = "next_attempt_at = ?, lease_until = NULL, last_error = ?"
        self._update(workspace, message_id, assignments, to_ts(retry_at), error, open_only=True)

    def remote_send_finished(self, workspace: str, message_id: str, state: str, error: str | None) -> None:
        self._update(workspace, message_id, "state = ?, lease_until = NULL, last_error = ?", state, error)

    def remote_sends(
        self, workspace: str, *, task_id: str | None = None, message_id: str | None = None
    ) -> list[RemoteSend]:
        column, value = ("o.task_id", task_id) if task_id is not None else ("o.message_id", message_id)
        rows = self._db.rows(
            f"SELECT {OUTBOX_COLUMNS} FROM remote_outbox o WHERE o.workspace = ? AND {column} = ? "
            "ORDER BY o.created_at, o.message_id",
            (workspace, value),
        )
        return [outbox_from_row(r) for r in rows]

    def _update(
        self, workspace: str, message_id: str, assignments: str, *values: object, open_only: bool = False
    ) -> None:
        """``open_only``: leave a settled row as it is (a pump cut short after settling it lets go)."""
        where = f" AND state IN {OPEN}" if open_only else ""
        self._db.change(
            f"UPDATE remote_outbox SET {assignments} WHERE workspace = ? AND message_id = ?{where} RETURNING 1",
            (*values, workspace, message_id),
            QUIET,
        )
