"""SQLite schema, applied in numbered steps recorded in ``PRAGMA user_version``.

Times are Unix seconds (REAL); lists and parts are JSON text. A new step is appended, never
edited, so that every existing database can be brought forward.
"""

from __future__ import annotations

import sqlite3

MIGRATIONS: list[str] = [
    # 1: the mailbox core
    """
    CREATE TABLE workspaces (
        name        TEXT PRIMARY KEY,
        created_at  REAL NOT NULL
    );
    CREATE TABLE agents (
        workspace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        description TEXT,
        skills      TEXT NOT NULL DEFAULT '[]',
        created_at  REAL NOT NULL,
        last_seq    INTEGER NOT NULL DEFAULT 0,  -- the mailbox's newest delivery sequence number
        PRIMARY KEY (workspace, name)
    );
    CREATE TABLE channels (
        workspace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        description TEXT,
        created_by  TEXT NOT NULL,
        created_at  REAL NOT NULL,
        PRIMARY KEY (workspace, name)
    );
    CREATE TABLE channel_members (
        workspace   TEXT NOT NULL,
        channel     TEXT NOT NULL,
        agent       TEXT NOT NULL,
        joined_at   REAL NOT NULL,
        PRIMARY KEY (workspace, channel, agent)
    );
    CREATE INDEX channel_members_by_agent ON channel_members (workspace, agent);
    CREATE TABLE machines (
        workspace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        last_seen   REAL NOT NULL,
        PRIMARY KEY (workspace, name)
    );
    CREATE TABLE sessions (
        id          TEXT PRIMARY KEY,
        workspace   TEXT NOT NULL,
        agent       TEXT NOT NULL,
        machine     TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        proc_start  INTEGER,
        runtime     TEXT NOT NULL,
        started_at  REAL NOT NULL,
        last_seen   REAL NOT NULL,
        ended_at    REAL
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
        created_at      REAL NOT NULL,
        idempotency_key TEXT,
        request_hash    TEXT,
        result          TEXT NOT NULL       -- the send's answer, returned again on an idempotent resend
    );
    CREATE UNIQUE INDEX messages_by_idempotency_key
        ON messages (workspace, sender, idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE TABLE deliveries (
        workspace       TEXT NOT NULL,
        recipient       TEXT NOT NULL,
        seq             INTEGER NOT NULL,
        message_id      TEXT NOT NULL,
        channel         TEXT,
        state           TEXT NOT NULL,
        sessions        TEXT NOT NULL DEFAULT '[]',
        target_session  TEXT,
        queued_at       REAL NOT NULL,
        delivered_at    REAL,
        surfaced_at     REAL,
        read_at         REAL,
        acked_at        REAL,
        PRIMARY KEY (workspace, recipient, seq)
    ) WITHOUT ROWID;
    CREATE UNIQUE INDEX deliveries_by_message ON deliveries (message_id, recipient);
    CREATE INDEX deliveries_unread ON deliveries (workspace, recipient, seq) WHERE read_at IS NULL;
    """,
    # 2: hub credentials. Only a hash of each secret is kept; a request's token is looked up by
    # it (the UNIQUE constraint is that index). Revoked tokens stay, so lists can show them.
    """
    CREATE TABLE tokens (
        id          TEXT PRIMARY KEY,
        kind        TEXT NOT NULL CHECK (kind IN ('admin', 'user', 'agent')),
        workspace   TEXT CHECK ((workspace IS NULL) = (kind = 'admin')),  -- NULL for admin tokens only
        agent       TEXT CHECK ((agent IS NULL) = (kind != 'agent')),     -- the one agent an agent token acts as
        label       TEXT,
        secret_hash TEXT NOT NULL UNIQUE,
        created_at  REAL NOT NULL,
        revoked_at  REAL
    );
    CREATE INDEX tokens_by_workspace ON tokens (workspace, created_at);
    """,
    # 3: deliveries of a large send, kept as one row until they are written out (see
    # messages.py): its columns are those of `deliveries`, one JSON array per delivery.
    """
    CREATE TABLE fanouts (
        message_id  TEXT PRIMARY KEY,
        deliveries  TEXT NOT NULL
    );
    """,
    # 4: those deliveries in parts of a few hundred mailboxes, written out a part at a time
    # (part n of every waiting send at once: the same mailboxes when they went to one channel).
    """
    CREATE TABLE fanout_parts (
        message_id  TEXT NOT NULL,
        part        INTEGER NOT NULL,
        size        INTEGER NOT NULL,  -- deliveries in this part
        deliveries  TEXT NOT NULL,
        PRIMARY KEY (message_id, part)
    );
    INSERT INTO fanout_parts (message_id, part, size, deliveries)
        SELECT message_id, 0, json_array_length(deliveries), deliveries FROM fanouts;
    DROP TABLE fanouts;
    """,
    # 5: urgent mail (it may reach a busy agent between two tool calls), and the path by which a
    # delivery reached the agent's context ('socket', 'hook', 'waiter', 'runner').
    """
    ALTER TABLE messages ADD COLUMN urgent INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE deliveries ADD COLUMN surfaced_via TEXT;
    """,
    # 6: where a message came from (the sending session's agent@machine#pid and its terminal), a
    # session's terminal, and what its delivery path last reported broken.
    """
    ALTER TABLE messages ADD COLUMN sender_address TEXT;
    ALTER TABLE messages ADD COLUMN sender_terminal TEXT;
    ALTER TABLE sessions ADD COLUMN terminal TEXT;
    ALTER TABLE sessions ADD COLUMN delivery_error TEXT;
    """,
    # 7: invite-only channels; the audit trail of actions with large effects (append-only: the
    # store only adds rows and lists them), newest first by workspace; messages by thread, to
    # tell whether a sender is a party to the thread it names.
    """
    ALTER TABLE channels ADD COLUMN invite_only INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE audit (
        id          TEXT PRIMARY KEY,
        workspace   TEXT NOT NULL,
        at          REAL NOT NULL,
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
    # 8: delivery states that say what is known. A delivery handed to one live session (a
    # frame its messaging socket accepted, a waiter's wake) waits there for the session's turn:
    # when and to which session; it goes back to the mailbox if that session ends first. And
    # each delivery's history: what happened to it, when, in which session, by which path.
    """
    ALTER TABLE deliveries ADD COLUMN handed_at REAL;
    ALTER TABLE deliveries ADD COLUMN handed_session TEXT;
    CREATE INDEX deliveries_handed ON deliveries (workspace, recipient) WHERE state = 'handed';
    CREATE TABLE delivery_events (
        workspace   TEXT NOT NULL,
        message_id  TEXT NOT NULL,
        recipient   TEXT NOT NULL,
        at          REAL NOT NULL,
        event       TEXT NOT NULL,      -- handed, surfaced, returned, held, expired, refused
        session     TEXT,               -- the session's id
        via         TEXT,               -- socket, hook, waiter
        detail      TEXT                -- the evidence or the reason
    );
    CREATE INDEX delivery_events_by_message ON delivery_events (workspace, message_id, recipient, at);
    """,
    # 9: the loop and flood guards (guard.py): until when, and why, a guard holds a delivery
    # back from being surfaced; a sender's messages by time, for the pair's recent traffic.
    """
    ALTER TABLE deliveries ADD COLUMN held_until REAL;
    ALTER TABLE deliveries ADD COLUMN held_reason TEXT;
    CREATE INDEX messages_by_sender ON messages (workspace, sender, created_at);
    """,
    # 10: tasks (A2A 1.0, tasks.py): a task's mail names it, and an A2A client's message id is
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
        status_at           REAL NOT NULL,
        generation          INTEGER NOT NULL,
        metadata            TEXT,
        created_at          REAL NOT NULL,
        updated_at          REAL NOT NULL
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
        position            INTEGER NOT NULL,   -- the order they were first handed over
        PRIMARY KEY (task_id, artifact_id)
    );
    CREATE TABLE task_events (
        task_id             TEXT NOT NULL,
        generation          INTEGER NOT NULL,
        kind                TEXT NOT NULL,      -- status, artifact
        state               TEXT NOT NULL,
        message_id          TEXT,
        parts               TEXT NOT NULL DEFAULT '[]',
        artifact            TEXT,
        append              INTEGER NOT NULL DEFAULT 0,
        last_chunk          INTEGER NOT NULL DEFAULT 1,
        at                  REAL NOT NULL,
        PRIMARY KEY (task_id, generation)
    ) WITHOUT ROWID;
    CREATE TABLE push_configs (
        workspace           TEXT NOT NULL,
        task_id             TEXT NOT NULL,
        id                  TEXT NOT NULL,
        url                 TEXT NOT NULL,
        token               TEXT,
        auth_scheme         TEXT,
        auth_credentials    TEXT,
        created_at          REAL NOT NULL,
        PRIMARY KEY (task_id, id)
    );
    CREATE TABLE push_deliveries (
        id                  TEXT PRIMARY KEY,
        workspace           TEXT NOT NULL,
        task_id             TEXT NOT NULL,
        config_id           TEXT NOT NULL,
        generation          INTEGER NOT NULL,
        payload             TEXT NOT NULL,
        attempts            INTEGER NOT NULL DEFAULT 0,
        next_attempt_at     REAL NOT NULL,
        lease_until         REAL,
        delivered_at        REAL,
        last_error          TEXT
    );
    CREATE INDEX push_deliveries_due ON push_deliveries (next_attempt_at) WHERE delivered_at IS NULL;
    """,
    # 11: outside A2A agents: each registered by its card (its JSON kept as served, and
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
        added_at            REAL NOT NULL,
        card_fetched_at     REAL NOT NULL,
        PRIMARY KEY (workspace, name)
    );
    CREATE UNIQUE INDEX remote_agents_by_url ON remote_agents (workspace, url);
    CREATE TABLE remote_outbox (
        workspace           TEXT NOT NULL,
        message_id          TEXT NOT NULL,
        task_id             TEXT NOT NULL,
        remote              TEXT NOT NULL,
        state               TEXT NOT NULL DEFAULT 'pending',   -- pending, following, done, failed
        attempts            INTEGER NOT NULL DEFAULT 0,
        created_at          REAL NOT NULL,
        next_attempt_at     REAL NOT NULL,
        lease_until         REAL,
        last_error          TEXT,
        remote_task_id      TEXT,
        remote_context_id   TEXT,
        PRIMARY KEY (workspace, message_id)
    );
    CREATE INDEX remote_outbox_due ON remote_outbox (next_attempt_at) WHERE state IN ('pending', 'following');
    CREATE INDEX remote_outbox_by_task ON remote_outbox (workspace, task_id, created_at);
    """,
    # 12: what each runner (``callboard run``) last reported of itself, one row per agent and
    # machine: the report as JSON (read whole, never queried inside), its update time to order by.
    """
    CREATE TABLE runner_reports (
        workspace           TEXT NOT NULL,
        agent               TEXT NOT NULL,
        machine             TEXT NOT NULL,
        updated_at          REAL NOT NULL,
        report              TEXT NOT NULL,
        PRIMARY KEY (workspace, agent, machine)
    );
    CREATE INDEX runner_reports_by_update ON runner_reports (workspace, updated_at);
    """,
    # 13: rounds (rounds.py): what each was opened with and where it stands, who takes part (to list
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
        phase_seconds       REAL NOT NULL,
        channel             TEXT,
        epoch               INTEGER NOT NULL,
        phase               TEXT NOT NULL,
        deadline            REAL,
        decision            TEXT,
        created_at          REAL NOT NULL,
        updated_at          REAL NOT NULL,
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
        at                  REAL NOT NULL,
        event               TEXT NOT NULL,
        PRIMARY KEY (workspace, round_id, seq)
    );
    CREATE UNIQUE INDEX round_acts_once ON round_events (workspace, round_id, epoch, kind, agent)
        WHERE agent IS NOT NULL;
    """,
    # 14: leases (leases.py): an agent's advisory claim on repository paths, active while not
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
        created_at          REAL NOT NULL,
        expires_at          REAL NOT NULL,
        released_at         REAL
    );
    CREATE INDEX leases_active ON leases (workspace, scope, expires_at) WHERE released_at IS NULL;
    """,
]


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the database to the newest step. Safe when several processes open it at once:
    the version is read again inside the write transaction."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= len(MIGRATIONS):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for step, script in enumerate(MIGRATIONS[version:], start=version + 1):
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {step}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
