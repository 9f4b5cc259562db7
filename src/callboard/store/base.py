"""The Store interface: durable state behind the service, in parts.

A store keeps rows and makes each method atomic; it holds no mailbox rules (who may post
where, what a send answers) — those live in the service. Every write method commits (and,
for a durable store, reaches stable storage) before it returns. ``tests/store/`` is the
contract: a new implementation passes it unchanged.

Each part is a small interface of its own (``store/parts/``), an attribute of the store, and the
service hands each collaborator the parts it uses: ``store.directory`` (workspaces, agents,
channels), ``sessions``, ``sent`` (a send read back), ``mailbox``, ``handing`` (mail handed to
a session), ``guard_facts``, ``audit``, ``tokens``, ``tasks``, ``remotes``, ``runners``, ``rounds``, ``leases``. What
is the store's own stays here: storing a send (it writes into several parts at once), the
change counter, group commit, closing.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from callboard.model import Message, SendResult
from callboard.pending import Pending
from callboard.store.parts.audit import AuditPart
from callboard.store.parts.directory import DirectoryPart
from callboard.store.parts.guard_facts import GuardFactsPart
from callboard.store.parts.handing import HandingPart
from callboard.store.parts.leases import LeasesPart
from callboard.store.parts.mailbox import MailboxPart
from callboard.store.parts.remotes import RemotesPart
from callboard.store.parts.rounds import RoundsPart
from callboard.store.parts.runners import RunnersPart
from callboard.store.parts.sent import SentPart
from callboard.store.parts.sessions import SessionsPart
from callboard.store.parts.tasks import TasksPart
from callboard.store.parts.tokens import TokensPart
from callboard.store.records import NewDelivery, TaskWrite


class Store(Protocol):
    """Persistence for workspaces, agents, channels, sessions, messages and deliveries."""

    location: str  # a path or URL, for people

    # The parts, read-only: a store holds its own implementation of each (SQLDirectory, ...),
    # which a plain attribute of the protocol would have to match exactly (attributes are invariant).
    @property
    def directory(self) -> DirectoryPart: ...
    @property
    def sessions(self) -> SessionsPart: ...
    @property
    def sent(self) -> SentPart: ...
    @property
    def mailbox(self) -> MailboxPart: ...
    @property
    def handing(self) -> HandingPart: ...
    @property
    def guard_facts(self) -> GuardFactsPart: ...
    @property
    def audit(self) -> AuditPart: ...
    @property
    def tokens(self) -> TokensPart: ...
    @property
    def tasks(self) -> TasksPart: ...
    @property
    def remotes(self) -> RemotesPart: ...
    @property
    def runners(self) -> RunnersPart: ...
    @property
    def rounds(self) -> RoundsPart: ...
    @property
    def leases(self) -> LeasesPart: ...

    def close(self) -> None: ...

    def change_counter(self) -> int:
        """A number that changes after any process commits a change; cheap enough to poll."""
        ...

    def wait_for_change(self, timeout: float) -> bool:
        """Block until another process may have committed (True: look at ``change_counter``) or
        ``timeout`` passes (False). A store that cannot tell waits a short poll interval and
        says True."""
        ...

    def committing_on_loop(self) -> AbstractAsyncContextManager[None]:
        """While the block runs, writes may be group-committed on the running event loop (a
        server's); on leaving, every queued write has committed."""
        ...

    def submit_message(
        self,
        message: Message,
        deliveries: Sequence[NewDelivery],
        result: SendResult,
        idempotency_key: str | None,
        request_hash: str | None,
        task: TaskWrite | None = None,
    ) -> Pending[dict[str, int]]:
        """Store the message and one delivery per recipient, each with the recipient's next
        sequence number, and ``task``'s change with it: the future resolves once that is
        durable, to the numbers by recipient (a server awaits it; anyone else calls
        ``.result()``), or fails with DuplicateIdempotencyKey, or RecipientsGone when a
        recipient that need not be created does not exist, or TaskConflict."""
        ...
