"""Reading a mailbox: draining it, looking into it, surfacing its mail into an agent's context,
and marking what was read or handled.

What a take marks is the store's to do in one transaction (claim, surface); this part checks the
request, returns first the mail a gone session held (``handing``), waits for mail when asked,
and says where the mailbox stands (cursor, unread count, the mail a guard holds).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime

from callboard.errors import BadRequest, UnknownMessage
from callboard.limits import SEQ_MAX, Limits
from callboard.model import SURFACE_PATHS, AckResult, Caller, HeldMail, MailItem, MarkResult, ReadResult
from callboard.requests import InboxQuery, ReadQuery, SurfaceQuery
from callboard.service import holds
from callboard.service.content import check_message_ids
from callboard.service.directory import Directory
from callboard.service.events import MailboxEvents
from callboard.service.from_memory import memory_only, refresh_ahead, store_needed
from callboard.service.handing import Handover, hands
from callboard.service.identity_gate import AgentCaller, as_agent
from callboard.service.unread_counts import UnreadCounts
from callboard.store.base import Store


class Look:
    """Which of the agent's other sessions a look into its mailbox passes over (their mail is
    theirs while they live: ``Directory.hidden_targets``), decided at each look of a wait, not
    once before it. Mail pushed to a session that ends during the wait goes back to the mailbox
    (``handing``), and the waiting session's next look finds it, as it finds new mail."""

    def __init__(self, directory: Directory, caller: AgentCaller) -> None:
        self.directory = directory
        self.caller = caller
        self.last: tuple[str, ...] = ()  # what the latest look passed over

    def hidden(self) -> tuple[str, ...]:
        self.last = self.directory.hidden_targets(self.caller)
        return self.last


class Mailbox:
    """The caller's mailbox, as its agent (or one of its sessions) reads it."""

    def __init__(
        self,
        store: Store,
        directory: Directory,
        handover: Handover,
        events: MailboxEvents,
        limits: Limits,
        clock: Callable[[], datetime],
        unread: UnreadCounts,
    ) -> None:
        self.store = store
        self.directory = directory
        self.unread = unread
        self.handover = handover
        self.events = events
        self.limits = limits
        self.clock = clock

    def read(self, caller: Caller, query: ReadQuery = ReadQuery()) -> ReadResult:
        """Drain (claim and mark read) the caller's unread mail, or peek without marking.

        With ``after``, resume from a cursor: every delivery past that sequence number.
        With ``wait``, block up to that many seconds until something arrives.
        """
        caller = as_agent(caller)
        peek, after, limit, wait = query.peek, query.after, query.limit, query.wait
        self.check_read_options(limit=limit, after=after, wait=wait)
        # Where the mailbox stood before looking: mail that lands while we look is past it, so a
        # reader that resumes from an empty read's cursor still gets that mail.
        position = after if after is not None else self.store.mailbox.last_seq(caller.workspace, caller.agent)
        look = Look(self.directory, caller)
        items = self._wait_for(caller, lambda: self._take(caller, peek, after, limit, look.hidden()), wait)
        if items and not peek:
            self.unread.changed(caller.workspace, caller.agent)
        cursor = items[-1].seq if items else position
        unread = self._unread(caller, look.last)  # as the last look saw it: the take and the count agree
        return ReadResult(items=items, cursor=cursor, unread=unread, held=self.held_mail(caller))

    def held_mail(self, caller: Caller) -> list[HeldMail]:
        """The caller's mail a loop or flood guard holds now, and why (see holds)."""
        caller = as_agent(caller)
        return holds.held_mail(self.store.guard_facts, caller.workspace, [caller.agent], self.clock())

    def surface(self, caller: Caller, query: SurfaceQuery) -> ReadResult:
        """Take the caller's mail that is neither read nor yet put before the agent, and mark it
        surfaced by ``via`` (a SurfacePath): what a hook, a waiter or a session's messaging
        socket puts into a coding agent's context, each message once. A hook's output is in the
        model's context once the hook returns: surfaced. A socket frame or a waiter's wake
        hands the mail to the caller's session, to be confirmed surfaced by the session's
        transcript (``confirm_surfaced``), or returned if the session ends first (``handing``).
        It stays unread, so ``read`` still returns it. With ``urgent_only``, only mail sent
        urgent; with ``wait``, block up to that many seconds until some arrives; with ``peek``,
        mark nothing (a look before deciding to surface)."""
        caller = as_agent(caller)
        via, urgent_only, limit, wait, peek = query.via, query.urgent_only, query.limit, query.wait, query.peek
        agent = caller.agent
        if via not in SURFACE_PATHS:
            raise BadRequest(f"via must be one of {', '.join(SURFACE_PATHS)}.")
        self.check_read_options(limit=limit, after=None, wait=wait)
        # Mail a gone session held comes back first, so this take can have it (once).
        self.handover.return_stranded(caller.workspace, agent, self.clock())
        position = self.store.mailbox.last_seq(caller.workspace, agent)
        look = Look(self.directory, caller)
        hand = hands(via)
        items = self._wait_for(
            caller,
            lambda: self.store.mailbox.surface(
                caller.workspace,
                agent,
                via,
                urgent_only,
                limit,
                self.clock(),
                peek,
                look.hidden(),
                session=caller.session_id if hand else None,
                hand=hand,
            ),
            wait,
            release=lambda: self._next_release(caller),
        )
        if items and not peek:
            self.unread.changed(caller.workspace, agent)
        cursor = items[-1].seq if items else position
        unread = self._unread(caller, look.last)
        return ReadResult(items=items, cursor=cursor, unread=unread, held=self.held_mail(caller))

    def _next_release(self, caller: AgentCaller) -> float | None:
        """Seconds until the first of the caller's held mail is let through (None: none held)."""
        held = self.store.guard_facts.held_mail(caller.workspace, [caller.agent], self.clock())
        if not held:
            return None
        return max(0.0, (held[0].until - self.clock()).total_seconds())

    def check_read_options(self, *, limit: int, after: int | None, wait: float) -> None:
        self._check_limit(limit)
        if after is not None and not 0 <= after <= SEQ_MAX:
            raise BadRequest(f"after is a sequence number, 0-{SEQ_MAX}.")
        if not 0 <= wait <= self.limits.wait_seconds:  # False for NaN too
            raise BadRequest(f"wait must be 0-{self.limits.wait_seconds:g} seconds.")

    def _check_limit(self, limit: int) -> None:
        if not 1 <= limit <= self.limits.read_limit:
            raise BadRequest(f"limit must be 1-{self.limits.read_limit}.")

    def deliveries_since(
        self, caller: Caller, cursor: int, limit: int = 100, hidden: Sequence[str] | None = None
    ) -> list[MailItem]:
        """The caller's deliveries past ``cursor`` in sequence order, marking nothing (streams).
        ``hidden``: ``hidden_targets(caller)`` when the caller already has it."""
        caller = as_agent(caller)
        self.check_read_options(limit=limit, after=cursor, wait=0)
        if hidden is None:
            hidden = self.directory.hidden_targets(caller)
        return self.store.mailbox.peek(caller.workspace, caller.agent, cursor, limit, hidden)

    def unread_count(self, caller: Caller) -> int:
        """How many of the caller's messages are unread (for a session: not counting another
        live session's). Decided from memory (``from_memory``), the count kept since it was last
        counted (see ``UnreadCounts``)."""
        caller = as_agent(caller)
        return self._unread(caller, self.directory.hidden_targets(caller))

    def _unread(self, caller: AgentCaller, hidden: Sequence[str]) -> int:
        workspace, agent = caller.workspace, caller.agent

        def count() -> int:
            return self.unread.count(
                workspace, agent, hidden, lambda: self.store.mailbox.unread_count(workspace, agent, hidden)
            )

        if memory_only():
            kept = self.unread.kept(workspace, agent, hidden)
            if kept is not None:
                count_now, ageing = kept
                if ageing:
                    refresh_ahead((self, workspace, agent, tuple(hidden)), count)
                return count_now
            store_needed()
        return count()

    def mailbox_position(self, caller: Caller) -> int:
        """The caller's newest delivery sequence number: a stream that starts now resumes after it."""
        caller = as_agent(caller)
        return self.store.mailbox.last_seq(caller.workspace, caller.agent)

    def _wait_for(
        self,
        caller: AgentCaller,
        take: Callable[[], list[MailItem]],
        wait: float,
        release: Callable[[], float | None] | None = None,
    ) -> list[MailItem]:
        """``take()`` now, or, with ``wait``, again each time the caller's mailbox changes until
        it finds something or the wait ends. ``release``: seconds until held mail is let through
        (no send marks that moment, so the wait looks again then by itself)."""
        if wait <= 0:
            return take()
        deadline = time.monotonic() + wait
        # Subscribe before the first look, so mail committed in between still wakes us.
        with self.events.subscribe(caller.workspace, caller.agent) as subscription:
            while True:
                items = take()
                remaining = deadline - time.monotonic()
                if items or remaining <= 0 or self.events.closed:  # closed: the hub is stopping
                    return items
                due = release() if release is not None else None
                subscription.wait(remaining if due is None else min(remaining, due + 0.01))

    def _take(
        self, caller: AgentCaller, peek: bool, after: int | None, limit: int, hidden: Sequence[str]
    ) -> list[MailItem]:
        if peek:
            return self.store.mailbox.peek(caller.workspace, caller.agent, after, limit, hidden)
        return self.store.mailbox.claim(caller.workspace, caller.agent, after, limit, self.clock(), hidden)

    def inbox(self, caller: Caller, query: InboxQuery = InboxQuery()) -> list[MailItem]:
        """The newest messages of the caller's mailbox (unacked unless asked), without marking."""
        caller = as_agent(caller)
        self._check_limit(query.limit)
        return self.store.mailbox.newest(caller.workspace, caller.agent, query.include_acked, query.limit)

    def ack(self, caller: Caller, message_ids: Sequence[str]) -> AckResult:
        """Mark these messages of the caller's mailbox acknowledged (handled; read too)."""
        caller = as_agent(caller)
        return AckResult(acked=self._mark(caller, message_ids, self.store.mailbox.ack, "acknowledge", "acknowledged"))

    def mark_read(self, caller: Caller, message_ids: Sequence[str]) -> MarkResult:
        """Mark these messages of the caller's mailbox read (acknowledged ones stay so)."""
        caller = as_agent(caller)
        return MarkResult(
            marked=self._mark(caller, message_ids, self.store.mailbox.mark_read, "mark read", "marked read")
        )

    def _mark(
        self,
        caller: AgentCaller,
        message_ids: Sequence[str],
        mark: Callable[[str, str, Sequence[str], datetime], list[str]],
        verb: str,
        done: str,
    ) -> list[str]:
        """``mark`` these messages, all or (when any is not in the mailbox) none; the ids marked."""
        check_message_ids(message_ids, verb)
        missing = mark(caller.workspace, caller.agent, message_ids, self.clock())
        self.unread.changed(caller.workspace, caller.agent)
        if missing:
            raise UnknownMessage(
                f"not in {caller.agent}'s mailbox: {', '.join(missing)}; nothing was {done}.", missing=missing
            )
        return list(dict.fromkeys(message_ids))
