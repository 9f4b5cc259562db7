"""The directory part: workspaces, agents and channels — who and where mail can go. Its interface,
and its SQL for both dialects."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Protocol

from callboard.model import Agent, AuditEntry, Channel, ChannelMember, Workspace, built
from callboard.store.parts.audit import append
from callboard.store.rows import CHANNEL_QUERY, agent_from_row, channel_from_row, from_ts, to_ts
from callboard.store.sql import Connection, Database, Notice


class DirectoryPart(Protocol):
    def ensure_workspace(self, name: str, now: datetime) -> bool: ...
    def list_workspaces(self) -> list[Workspace]: ...
    def ensure_agent(self, workspace: str, name: str, now: datetime) -> bool: ...
    def create_agent(
        self, workspace: str, name: str, description: str | None, skills: list[str], now: datetime
    ) -> bool: ...
    def update_agent(self, workspace: str, name: str, description: str | None, skills: list[str] | None) -> bool: ...
    def get_agent(self, workspace: str, name: str) -> Agent | None: ...
    def list_agents(self, workspace: str) -> list[Agent]: ...
    def delete_agent(
        self, workspace: str, name: str, record: AuditEntry | None = None, *, keep_unread: bool = False
    ) -> int | None:
        """Remove the agent, its mailbox, memberships and sessions (sent messages stay) and append
        ``record``, its detail given ``unread``, in one transaction. The number of unread
        messages its mailbox held, or None when there is no such agent. With ``keep_unread``,
        an agent with unread mail is left as it is (the count says why)."""
        ...

    def create_channel(
        self,
        workspace: str,
        name: str,
        creator: str,
        description: str | None,
        now: datetime,
        invite_only: bool = False,
        record: AuditEntry | None = None,
    ) -> bool:
        """Create the channel with its creator as first member, and append ``record``, in one
        transaction; False if it already exists (then nothing is written)."""
        ...

    def get_channel(self, workspace: str, name: str, viewer: str | None = None) -> Channel | None: ...
    def list_channels(self, workspace: str, viewer: str | None = None) -> list[Channel]: ...
    def join_channel(
        self, workspace: str, channel: str, agent: str, now: datetime, record: AuditEntry | None = None
    ) -> bool:
        """Add the member, and append ``record`` when it was not one, in one transaction; whether
        it was added."""
        ...

    def leave_channel(self, workspace: str, channel: str, agent: str, record: AuditEntry | None = None) -> bool:
        """Remove the member, and append ``record`` when it was one, in one transaction; whether
        it was removed."""
        ...

    def channel_members(self, workspace: str, channel: str) -> list[ChannelMember]: ...
    def channel_member_names(self, workspace: str, channel: str) -> list[str]:
        """The members' names, sorted: what a post needs (a channel may have thousands)."""
        ...


_AGENT_COLUMNS = "workspace, name, description, skills, created_at"
_UNREAD = "SELECT count(*) FROM deliveries WHERE workspace = ? AND recipient = ? AND read_at IS NULL"
# An agent's rows, by the column that names it (messages it sent stay).
_AGENT_ROWS = (
    ("agents", "name"),
    ("deliveries", "recipient"),
    ("delivery_events", "recipient"),
    ("channel_members", "agent"),
    ("sessions", "agent"),
)
_ADD_MEMBER = (
    "INSERT INTO channel_members (workspace, channel, agent, joined_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT DO NOTHING RETURNING 1"
)


class SQLDirectory:
    """The directory on a store's database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _changes_one_row(self, statement: str, args: tuple, record: AuditEntry | None = None) -> bool:
        """Run one statement (it returns a row when it changed one) and append ``record`` when
        it did: one transaction. Whether it changed a row."""
        if record is None:
            return bool(self._db.change(statement, args))

        def change(conn: Connection) -> bool:
            changed = bool(conn.execute(statement, args).fetchall())
            if changed:
                append(conn, record)
            return changed

        return self._db.transact(change)

    # --- workspaces and agents --------------------------------------------------------------------

    def ensure_workspace(self, name: str, now: datetime) -> bool:
        if self._db.row("SELECT 1 FROM workspaces WHERE name = ?", (name,)):
            return False  # most calls find it: no write for those
        return self._changes_one_row(
            "INSERT INTO workspaces (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING 1",
            (name, to_ts(now)),
        )

    def list_workspaces(self) -> list[Workspace]:
        rows = self._db.rows("SELECT name, created_at FROM workspaces ORDER BY name")
        return [Workspace(name=r[0], created_at=from_ts(r[1])) for r in rows]

    def ensure_agent(self, workspace: str, name: str, now: datetime) -> bool:
        if self._db.row("SELECT 1 FROM agents WHERE workspace = ? AND name = ?", (workspace, name)):
            return False
        return self.create_agent(workspace, name, None, [], now)

    def create_agent(
        self, workspace: str, name: str, description: str | None, skills: list[str], now: datetime
    ) -> bool:
        return self._changes_one_row(
            "INSERT INTO agents (workspace, name, description, skills, created_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING RETURNING 1",
            (workspace, name, description, json.dumps(skills), to_ts(now)),
        )

    def update_agent(self, workspace: str, name: str, description: str | None, skills: list[str] | None) -> bool:
        return self._changes_one_row(
            "UPDATE agents SET description = coalesce(?, description), skills = coalesce(?, skills) "
            "WHERE workspace = ? AND name = ? RETURNING 1",
            (description, None if skills is None else json.dumps(skills), workspace, name),
        )

    def get_agent(self, workspace: str, name: str) -> Agent | None:
        row = self._db.row(f"SELECT {_AGENT_COLUMNS} FROM agents WHERE workspace = ? AND name = ?", (workspace, name))
        return agent_from_row(row) if row else None

    def list_agents(self, workspace: str) -> list[Agent]:
        rows = self._db.rows(f"SELECT {_AGENT_COLUMNS} FROM agents WHERE workspace = ? ORDER BY name", (workspace,))
        return [agent_from_row(r) for r in rows]

    def delete_agent(
        self, workspace: str, name: str, record: AuditEntry | None = None, *, keep_unread: bool = False
    ) -> int | None:
        db = self._db
        db.deliveries_written()  # its unread count includes the deliveries of a large send not written out yet

        def delete(conn: Connection) -> int | None:
            # The agent row first: once it is locked (until commit), each later statement sees
            # every delivery a racing send committed before it (a send updates that row).
            if not conn.execute(
                f"SELECT 1 FROM agents WHERE workspace = ? AND name = ?{db.lock_rows}", (workspace, name)
            ).fetchone():
                return None
            unread = conn.execute(_UNREAD, (workspace, name)).fetchone()[0]
            if unread and keep_unread:
                return unread
            for table, column in _AGENT_ROWS:
                conn.execute(f"DELETE FROM {table} WHERE workspace = ? AND {column} = ?", (workspace, name))
            append(conn, record, unread=unread)
            return unread

        return db.transact(delete, Notice(workspace, [name]))

    # --- channels -------------------------------------------------------------------------------------

    def create_channel(
        self,
        workspace: str,
        name: str,
        creator: str,
        description: str | None,
        now: datetime,
        invite_only: bool = False,
        record: AuditEntry | None = None,
    ) -> bool:
        def create(conn: Connection) -> bool:
            if not conn.execute(
                "INSERT INTO channels (workspace, name, description, created_by, created_at, invite_only) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1",
                (workspace, name, description, creator, to_ts(now), invite_only),
            ).fetchall():
                return False
            conn.execute(_ADD_MEMBER, (workspace, name, creator, to_ts(now))).fetchall()
            append(conn, record)
            return True

        return self._db.transact(create)

    def get_channel(self, workspace: str, name: str, viewer: str | None = None) -> Channel | None:
        row = self._db.row(CHANNEL_QUERY + " AND c.name = ?", (viewer, workspace, name))
        return channel_from_row(row) if row else None

    def list_channels(self, workspace: str, viewer: str | None = None) -> list[Channel]:
        rows = self._db.rows(CHANNEL_QUERY + " ORDER BY c.name", (viewer, workspace))
        return [channel_from_row(r) for r in rows]

    def join_channel(
        self, workspace: str, channel: str, agent: str, now: datetime, record: AuditEntry | None = None
    ) -> bool:
        return self._changes_one_row(_ADD_MEMBER, (workspace, channel, agent, to_ts(now)), record)

    def leave_channel(self, workspace: str, channel: str, agent: str, record: AuditEntry | None = None) -> bool:
        return self._changes_one_row(
            "DELETE FROM channel_members WHERE workspace = ? AND channel = ? AND agent = ? RETURNING 1",
            (workspace, channel, agent),
            record,
        )

    def channel_members(self, workspace: str, channel: str) -> list[ChannelMember]:
        rows = self._db.rows(
            "SELECT agent, joined_at FROM channel_members WHERE workspace = ? AND channel = ? ORDER BY agent",
            (workspace, channel),
        )
        return [built(ChannelMember, agent=r[0], joined_at=from_ts(r[1])) for r in rows]

    def channel_member_names(self, workspace: str, channel: str) -> list[str]:
        rows = self._db.rows(
            "SELECT agent FROM channel_members WHERE workspace = ? AND channel = ? ORDER BY agent", (workspace, channel)
        )
        return [r[0] for r in rows]
