"""The change notifications a write sends to the other stores on its schema (hub replicas; see
``listener`` for the receiving end): the payload that says where the change was, and the
pieces of SQL that send it from inside the write's own statement.

A statement that notifies takes two parameters, ``channel`` and ``payload``
(``PostgresDatabase.with_notify`` adds them). PostgreSQL delivers a notification only if its
transaction commits, and identical ones of one transaction once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

# A NOTIFY payload must stay under 8,000 bytes: past this, name the workspace, not its mailboxes.
MAX_PAYLOAD_BYTES = 7000


def payload(
    replica: str, workspace: str | None = None, agents: Sequence[str] | None = None, message_id: str | None = None
) -> str:
    """The compact JSON of a change notification: which replica wrote, and where.

    ``{"r": replica}``: something changed; with ``"w"``: a mailbox of that workspace changed;
    with ``"a"`` as well: exactly these mailboxes (of the workspace) changed; with ``"m"``: by
    a delivery of that new message to each (a replica can read it once for all its streams)."""
    body: dict[str, object] = {"r": replica}
    if workspace is not None:
        body["w"] = workspace
        if agents is not None:
            body["a"] = list(agents)
            if message_id is not None:
                body["m"] = message_id
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode()) > MAX_PAYLOAD_BYTES:
        text = json.dumps({"r": replica, "w": workspace}, separators=(",", ":"), ensure_ascii=False)
    return text


NOTIFY = "pg_notify(%(channel)s, %(payload)s)::text"  # ::text: a void column would need a loader


def notifying(dml: str) -> str:
    """``dml`` (with RETURNING) as a statement that also notifies, once per changed row: PostgreSQL
    sends identical notifications of one transaction once. No row changed, nothing sent."""
    return f"WITH w AS ({dml}) SELECT w.*, {NOTIFY} FROM w"
