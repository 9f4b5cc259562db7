"""Taking and marking mail in the SQLite schema (the mailbox part's writes; its reads are
``parts.mailbox``'s). One writer at a time makes a transaction's reads its own till it commits,
so a take is a read and an update in one transaction; each first looks without the write lock,
as most wake-ups of a waiting reader find nothing new, and a reader should not queue behind
senders just to learn that."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from callboard.model import DeliveryState, MailItem
from callboard.store.parts.handing import record_events
from callboard.store.parts.mailbox import IN_MAILBOX, SQLMailbox, Surfacing, waiting, window
from callboard.store.rows import MAIL_QUERY, mail_item_from_row, message_from_row, to_ts
from callboard.store.sql import Connection, marks

ACK = (
    "state = 'acked', acked_at = coalesce(acked_at, ?1), read_at = coalesce(read_at, ?1), "
    "delivered_at = coalesce(delivered_at, ?1)"
)
MARK_READ = (
    "state = CASE state WHEN 'acked' THEN 'acked' ELSE 'read' END, read_at = coalesce(read_at, ?1), "
    "delivered_at = coalesce(delivered_at, ?1)"
)


class SQLiteMailbox(SQLMailbox):
    acking, marking_read = ACK, MARK_READ

    def claim(
        self, workspace: str, agent: str, after: int | None, limit: int, now: datetime, hidden: Sequence[str] = ()
    ) -> list[MailItem]:
        self._db.deliveries_written()
        where, args = window(after, hidden)
        at = to_ts(now)
        if not self._db.row(
            f"SELECT 1 FROM deliveries d WHERE {IN_MAILBOX} AND {where} LIMIT 1", (workspace, agent, *args)
        ):
            return []

        def take(conn: Connection) -> tuple[list, list[int]]:
            rows = conn.execute(
                f"{MAIL_QUERY} WHERE {IN_MAILBOX} AND {where} ORDER BY d.seq LIMIT ?", (workspace, agent, *args, limit)
            ).fetchall()
            unread = [r[0] for r in rows if DeliveryState(r[1]).rank < DeliveryState.read.rank]
            if unread:
                conn.execute(
                    "UPDATE deliveries SET state = 'read', read_at = ?, delivered_at = coalesce(delivered_at, ?) "
                    f"WHERE workspace = ? AND recipient = ? AND seq IN ({marks(unread)})",
                    (at, at, workspace, agent, *unread),
                )
            return rows, unread

        rows, unread = self._db.transact(take)
        claimed = set(unread)
        return [mail_item_from_row(r, DeliveryState.read if r[0] in claimed else None) for r in rows]

    def _mark(self, workspace: str, agent: str, message_ids: Sequence[str], changes: str, now: datetime) -> list[str]:
        """Apply ``changes`` (ACK or MARK_READ; ``?1`` is now) to these messages' deliveries in the
        agent's mailbox; the ids not there (then nothing is written)."""
        self._db.deliveries_written()
        wanted = list(dict.fromkeys(message_ids))

        def apply(conn: Connection) -> list[str]:
            found = {
                r[0]
                for r in conn.execute(
                    "SELECT message_id FROM deliveries WHERE workspace = ? AND recipient = ? "
                    f"AND message_id IN ({marks(wanted)})",
                    (workspace, agent, *wanted),
                )
            }
            missing = [m for m in wanted if m not in found]
            if not missing:
                conn.execute(
                    f"UPDATE deliveries SET {changes} WHERE workspace = ?2 AND recipient = ?3 "
                    f"AND message_id IN ({','.join(f'?{i}' for i in range(4, 4 + len(wanted)))})",
                    (to_ts(now), workspace, agent, *wanted),
                )
            return missing

        return self._db.transact(apply)

    def _take(self, ask: Surfacing) -> list[MailItem]:
        self._db.deliveries_written()
        workspace, agent, state = ask.workspace, ask.agent, ask.state
        where, args = waiting(ask.urgent_only, ask.now, ask.hidden)
        query = f"{MAIL_QUERY} WHERE {IN_MAILBOX} AND {where} ORDER BY d.seq LIMIT ?"
        if not self._db.row(query, (workspace, agent, *args, 1)):  # most looks find nothing
            return []
        at = to_ts(ask.now)
        changes = "handed_at = ?1, handed_session = ?3" if state is DeliveryState.handed else "surfaced_at = ?1"

        def take(conn: Connection) -> list:
            rows = conn.execute(query, (workspace, agent, *args, ask.limit)).fetchall()
            if rows:
                conn.execute(
                    f"UPDATE deliveries SET state = ?4, {changes}, surfaced_via = ?2, "
                    "delivered_at = coalesce(delivered_at, ?1) "
                    f"WHERE workspace = ?5 AND recipient = ?6 AND seq IN ({','.join('?' * len(rows))})",
                    (at, ask.via, ask.session, state.value, workspace, agent, *(r[0] for r in rows)),
                )
                ids = [message_from_row(r[2:]).id for r in rows]
                record_events(conn, workspace, agent, ids, at, state.value, ask.session, ask.via)
            return rows

        return [mail_item_from_row(r, state) for r in self._db.transact(take)]
