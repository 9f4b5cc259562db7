"""A PostgreSQL database as ``PostgresStore`` uses it: a pool of autocommit connections, the
threads that run sends, the change listener, and what a failure of any of them means.

The store's methods hand their statements to ``run`` (or ``all``, ``one``, ``notifying``): a
transaction that lost a deadlock is run again, and a database that cannot be reached is a
StoreUnavailable, as for SQLite.
"""

from __future__ import annotations

import hashlib
import random
import secrets
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from callboard.errors import StoreUnavailable
from callboard.pending import Pending
from callboard.store.postgres import notices
from callboard.store.postgres.listener import ChangeListener
from callboard.store.postgres.schema import current_schema, migrate

T = TypeVar("T")

POOL_SIZE = 8  # connections at most; as many threads send
CONNECT_TIMEOUT = 10  # seconds, for the first connection: a store that cannot start says so
# A transaction that lost a deadlock or a serialization conflict is run again, this often.
ATTEMPTS = 5
_RETRIED = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure, pg_errors.TransactionRollback)
Args = dict[str, object] | Sequence[object]


def without_password(url: str) -> str:
    """The connection string for people: a URL or ``key=value`` string less its password."""
    if "://" not in url:
        params = conninfo_to_dict(url)
        params.pop("password", None)
        return make_conninfo("", **params)
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}@{host}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def channel_for(schema: str) -> str:
    """The NOTIFY channel of a schema: stores on another schema (tests, deployments) hear none
    of its changes. PostgreSQL names stop at 63 bytes: a long schema name is hashed."""
    name = f"callboard.{schema}"
    if len(name.encode()) > 63:
        name = f"callboard.{hashlib.sha1(schema.encode()).hexdigest()}"
    return name


class PostgresDatabase:
    """Connections to one schema of one database, brought to the newest schema step."""

    def __init__(self, url: str, replica: str | None, pool_size: int) -> None:
        self.location = without_password(url)
        self.replica = replica or secrets.token_hex(4)
        try:
            with psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT) as conn:
                self.schema = current_schema(conn)
                migrate(conn, self.schema)
        except psycopg.Error as error:
            raise StoreUnavailable(f"cannot open the database {self.location}: {str(error).strip()}.") from None
        self.channel = channel_for(self.schema)
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            open=False,
            name=self.schema,
            timeout=CONNECT_TIMEOUT,  # a call waits this long for a connection, then is StoreUnavailable
        )
        try:
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT)
        except PoolTimeout:
            self._pool.close()
            raise StoreUnavailable(f"cannot connect to the database {self.location}; is it up?") from None
        self._senders = ThreadPoolExecutor(max_workers=pool_size, thread_name_prefix="postgres send")
        self.listener = ChangeListener(url, self.channel)

    def close(self) -> None:
        self._senders.shutdown(wait=True)  # sends already asked for are stored and answered
        self.listener.close()
        self._pool.close()

    def _unavailable(self, error: BaseException) -> StoreUnavailable:
        return StoreUnavailable(f"the database {self.location} is unavailable ({str(error).strip()}); try again.")

    def run(self, work: Callable[[psycopg.Connection], T], *, reads_only: bool = False) -> T:
        """``work(conn)`` on a pooled connection, again after a deadlock or serialization
        failure (its transaction was rolled back whole). A lost connection is StoreUnavailable;
        a read is tried once more on another connection, a write is not (it may have committed)."""
        for attempt in range(ATTEMPTS):
            try:
                with self._pool.connection() as conn:
                    return work(conn)
            except _RETRIED:
                if attempt == ATTEMPTS - 1:
                    raise StoreUnavailable("the database kept refusing a transaction (deadlocks); try again.") from None
                time.sleep(random.uniform(0, 0.01 * 2**attempt))
            except (psycopg.OperationalError, psycopg.InterfaceError) as error:
                if not (reads_only and attempt == 0):
                    raise self._unavailable(error) from None
            except (PoolTimeout, PoolClosed) as error:
                raise self._unavailable(error) from None
        raise AssertionError("unreachable")

    def submit(self, work: Callable[[psycopg.Connection], T]) -> Pending[T]:
        """``run(work)`` on a send thread; its outcome, at once."""
        pending: Pending[T] = Pending()

        def run() -> None:
            if not pending.set_running_or_notify_cancel():
                return
            try:
                value = self.run(work)
            except BaseException as error:
                pending.set_exception(error)
            else:
                pending.set_result(value)

        try:
            self._senders.submit(run)
        except RuntimeError:  # shut down: the store was closed
            pending.set_running_or_notify_cancel()
            pending.set_exception(StoreUnavailable(f"the database {self.location} was closed."))
        return pending

    def all(self, query: str, args: Args = ()) -> list[tuple]:
        return self.run(lambda conn: conn.execute(query, args).fetchall(), reads_only=True)

    def one(self, query: str, args: Args = ()) -> tuple | None:
        return self.run(lambda conn: conn.execute(query, args).fetchone(), reads_only=True)

    def notifying(self, dml: str, args: dict[str, object], payload: str | None = None) -> list[tuple]:
        """Run ``dml`` (with RETURNING) as one transaction that notifies ``payload`` (default:
        "something changed") when it changed a row; the rows it returned."""
        args = {**args, "channel": self.channel, "payload": payload or notices.payload(self.replica)}
        rows = self.run(lambda conn: conn.execute(notices.notifying(dml), args).fetchall())
        return [row[:-1] for row in rows]

    def notify(self, conn: psycopg.Connection, payload: str | None = None) -> None:
        """Notify, in the transaction open on ``conn`` (default: "something changed")."""
        conn.execute("SELECT pg_notify(%s, %s)", (self.channel, payload or notices.payload(self.replica)))

    def with_notify(self, args: dict[str, object], payload: str | None = None) -> dict[str, object]:
        """``args`` with what a statement that notifies by itself (see ``notices``) needs."""
        return {**args, "channel": self.channel, "payload": payload or notices.payload(self.replica)}

    def mailbox_args(self, workspace: str, agent: str, **more: object) -> dict[str, object]:
        """Parameters of a statement on one mailbox, whose notification names that mailbox."""
        return self.with_notify(
            {"ws": workspace, "agent": agent, **more}, notices.payload(self.replica, workspace, [agent])
        )
