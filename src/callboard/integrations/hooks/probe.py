"""A quick look into the embedded store: is there any mail a hook could surface?

Most hook runs find nothing new, and loading the service to learn that (pydantic models, the
store, the events) costs more than the whole run may take. This look opens the database read-only
with the standard library and asks the question the store's own ``surface`` asks first (see
``SQLiteStore.surface``). It may only ever answer "nothing" when it is sure: a missing database
(no mail was ever sent here) or a clean "no" from the query. Any doubt — an error, a schema it
does not know, deliveries a large send has not written out yet (``fanout_parts``) — answers
"maybe", and the hook takes the ordinary path through the service, which decides.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

from callboard.store.waiting import waiting_to_surface

_ANY = (
    "SELECT EXISTS (SELECT 1 FROM fanout_parts) OR EXISTS ("
    "SELECT 1 FROM deliveries d JOIN messages m ON m.id = d.message_id "
    f"WHERE d.workspace = ? AND d.recipient = ? AND {waiting_to_surface('?')}{{urgent}})"
)
_QUERIES = {urgent: _ANY.format(urgent=" AND m.urgent = 1" if urgent else "") for urgent in (False, True)}


_HANDED = "SELECT EXISTS (SELECT 1 FROM deliveries WHERE workspace = ? AND recipient = ? AND state = 'handed')"


def has_handed(db_path: Path, workspace: str, agent: str) -> bool:
    """False only when the embedded store surely holds no mail of ``agent`` handed to a
    session and waiting to be confirmed surfaced."""
    return _may_find(db_path, _HANDED, (workspace, agent))


def may_have_mail(db_path: Path, workspace: str, agent: str, *, urgent_only: bool = False) -> bool:
    """False only when the embedded store at ``db_path`` surely holds no mail for ``agent`` that
    waits to be surfaced (``waiting``: neither read, handed to a session, surfaced nor held;
    only urgent mail with ``urgent_only``)."""
    return _may_find(db_path, _QUERIES[urgent_only], (workspace, agent, time.time()))


def _may_find(db_path: Path, exists_query: str, args: tuple[object, ...]) -> bool:
    """The answer of an EXISTS query on the embedded store, read-only; True when in doubt (no
    answer, a locked or broken file), False when there is no store yet."""
    if not db_path.exists():
        return False
    try:
        connection = sqlite3.connect(f"file:{quote(str(db_path))}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return True
    try:
        row = connection.execute(exists_query, args).fetchone()
    except sqlite3.Error:
        return True
    finally:
        connection.close()
    return row is None or row[0] != 0
