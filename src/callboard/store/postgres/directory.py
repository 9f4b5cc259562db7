"""Workspaces, agents and channels in the PostgreSQL schema: who and where mail can go.
Functions on the database, called by ``PostgresStore``."""

from __future__ import annotations

import json
from datetime import datetime

import psycopg

from callboard.model import Agent, AuditEntry, Channel, ChannelMember, Workspace, built
from callboard.store.postgres import audit
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.postgres.notices import NOTIFY, notifying, payload
from callboard.store.rows import agent_from_row, audit_values, channel_from_row, from_ts, to_ts

_AGENT_COLUMNS = "workspace, name, description, skills, created_at"
_UNREAD = "SELECT count(*) FROM deliveries WHERE workspace = %(ws)s AND recipient = %(name)s AND read_at IS NULL"
# An agent's rows, by the column that names it (messages it sent stay).
_AGENT_ROWS = (
    ("agents", "name"),
    ("deliveries", "recipient"),
    ("delivery_events", "recipient"),
    ("channel_members", "agent"),
    ("sessions", "agent"),
)

CREATE_CHANNEL = f"""
WITH c AS (
    INSERT INTO channels (workspace, name, description, created_by, created_at, invite_only)
    VALUES (%(ws)s, %(name)s, %(description)s, %(creator)s, %(at)s, %(invite_only)s) ON CONFLICT DO NOTHING
    RETURNING workspace, name
), m AS (
    INSERT INTO channel_members (workspace, channel, agent, joined_at)
    SELECT workspace, name, %(creator)s, %(at)s FROM c ON CONFLICT DO NOTHING
)
SELECT {NOTIFY} FROM c
"""

CHANNEL_QUERY = (
    "SELECT c.workspace, c.name, c.description, c.created_by, c.created_at, "
    "(SELECT count(*) FROM channel_members m WHERE m.workspace = c.workspace AND m.channel = c.name), "
    "EXISTS (SELECT FROM channel_members m WHERE m.workspace = c.workspace AND m.channel = c.name "
    "AND m.agent = %(viewer)s), c.invite_only "
    "FROM channels c WHERE c.workspace = %(ws)s"
)


# --- workspaces and agents ----------------------------------------------------------------------


def ensure_workspace(db: PostgresDatabase, name: str, now: datetime) -> bool:
    return db.changed_one(
        "INSERT INTO workspaces (name, created_at) VALUES (%(name)s, %(at)s) ON CONFLICT DO NOTHING",
        {"name": name, "at": to_ts(now)},
    )


def list_workspaces(db: PostgresDatabase) -> list[Workspace]:
    rows = db.all("SELECT name, created_at FROM workspaces ORDER BY name")
    return [Workspace(name=r[0], created_at=from_ts(r[1])) for r in rows]


def ensure_agent(db: PostgresDatabase, workspace: str, name: str, now: datetime) -> bool:
    return create_agent(db, workspace, name, None, [], now)


def create_agent(
    db: PostgresDatabase, workspace: str, name: str, description: str | None, skills: list[str], now: datetime
) -> bool:
    return db.changed_one(
        "INSERT INTO agents (workspace, name, description, skills, created_at) "
        "VALUES (%(ws)s, %(name)s, %(description)s, %(skills)s, %(at)s) ON CONFLICT DO NOTHING",
        {"ws": workspace, "name": name, "description": description, "skills": json.dumps(skills), "at": to_ts(now)},
    )


def update_agent(
    db: PostgresDatabase, workspace: str, name: str, description: str | None, skills: list[str] | None
) -> bool:
    return db.changed_one(
        "UPDATE agents SET description = coalesce(%(description)s, description), "
        "skills = coalesce(%(skills)s, skills) WHERE workspace = %(ws)s AND name = %(name)s",
        {
            "ws": workspace,
            "name": name,
            "description": description,
            "skills": None if skills is None else json.dumps(skills),
        },
    )


def get_agent(db: PostgresDatabase, workspace: str, name: str) -> Agent | None:
    row = db.one(f"SELECT {_AGENT_COLUMNS} FROM agents WHERE workspace = %s AND name = %s", (workspace, name))
    return agent_from_row(row) if row else None


def list_agents(db: PostgresDatabase, workspace: str) -> list[Agent]:
    rows = db.all(f"SELECT {_AGENT_COLUMNS} FROM agents WHERE workspace = %s ORDER BY name", (workspace,))
    return [agent_from_row(r) for r in rows]


def delete_agent(
    db: PostgresDatabase, workspace: str, name: str, record: AuditEntry | None, keep_unread: bool
) -> int | None:
    args = {"ws": workspace, "name": name}
    notice = payload(db.replica, workspace, [name])

    def delete(conn: psycopg.Connection) -> int | None:
        with conn.transaction():
            # The agent row first: once it is locked (until commit), each later statement sees
            # every delivery a racing send committed before it (a send updates that row).
            if not conn.execute(
                "SELECT FROM agents WHERE workspace = %(ws)s AND name = %(name)s FOR UPDATE", args
            ).rowcount:
                return None
            (unread,) = conn.execute(_UNREAD, args).fetchone()  # type: ignore[misc]
            if unread and keep_unread:
                return unread
            for table, column in _AGENT_ROWS:
                conn.execute(f"DELETE FROM {table} WHERE workspace = %(ws)s AND {column} = %(name)s", args)  # type: ignore[call-overload]
            if record is not None:
                conn.execute(audit.APPEND_AUDIT, audit_values(record, unread=unread))
            db.notify(conn, notice)
            return unread

    return db.run(delete)


# --- channels ---------------------------------------------------------------------------------------


def create_channel(
    db: PostgresDatabase,
    workspace: str,
    name: str,
    creator: str,
    description: str | None,
    now: datetime,
    invite_only: bool,
    record: AuditEntry | None,
) -> bool:
    args = {
        "ws": workspace,
        "name": name,
        "description": description,
        "creator": creator,
        "at": to_ts(now),
        "invite_only": invite_only,
    }
    return audit.recorded(db, CREATE_CHANNEL, db.with_notify(args), record)


def get_channel(db: PostgresDatabase, workspace: str, name: str, viewer: str | None) -> Channel | None:
    row = db.one(CHANNEL_QUERY + " AND c.name = %(name)s", {"viewer": viewer, "ws": workspace, "name": name})
    return channel_from_row(row) if row else None


def list_channels(db: PostgresDatabase, workspace: str, viewer: str | None) -> list[Channel]:
    rows = db.all(CHANNEL_QUERY + " ORDER BY c.name", {"viewer": viewer, "ws": workspace})
    return [channel_from_row(r) for r in rows]


def join_channel(
    db: PostgresDatabase, workspace: str, channel: str, agent: str, now: datetime, record: AuditEntry | None
) -> bool:
    return audit.recorded(
        db,
        notifying(
            "INSERT INTO channel_members (workspace, channel, agent, joined_at) "
            "VALUES (%(ws)s, %(channel_name)s, %(agent)s, %(at)s) ON CONFLICT DO NOTHING RETURNING 1"
        ),
        db.with_notify({"ws": workspace, "channel_name": channel, "agent": agent, "at": to_ts(now)}),
        record,
    )


def leave_channel(db: PostgresDatabase, workspace: str, channel: str, agent: str, record: AuditEntry | None) -> bool:
    return audit.recorded(
        db,
        notifying(
            "DELETE FROM channel_members "
            "WHERE workspace = %(ws)s AND channel = %(channel_name)s AND agent = %(agent)s RETURNING 1"
        ),
        db.with_notify({"ws": workspace, "channel_name": channel, "agent": agent}),
        record,
    )


def channel_members(db: PostgresDatabase, workspace: str, channel: str) -> list[ChannelMember]:
    rows = db.all(
        "SELECT agent, joined_at FROM channel_members WHERE workspace = %s AND channel = %s ORDER BY agent",
        (workspace, channel),
    )
    return [built(ChannelMember, agent=r[0], joined_at=from_ts(r[1])) for r in rows]


def channel_member_names(db: PostgresDatabase, workspace: str, channel: str) -> list[str]:
    rows = db.all(
        "SELECT agent FROM channel_members WHERE workspace = %s AND channel = %s ORDER BY agent", (workspace, channel)
    )
    return [r[0] for r in rows]
