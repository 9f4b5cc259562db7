"""PostgreSQL schema, applied in numbered steps recorded in ``callboard_schema``.

The tables and columns are SQLite's (``schema.py``) in intent: times are Unix seconds in
double precision, lists and parts are JSON text. The steps are PostgreSQL's own list — SQLite's
history (fan-out tables added then dropped, columns added one release at a time) is not
replayed here — and, as there, a new step is appended, never edited, so that every existing
database can be brought forward.

Every object lives in the connection's current schema (the first of its ``search_path``), so
that several deployments, or tests, can share one database.
"""

from __future__ import annotations

import psycopg

from callboard.errors import StoreUnavailable

MIGRATIONS: list[str] = [
    # 1: the mailbox core
    """
    CREATE TABLE workspaces (
        name        TEXT PRIMARY KEY,
        created_at  DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE agents (
        workspace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        description TEXT,
        skills      TEXT NOT NULL DEFAULT '[]',
        created_at  DOUBLE PRECISION NOT NULL,
        last_seq    BIGINT NOT NULL DEFAULT 0,  -- the mailbox's newest delivery sequence number
        PRIMARY KEY (workspace, name)
    );
    CREATE TABLE channels (
        workspace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        description TEXT,
        created_by  TEXT NOT NULL,
        created_at  DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (workspace, name)
    );
    CREATE TABLE channel_members (
        workspace   TEXT NOT NULL,
        channel     TEXT NOT NULL,
        agent       TEXT NOT NULL,
        joined_at   DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (workspace, channel, agent)
    );
    CREATE INDEX channel_members_by_agent ON channel_members (workspace, agent);
    CREATE TABLE machines (
        workspace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        last_seen   DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (workspace, name)
    );
    CREATE TABLE sessions (
        id              TEXT PRIMARY KEY,
        workspace       TEXT NOT NULL,
        agent           TEXT NOT NULL,
        machine         TEXT NOT NULL,
        pid             BIGINT NOT NULL,
        proc_start      BIGINT,
        runtime         TEXT NOT NULL,
        started_at      DOUBLE PRECISION NOT NULL,
        last_seen       DOUBLE PRECISION NOT NULL,
        ended_at        DOUBLE PRECISION,
        terminal        TEXT,
        delivery_error  TEXT               -- what its delivery path last reported broken
    );
    CREATE INDEX sessions_by_agent ON sessions (workspace, agent);
    CREATE INDEX sessions_by_process ON sessions (workspace, machine, pid);
    CREATE TABLE messages (
        id              TEXT PRIMARY KEY,
        workspace       TEXT NOT NULL,
        sender          TEXT NOT NULL,
        sender_session  TEXT,
        recipients      TEXT NOT NULL,
        channel         TEXT,
        subject         TEXT,
        parts           TEXT NOT NULL,
        thread_id       TEXT NOT NULL,
        reply_to        TEXT,
        created_at      DOUBLE PRECISION NOT NULL,
        idempotency_key TEXT,
        request_hash    TEXT,
        result          TEXT NOT NULL,     -- the send's answer, returned again on an idempotent resend
        urgent          BOOLEAN NOT NULL DEFAULT false,
        sender_address  TEXT,              -- the sending session's agent@machine#pid
        sender_terminal TEXT
    );
    CREATE UNIQUE INDEX messages_by_idempotency_key
        ON messages (workspace, sender, idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE TABLE deliveries (
        workspace       TEXT NOT NULL,
        recipient       TEXT NOT NULL,
        seq             BIGINT NOT NULL,
        message_id      TEXT NOT NULL,
        channel         TEXT,
        state           TEXT NOT NULL,
        sessions        TEXT NOT NULL DEFAULT '[]',
        target_session  TEXT,
        queued_at       DOUBLE PRECISION NOT NULL,
        delivered_at    DOUBLE PRECISION,
        surfaced_at     DOUBLE PRECISION,
        read_at         DOUBLE PRECISION,
        acked_at        DOUBLE PRECISION,
        surfaced_via    TEXT,              -- how it reached the agent's context: socket, hook, waiter
        PRIMARY KEY (workspace, recipient, seq)
    );
    CREATE UNIQUE INDEX deliveries_by_message ON deliveries (message_id, recipient);
    CREATE INDEX deliveries_unread ON deliveries (workspace, recipient, seq) WHERE read_at IS NULL;
    """,
    # 2: hub credentials. Only a hash of each secret is kept; a request's token is looked up by
    # it (the UNIQUE constraint is that index). Revoked tokens stay, so lists can show them.
    # ``ordinal`` orders tokens created in the same instant as they were created (SQLite's rowid).
    """
    CREATE TABLE tokens (
        id          TEXT PRIMARY KEY,
        kind        TEXT NOT NULL CHECK (kind IN ('admin', 'user', 'agent')),
        workspace   TEXT CHECK ((workspace IS NULL) = (kind = 'admin')),  -- NULL for admin tokens only
        agent       TEXT CHECK ((agent IS NULL) = (kind != 'agent')),     -- the one agent an agent token acts as
        label       TEXT,
        secret_hash TEXT NOT NULL UNIQUE,
        created_at  DOUBLE PRECISION NOT NULL,
        revoked_at  DOUBLE PRECISION,
        ordinal     BIGINT GENERATED ALWAYS AS IDENTITY
    );
    CREATE INDEX tokens_by_workspace ON tokens (workspace, created_at);
    """,
    # 3: invite-only channels; the audit trail of actions with large effects (append-only: the
    # store only adds rows and lists them), newest first by workspace; messages by thread, to
    # tell whether a sender is a party to the thread it names.
    """
    ALTER TABLE channels ADD COLUMN invite_only BOOLEAN NOT NULL DEFAULT false;
    CREATE TABLE audit (
        id          TEXT PRIMARY KEY,
        workspace   TEXT NOT NULL,
        at          DOUBLE PRECISION NOT NULL,
        actor       TEXT NOT NULL,      -- the agent that acted
        token_kind  TEXT,               -- the credential over the hub (admin, user, agent), NULL for the embedded store
        token_id    TEXT,
        action      TEXT NOT NULL,      -- agent.delete, channel.create, channel.invite, channel.join, channel.remove
        target      TEXT NOT NULL,      -- an agent's name or a #channel
        detail      TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX audit_by_workspace ON audit (workspace, at, id);
    CREATE INDEX messages_by_thread ON messages (workspace, thread_id);
    """,
    # 4: delivery states that say what is known (SQLite's step 8): a delivery handed to one
    # live session waits there for its turn, and goes back to the mailbox if that session
    # ends first; each delivery's history of what happened to it.
    """
    ALTER TABLE deliveries ADD COLUMN handed_at DOUBLE PRECISION;
    ALTER TABLE deliveries ADD COLUMN handed_session TEXT;
    CREATE INDEX deliveries_handed ON deliveries (workspace, recipient) WHERE state = 'handed';
    CREATE TABLE delivery_events (
        workspace   TEXT NOT NULL,
        message_id  TEXT NOT NULL,
        recipient   TEXT NOT NULL,
        at          DOUBLE PRECISION NOT NULL,
        event       TEXT NOT NULL,      -- handed, surfaced, returned, held, expired, refused
        session     TEXT,               -- the session's id
        via         TEXT,               -- socket, hook, waiter
        detail      TEXT                -- the evidence or the reason
    );
    CREATE INDEX delivery_events_by_message ON delivery_events (workspace, message_id, recipient, at);
    """,
    # 5: the loop and flood guards (guard.py): until when, and why, a guard holds a delivery
    # back from being surfaced; a sender's messages by time, for the pair's recent traffic.
    """
    ALTER TABLE deliveries ADD COLUMN held_until DOUBLE PRECISION;
    ALTER TABLE deliveries ADD COLUMN held_reason TEXT;
    CREATE INDEX messages_by_sender ON messages (workspace, sender, created_at);
    """,
    # 6: tasks (SQLite's step 10; A2A 1.0, tasks.py): a task's mail names it, and an A2A client's message id is
    # kept (its retries are the same send); the task's row, its artifacts in order, every event
    # numbered by the task's generation (what a subscriber missed), where its updates are posted,
    # and the outbox of those posts (claimed with a lease, so two hubs never post one twice).
    """
    ALTER TABLE messages ADD COLUMN task_id TEXT;
    ALTER TABLE messages ADD COLUMN a2a_message_id TEXT;
    CREATE INDEX messages_by_task ON messages (task_id, created_at) WHERE task_id IS NOT NULL;
    CREATE TABLE tasks (
        id                  TEXT PRIMARY KEY,
        workspace           TEXT NOT NULL,
        context_id          TEXT NOT NULL,      -- the mail thread of the task's messages
        requester           TEXT NOT NULL,
        worker              TEXT NOT NULL,
        state               TEXT NOT NULL,
        status_parts        TEXT NOT NULL DEFAULT '[]',
        status_message_id   TEXT,
        status_at           DOUBLE PRECISION NOT NULL,
        generation          BIGINT NOT NULL,
        metadata            TEXT,
        created_at          DOUBLE PRECISION NOT NULL,
        updated_at          DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX tasks_by_requester ON tasks (workspace, requester, updated_at DESC, id DESC);
    CREATE INDEX tasks_by_worker ON tasks (workspace, worker, updated_at DESC, id DESC);
    CREATE INDEX tasks_by_context ON tasks (workspace, context_id, updated_at DESC, id DESC);
    CREATE TABLE task_artifacts (
        task_id             TEXT NOT NULL,
        artifact_id         TEXT NOT NULL,
        name                TEXT,
        description         TEXT,
        parts               TEXT NOT NULL,
        metadata            TEXT,
        position            BIGINT NOT NULL,   -- the order they were first handed over
        PRIMARY KEY (task_id, artifact_id)
    );
    CREATE TABLE task_events (
        task_id             TEXT NOT NULL,
        generation          BIGINT NOT NULL,
        kind                TEXT NOT NULL,      -- status, artifact
        state               TEXT NOT NULL,
        message_id          TEXT,
        parts               TEXT NOT NULL DEFAULT '[]',
        artifact            TEXT,
        append              BOOLEAN NOT NULL DEFAULT false,
        last_chunk          BOOLEAN NOT NULL DEFAULT true,
        at                  DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (task_id, generation)
    );
    CREATE TABLE push_configs (
        workspace           TEXT NOT NULL,
        task_id             TEXT NOT NULL,
        id                  TEXT NOT NULL,
        url                 TEXT NOT NULL,
        token               TEXT,
        auth_scheme         TEXT,
        auth_credentials    TEXT,
        created_at          DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (task_id, id)
    );
    CREATE TABLE push_deliveries (
        id                  TEXT PRIMARY KEY,
        workspace           TEXT NOT NULL,
        task_id             TEXT NOT NULL,
        config_id           TEXT NOT NULL,
        generation          BIGINT NOT NULL,
        payload             TEXT NOT NULL,
        attempts            BIGINT NOT NULL DEFAULT 0,
        next_attempt_at     DOUBLE PRECISION NOT NULL,
        lease_until         DOUBLE PRECISION,
        delivered_at        DOUBLE PRECISION,
        last_error          TEXT
    );
    CREATE INDEX push_deliveries_due ON push_deliveries (next_attempt_at) WHERE delivered_at IS NULL;
    """,
    # 7: outside A2A agents (SQLite's step 11): each registered by its card (its JSON kept as served, and
    # the bearer token sent to it: a secret to use, not to check, so kept as given); and the
    # outbox of mail to them, one row per message, claimed with a lease by a pump that sends it
    # and follows the remote task it starts (its ids kept once the remote took it).
    """
    CREATE TABLE remote_agents (
        workspace           TEXT NOT NULL,
        name                TEXT NOT NULL,
        url                 TEXT NOT NULL,
        card                TEXT NOT NULL,
        token               TEXT,
        added_at            DOUBLE PRECISION NOT NULL,
        card_fetched_at     DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (workspace, name)
    );
    CREATE UNIQUE INDEX remote_agents_by_url ON remote_agents (workspace, url);
    CREATE TABLE remote_outbox (
        workspace           TEXT NOT NULL,
        message_id          TEXT NOT NULL,
        task_id             TEXT NOT NULL,
        remote              TEXT NOT NULL,
        state               TEXT NOT NULL DEFAULT 'pending',   -- pending, following, done, failed
        attempts            BIGINT NOT NULL DEFAULT 0,
        created_at          DOUBLE PRECISION NOT NULL,
        next_attempt_at     DOUBLE PRECISION NOT NULL,
        lease_until         DOUBLE PRECISION,
        last_error          TEXT,
        remote_task_id      TEXT,
        remote_context_id   TEXT,
        PRIMARY KEY (workspace, message_id)
    );
    CREATE INDEX remote_outbox_due ON remote_outbox (next_attempt_at) WHERE state IN ('pending', 'following');
    CREATE INDEX remote_outbox_by_task ON remote_outbox (workspace, task_id, created_at);
    """,
    # 8: what each runner last reported of itself (SQLite's step 12): the report as JSON, its
    # update time to order by.
    """
    CREATE TABLE runner_reports (
        workspace           TEXT NOT NULL,
        agent               TEXT NOT NULL,
        machine             TEXT NOT NULL,
        updated_at          DOUBLE PRECISION NOT NULL,
        report              TEXT NOT NULL,
        PRIMARY KEY (workspace, agent, machine)
    );
    CREATE INDEX runner_reports_by_update ON runner_reports (workspace, updated_at);
    """,
    # 9: rounds (rounds.py): what each was opened with and where it stands, who takes part (to list
    # an agent's rounds), and its events in order; an accepted proposal or vote is unique per epoch,
    # kind and agent (a replay counts once), a refusal or any other event is not (agent NULL there).
    """
    CREATE TABLE rounds (
        workspace           TEXT NOT NULL,
        id                  TEXT NOT NULL,
        coordinator         TEXT NOT NULL,
        goal                TEXT NOT NULL,
        participants        TEXT NOT NULL,
        quorum              INTEGER NOT NULL,
        max_rounds          INTEGER NOT NULL,
        kind                TEXT NOT NULL,
        phase_seconds       DOUBLE PRECISION NOT NULL,
        channel             TEXT,
        epoch               INTEGER NOT NULL,
        phase               TEXT NOT NULL,
        deadline            DOUBLE PRECISION,
        decision            TEXT,
        created_at          DOUBLE PRECISION NOT NULL,
        updated_at          DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (workspace, id)
    );
    CREATE INDEX rounds_due ON rounds (deadline) WHERE phase IN ('proposal', 'vote');
    CREATE TABLE round_members (
        workspace           TEXT NOT NULL,
        round_id            TEXT NOT NULL,
        agent               TEXT NOT NULL,
        PRIMARY KEY (workspace, agent, round_id)
    );
    CREATE TABLE round_events (
        workspace           TEXT NOT NULL,
        round_id            TEXT NOT NULL,
        seq                 INTEGER NOT NULL,
        epoch               INTEGER NOT NULL,
        kind                TEXT NOT NULL,
        agent               TEXT,
        at                  DOUBLE PRECISION NOT NULL,
        event               TEXT NOT NULL,
        PRIMARY KEY (workspace, round_id, seq)
    );
    CREATE UNIQUE INDEX round_acts_once ON round_events (workspace, round_id, epoch, kind, agent)
        WHERE agent IS NOT NULL;
    """,
    # 10: leases (leases.py): an agent's advisory claim on repository paths, active while not
    # released, not expired, and its session (when taken in one) not ended.
    """
    CREATE TABLE leases (
        id                  TEXT PRIMARY KEY,
        workspace           TEXT NOT NULL,
        agent               TEXT NOT NULL,
        session_id          TEXT,
        scope               TEXT NOT NULL,
        patterns            TEXT NOT NULL,
        shared              INTEGER NOT NULL,
        reason              TEXT,
        created_at          DOUBLE PRECISION NOT NULL,
        expires_at          DOUBLE PRECISION NOT NULL,
        released_at         DOUBLE PRECISION
    );
    CREATE INDEX leases_active ON leases (workspace, scope, expires_at) WHERE released_at IS NULL;
    """,
]

VERSION_TABLE = "callboard_schema"


def current_schema(conn: psycopg.Connection) -> str:
    """The schema the connection creates and finds its tables in; refuses a search_path that
    names no existing schema (PostgreSQL would create nothing, and say so obscurely)."""
    (schema,) = conn.execute("SELECT current_schema()").fetchone()  # type: ignore[misc]  # one row, always
    if schema is None:
        (path,) = conn.execute("SHOW search_path").fetchone()  # type: ignore[misc]  # one row, always
        raise StoreUnavailable(
            f"no schema of the search_path ({path}) exists in this database; create it, or fix the URL's options."
        )
    return schema


def schema_version(conn: psycopg.Connection) -> int:
    """The number of steps applied to the current schema (0: none, not even the version table)."""
    (table,) = conn.execute("SELECT to_regclass(%s)", (VERSION_TABLE,)).fetchone()  # type: ignore[misc]  # one row, always
    if table is None:
        return 0
    row = conn.execute(f"SELECT version FROM {VERSION_TABLE}").fetchone()
    return row[0] if row else 0


def migrate(conn: psycopg.Connection, schema: str) -> int:
    """Bring the current schema to the newest step; the version it was at.

    Safe when several stores (hub replicas) start at once: the steps run in one transaction
    holding an advisory lock keyed on the schema's name, and the version is read once the lock
    is held, so the first applies them and the others find them applied. The lock comes before
    any look at the tables: a backend caches "no such table", and would keep believing it after
    the lock. So ``conn`` is a fresh connection, not in autocommit, that looked at none of them.
    A store that finds a newer version than it knows leaves it be (a newer replica added a step)."""
    try:
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"callboard schema {schema}",))
        version = schema_version(conn)
        if version >= len(MIGRATIONS):
            conn.rollback()
            return version
        if version == 0:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version INTEGER NOT NULL)")
            conn.execute(
                f"INSERT INTO {VERSION_TABLE} (version) SELECT 0 WHERE NOT EXISTS (SELECT FROM {VERSION_TABLE})"
            )
        for script in MIGRATIONS[version:]:
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)  # our own text, no parameters
        conn.execute(f"UPDATE {VERSION_TABLE} SET version = %s", (len(MIGRATIONS),))
        conn.commit()
        return version
    except BaseException:
        conn.rollback()
        raise
