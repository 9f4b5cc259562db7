"""Outside A2A agents and their outbox as both stores keep them: the columns read, and a row
turned into its type (one place, so the SQLite and PostgreSQL parts cannot drift apart)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from callboard.model import built
from callboard.remotes import RemoteAgent
from callboard.store.records import RemoteSend
from callboard.store.rows import from_ts, to_ts

REMOTE_COLUMNS = "r.workspace, r.name, r.url, r.card, r.token, r.added_at, r.card_fetched_at"
OUTBOX_COLUMNS = (
    "o.workspace, o.message_id, o.task_id, o.remote, o.state, o.attempts, o.created_at, o.next_attempt_at, "
    "o.last_error, o.remote_task_id, o.remote_context_id"
)
# A remote's description is its card's, shown in its agent row too (agent list, who).
AGENT_DESCRIPTION_CHARS = 2000


def remote_values(remote: RemoteAgent, token: str | None) -> tuple:
    return (
        remote.workspace,
        remote.name,
        remote.url,
        json.dumps(remote.card, separators=(",", ":")),
        token,
        to_ts(remote.added_at),
        to_ts(remote.card_fetched_at),
    )


def remote_from_row(row: Sequence) -> tuple[RemoteAgent, str | None]:
    """The remote and its token."""
    card = json.loads(row[3])
    remote = built(
        RemoteAgent,
        workspace=row[0],
        name=row[1],
        url=row[2],
        description=card.get("description") or None,
        streaming=bool((card.get("capabilities") or {}).get("streaming")),
        has_token=row[4] is not None,
        card=card,
        added_at=from_ts(row[5]),
        card_fetched_at=from_ts(row[6]),
    )
    return remote, row[4]


def outbox_from_row(row: Sequence) -> RemoteSend:
    return RemoteSend(
        workspace=row[0],
        message_id=row[1],
        task_id=row[2],
        remote=row[3],
        state=row[4],
        attempts=row[5],
        created_at=from_ts(row[6]),
        next_attempt_at=from_ts(row[7]),
        last_error=row[8],
        remote_task_id=row[9],
        remote_context_id=row[10],
    )


def agent_description(remote: RemoteAgent) -> str | None:
    return (remote.description or "")[:AGENT_DESCRIPTION_CHARS] or None
