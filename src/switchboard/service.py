"""The mailbox's domain operations: the one place that decides and writes.

Every face (CLI, hub, MCP, hooks) calls these methods through a Client; rules about messages
live here once. The service validates input before touching the store, so a bad request
fails whole and writes nothing, and it publishes a mailbox signal after each commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from switchboard.address import (
    SEQ_MAX,
    AgentAddress,
    ChannelAddress,
    parse_addresses,
)
from switchboard.content import (
    Limits,
    check_idempotency_key,
    check_message_id,
    check_message_ids,
    clean_subject,
    message_parts,
    request_hash,
)
from switchboard.credentials import Credentials
from switchboard.delivery import holds as holds_of
from switchboard.delivery.handing import (
    Handover,
    hands,
)
from switchboard.directory import Directory
from switchboard.errors import (
    BadRequest,
    IdempotencyConflict,
    NoLiveSession,
    NotMember,
    TooLarge,
    UnknownMessage,
    UnknownRecipient,
    listed,
)
from switchboard.events import MailboxEvents, PushedDelivery
from switchboard.liveness import DEFAULT_WINDOW_SECONDS, Liveness, OpenSessions
from switchboard.model import (
    SURFACE_PATHS,
    UNSERVED_RUNTIME,
    AckResult,
    Caller,
    DeliveryState,
    Held,
    HeldMail,
    MailItem,
    MarkResult,
    Message,
    MessageStatus,
    Part,
    Reach,
    ReadResult,
    RecipientOutcome,
    RecipientStatus,
    SendResult,
    Session,
    Workspace,
    built,
    new_id,
    utcnow,
)
from switchboard.pending import Pending, completed
from switchboard.reach import AgentNames
from switchboard.store.base import DuplicateIdempotencyKey, NewDelivery, RecipientsGone, Store
from switchboard.store.opening import store_kind

T = TypeVar("T")


@dataclass(slots=True)
class _Target:
    """One agent a send will reach, and how it was addressed."""

    address: str
    agent: str
    channel: str | None
    sessions: list[Session]
    target: Session | None  # the live session its mail is pushed to
    new_agent: bool
    guess: str = ""  # for a new agent: the existing names it is close to (see _did_you_mean)


class Service(Directory):
    """The mailbox: sending and reading, on top of the directory of agents, channels and sessions."""

    def __init__(
        self,
        store: Store,
        *,
        machine: str,
        events: MailboxEvents | None = None,
        liveness_seconds: float = DEFAULT_WINDOW_SECONDS,
        limits: Limits = Limits(),
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.store = store
        self.machine = machine
        self.events = events if events is not None else MailboxEvents(store.change_counter)
        self.liveness = Liveness(machine, liveness_seconds)
        self.limits = limits
        self.clock = clock
        self._known_agents: set[tuple[str, str]] = set()
        self._sessions_read: dict[str, OpenSessions] = {}
        self._agent_names: dict[str, AgentNames] = {}
        self.handover = Handover(self)
        self.guards = holds_of.Guards(store)

    # --- callers -------------------------------------------------------------------------

    def has_entered(self, caller: Caller) -> bool:
        """Whether ``enter`` has nothing to do (no I/O: a server asks before every request)."""
        return (caller.workspace, caller.agent) in self._known_agents

    def enter(self, caller: Caller) -> None:
        """Create the caller's workspace and agent on first use (the identity rule named them).

        Cheap to call before every operation: an agent known to exist is not looked up again."""
        if self.has_entered(caller):
            return
        now = self.clock()
        self.store.ensure_workspace(caller.workspace, now)
        self.store.ensure_agent(caller.workspace, caller.agent, now)
        self._known_agents.add((caller.workspace, caller.agent))
        self._agents_changed(caller.workspace, [caller.agent], added=True)

    def list_workspaces(self) -> list[Workspace]:
        return self.store.list_workspaces()

    # --- what a server asks of the store it serves ----------------------------------------

    @property
    def store_kind(self) -> str:
        """ "postgresql" or "sqlite", as the hub's /health says."""
        return store_kind(self.store)

    def credentials(self, *, recheck_seconds: float | None = None) -> Credentials:
        """The tokens kept in this service's store, checked against it (a hub's door);
        ``recheck_seconds``: how long a token checked is trusted before the store is asked again."""
        return Credentials(self.store, self.clock, recheck_seconds=recheck_seconds)

    # --- sending -------------------------------------------------------------------------

    def send(self, caller: Caller, to: str | Sequence[str], text: str | None = None, **options: Any) -> SendResult:
        """Store a message for each recipient and say, per recipient, what really happened
        (``options`` as for ``submit_send``), once it is durable."""
        return self.submit_send(caller, to, text, **options).result()

    def submit_send(
        self,
        caller: Caller,
        to: str | Sequence[str],
        text: str | None = None,
        *,
        subject: str | None = None,
        parts: Sequence[Part | dict] = (),
        thread_id: str | None = None,
        reply_to: str | None = None,
        require_live: bool = False,
        idempotency_key: str | None = None,
        urgent: bool = False,
    ) -> Pending[SendResult]:
        """``send`` for a server: checks and decides now (bad input raises at once), and returns
        a future that resolves once the message is durable, so no thread waits on the commit."""
        addresses = parse_addresses(to if isinstance(to, str) else list(to))
        if len(addresses) > self.limits.recipients:
            raise TooLarge(f"{len(addresses)} recipients; the limit is {self.limits.recipients}.")
        content = message_parts(text, parts, self.limits)
        subject = clean_subject(subject, self.limits)
        check_idempotency_key(idempotency_key, self.limits)
        fingerprint = None  # only a keyed send can be repeated, so only it needs its fingerprint
        if idempotency_key is not None:
            fingerprint = request_hash(addresses, subject, content, thread_id, reply_to, require_live, urgent)
            earlier = self.store.find_idempotent(caller.workspace, caller.agent, idempotency_key)
            if earlier is not None:
                return completed(self._repeat(earlier.request_hash, fingerprint, earlier.result, idempotency_key))
        thread_id = self._thread(caller, thread_id, reply_to)

        now = self.clock()
        targets, unknown = self._resolve(caller, addresses, now)
        if unknown and (require_live or not targets):
            raise UnknownRecipient(
                " ".join(o.reason or o.address for o in unknown), addresses=[o.address for o in unknown]
            )
        if require_live:
            unreachable = [t for t in targets if not t.sessions]
            if unreachable:
                names = listed(
                    [
                        (t.address if t.channel is None else f"{t.agent} (in {t.address})")
                        + (" (never seen)" if t.new_agent else "")
                        for t in unreachable
                    ]
                )
                raise NoLiveSession(
                    f"no live session for {names}; nothing was sent. Send without --require-live to queue it.",
                    recipients=[t.agent for t in unreachable],
                )

        holds = self.guards.decide(caller.workspace, caller.agent, [t.agent for t in targets], now)
        message_id = new_id()
        sender = self.session_by_id(caller.workspace, caller.session_id) if caller.session_id else None
        # Every field was checked above: build the models without validating them again.
        message = built(
            Message,
            id=message_id,
            workspace=caller.workspace,
            sender=caller.agent,
            sender_session=caller.session_id,
            sender_address=sender.address if sender else None,
            sender_terminal=sender.terminal if sender else None,
            recipients=[str(a) for a in addresses],
            channel=next((a.name for a in addresses if isinstance(a, ChannelAddress)), None),
            subject=subject,
            parts=content,
            thread_id=thread_id or message_id,
            reply_to=reply_to,
            created_at=now,
            urgent=urgent,
        )
        outcomes = [self._outcome(t, holds.get(t.agent)) for t in targets] + unknown
        result = built(
            SendResult,
            message_id=message.id,
            thread_id=message.thread_id,
            created_at=now,
            recipients=outcomes,
            duplicate=False,
        )
        deliveries = [
            NewDelivery(
                recipient=t.agent,
                state=_stored_state(t),
                channel=t.channel,
                sessions=[s.address for s in t.sessions],
                target_session=t.target.id if t.target else None,
                create_agent=t.new_agent,
                held_until=holds[t.agent].until.timestamp() if t.agent in holds else None,
                held_reason=holds[t.agent].reason if t.agent in holds else None,
            )
            for t in targets
        ]
        stored = self.store.submit_message(message, deliveries, result, idempotency_key, fingerprint)
        answer: Pending[SendResult] = Pending()
        answer.set_running_or_notify_cancel()

        def committed(done: Pending[dict[str, int]]) -> None:
            try:
                seqs = done.result()
            except DuplicateIdempotencyKey:  # a racing send with the same key committed first
                earlier = self.store.find_idempotent(caller.workspace, caller.agent, idempotency_key or "")
                assert earlier is not None
                _settle(
                    answer,
                    lambda: self._repeat(earlier.request_hash, fingerprint, earlier.result, idempotency_key or ""),
                )
            except RecipientsGone as gone:  # deleted since _resolve found them
                answer.set_exception(
                    UnknownRecipient(
                        f"agent {listed(gone.names)} was deleted while this message was being sent; nothing was stored.",
                        addresses=gone.names,
                    )
                )
            except BaseException as error:
                answer.set_exception(error)
            else:
                agents = [t.agent for t in targets]
                self._agents_changed(caller.workspace, [t.agent for t in targets if t.new_agent], added=True)
                if self.events.has_streams(caller.workspace, agents):  # serialise only for a reader
                    message_json = message.model_dump_json()
                    pushed = [
                        (
                            t.agent,
                            PushedDelivery(
                                seqs[t.agent], _stored_state(t).value, message_json, t.target.id if t.target else None
                            ),
                        )
                        for t in targets
                    ]
                    self.events.publish_many(caller.workspace, pushed)
                else:
                    self.events.publish_many(caller.workspace, [(agent, None) for agent in agents])
                answer.set_result(result)

        stored.add_done_callback(committed)
        return answer

    @staticmethod
    def _repeat(stored_hash: str, fingerprint: str | None, result: SendResult, key: str) -> SendResult:
        if stored_hash != fingerprint:
            raise IdempotencyConflict(
                f"idempotency key {key!r} was used for a different message; use a new key for a new message."
            )
        return result.model_copy(update={"duplicate": True})

    def _thread(self, caller: Caller, thread_id: str | None, reply_to: str | None) -> str | None:
        """A reply joins its parent's thread; a new message starts its own (its id)."""
        if thread_id is not None:
            check_message_id(thread_id, "thread id")
            # A thread that exists is joined only by a party to it; a new id starts a new thread.
            if self.store.thread_party(caller.workspace, thread_id, caller.agent) is False:
                raise UnknownMessage(
                    f"no message of thread {thread_id} was sent by or to {caller.agent}; "
                    "reply to a message you got (reply_to), or leave the thread out."
                )
        if reply_to is None:
            return thread_id
        parent = self._visible_message(caller, reply_to)
        return thread_id or parent.thread_id

    def _resolve(
        self, caller: Caller, addresses: Sequence[AgentAddress | ChannelAddress], now: datetime
    ) -> tuple[list[_Target], list[RecipientOutcome]]:
        """Each address's agent and the live session its mail is pushed to (the newest one the
        address allows: see ``reach``). An address naming a machine or a session that no live
        session answers fails the whole send (no_live_session): it names a place that cannot
        take the mail, and the sender should know before anything is stored."""
        targets: dict[str, _Target] = {}
        unknown: list[RecipientOutcome] = []
        unreachable: list[Reach] = []
        for address in addresses:
            if isinstance(address, ChannelAddress):
                members = self._post_members(caller, address)
                if not members:
                    unknown.append(_unknown(address, f"#{address.name} has no members besides you."))
                new_members = [m for m in members if m not in targets]
                live = self._live_sessions_by_agent(caller, new_members, now) if new_members else {}
                written = str(address)
                for member in new_members:
                    targets[member] = _Target(written, member, address.name, live[member], _newest(live[member]), False)
                continue
            if address.name in targets:
                continue
            exists = self._agent_exists(caller.workspace, address.name)
            if not exists and address.machine is None and not caller.person:
                # Only a person's credential creates an agent by sending: an agent token's typo
                # would otherwise make a mailbox nobody reads.
                unknown.append(
                    _unknown(
                        address,
                        f"no agent named {address.name} exists (an agent token creates none by sending; "
                        "'switchboard agent list' shows those that do)."
                        + self._did_you_mean(caller.workspace, address.name),
                    )
                )
                continue
            if address.machine is None:
                sessions = self._live_sessions_by_agent(caller, [address.name], now)[address.name] if exists else []
                guess = "" if exists else self._did_you_mean(caller.workspace, address.name)
                targets[address.name] = _Target(
                    str(address), address.name, None, sessions, _newest(sessions), not exists, guess
                )
                continue
            if not exists:
                unknown.append(
                    _unknown(
                        address,
                        f"no agent named {address.name} exists." + self._did_you_mean(caller.workspace, address.name),
                    )
                )
                continue
            found, sessions = self._reach(caller, address, now)
            if found.state == "unknown_address":
                unknown.append(_unknown(address, found.reason))
                continue
            if found.session is None:
                unreachable.append(found)
                continue
            live = [s for s in sessions if s.live and s.address in found.sessions]
            target = next(s for s in live if s.address == found.session)
            targets[address.name] = _Target(str(address), address.name, None, live, target, False)
        if unreachable:
            raise NoLiveSession(
                " ".join(r.reason[:1].upper() + r.reason[1:] for r in unreachable)
                + " Nothing was sent; send to the agent's name to queue it in its mailbox.",
                recipients=[r.address for r in unreachable],
                reach=[r.model_dump(mode="json") for r in unreachable],
            )
        return list(targets.values()), unknown

    def _post_members(self, caller: Caller, address: ChannelAddress) -> list[str]:
        channel = self.store.get_channel(caller.workspace, address.name, caller.agent)
        if channel is None:
            return []
        if not channel.joined:
            how = (
                f"it is invite-only: ask its creator {channel.created_by} or a person to add you"
                if channel.invite_only
                else f"join it first with 'switchboard channel join {address.name}'"
            )
            raise NotMember(f"{caller.agent} is not a member of #{address.name}; {how}. Nothing was sent.")
        return [m for m in self.store.channel_member_names(caller.workspace, address.name) if m != caller.agent]

    @staticmethod
    def _outcome(target: _Target, held: Held | None = None) -> RecipientOutcome:
        if held is not None:  # stored and queued, and said so: it is not surfaced before its time
            reason = f"held until {held.until:%H:%M:%S}Z: {held.why}"
        elif target.new_agent:
            reason = f"no agent named {target.agent} had been seen; it was created and will get this when it reads."
            reason += target.guess
        elif not target.sessions:
            reason = f"{target.agent} has no live session; stored until it reads."
        else:
            reason = None
        return built(
            RecipientOutcome,
            address=target.address,
            agent=target.agent,
            channel=target.channel,
            state="delivered" if target.sessions else "queued",
            sessions=[s.address for s in target.sessions],
            session=target.target.address if target.target else None,
            new_agent=target.new_agent,
            held=held,
            reason=reason,
        )

    # --- reading -------------------------------------------------------------------------

    def read(
        self,
        caller: Caller,
        *,
        peek: bool = False,
        after: int | None = None,
        limit: int = 100,
        wait: float = 0.0,
    ) -> ReadResult:
        """Drain (claim and mark read) the caller's unread mail, or peek without marking.

        With ``after``, resume from a cursor: every delivery past that sequence number.
        With ``wait``, block up to that many seconds until something arrives.
        """
        self.check_read_options(limit=limit, after=after, wait=wait)
        # Where the mailbox stood before looking: mail that lands while we look is past it, so a
        # reader that resumes from an empty read's cursor still gets that mail.
        position = after if after is not None else self.store.last_seq(caller.workspace, caller.agent)
        hidden = self.hidden_targets(caller)  # once per read: the take and the unread count agree
        items = self._wait_for(caller, lambda: self._take(caller, peek, after, limit, hidden), wait)
        cursor = items[-1].seq if items else position
        unread = self.store.unread_count(caller.workspace, caller.agent, hidden)
        return ReadResult(items=items, cursor=cursor, unread=unread, held=self.held_mail(caller))

    def held_mail(self, caller: Caller) -> list[HeldMail]:
        """The caller's mail a loop or flood guard holds now, and why (see holds)."""
        return holds_of.held_mail(self.store, caller.workspace, [caller.agent], self.clock())

    def surface(
        self,
        caller: Caller,
        *,
        via: str,
        urgent_only: bool = False,
        limit: int = 100,
        wait: float = 0.0,
        peek: bool = False,
    ) -> ReadResult:
        """Take the caller's mail that is neither read nor yet put before the agent, and mark it
        surfaced by ``via`` (a SurfacePath): what a hook, a waiter or a session's messaging
        socket puts into a coding agent's context, each message once. A hook's output is in the
        model's context once the hook returns: surfaced. A socket frame or a waiter's wake
        hands the mail to the caller's session, to be confirmed surfaced by the session's
        transcript (``confirm_surfaced``), or returned if the session ends first (``handing``).
        It stays unread, so ``read`` still returns it. With ``urgent_only``, only mail sent
        urgent; with ``wait``, block up to that many seconds until some arrives; with ``peek``,
        mark nothing (a look before deciding to surface)."""
        if via not in SURFACE_PATHS:
            raise BadRequest(f"via must be one of {', '.join(SURFACE_PATHS)}.")
        self.check_read_options(limit=limit, after=None, wait=wait)
        # Mail a gone session held comes back first, so this take can have it (once).
        self.handover.return_stranded(caller.workspace, caller.agent, self.clock())
        position = self.store.last_seq(caller.workspace, caller.agent)
        hidden = self.hidden_targets(caller)
        hand = hands(via)
        items = self._wait_for(
            caller,
            lambda: self.store.surface(
                caller.workspace,
                caller.agent,
                via,
                urgent_only,
                limit,
                self.clock(),
                peek,
                hidden,
                session=caller.session_id if hand else None,
                hand=hand,
            ),
            wait,
            release=lambda: self._next_release(caller),
        )
        cursor = items[-1].seq if items else position
        unread = self.store.unread_count(caller.workspace, caller.agent, hidden)
        return ReadResult(items=items, cursor=cursor, unread=unread, held=self.held_mail(caller))

    def _next_release(self, caller: Caller) -> float | None:
        """Seconds until the first of the caller's held mail is let through (None: none held)."""
        held = self.store.held_mail(caller.workspace, [caller.agent], self.clock())
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
        self.check_read_options(limit=limit, after=cursor, wait=0)
        if hidden is None:
            hidden = self.hidden_targets(caller)
        return self.store.peek(caller.workspace, caller.agent, cursor, limit, hidden)

    def unread_count(self, caller: Caller) -> int:
        """How many of the caller's messages are unread (for a session: not counting another
        live session's)."""
        return self.store.unread_count(caller.workspace, caller.agent, self.hidden_targets(caller))

    def mailbox_position(self, caller: Caller) -> int:
        """The caller's newest delivery sequence number: a stream that starts now resumes after it."""
        return self.store.last_seq(caller.workspace, caller.agent)

    def _wait_for(
        self,
        caller: Caller,
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

    def _take(self, caller: Caller, peek: bool, after: int | None, limit: int, hidden: Sequence[str]) -> list[MailItem]:
        if peek:
            return self.store.peek(caller.workspace, caller.agent, after, limit, hidden)
        return self.store.claim(caller.workspace, caller.agent, after, limit, self.clock(), hidden)

    def inbox(self, caller: Caller, *, include_acked: bool = False, limit: int = 50) -> list[MailItem]:
        """The newest messages of the caller's mailbox (unacked unless asked), without marking."""
        self._check_limit(limit)
        return self.store.mailbox(caller.workspace, caller.agent, include_acked, limit)

    def ack(self, caller: Caller, message_ids: Sequence[str]) -> AckResult:
        """Mark these messages of the caller's mailbox acknowledged (handled; read too)."""
        return AckResult(acked=self._mark(caller, message_ids, self.store.ack, "acknowledge", "acknowledged"))

    def mark_read(self, caller: Caller, message_ids: Sequence[str]) -> MarkResult:
        """Mark these messages of the caller's mailbox read (acknowledged ones stay so)."""
        return MarkResult(marked=self._mark(caller, message_ids, self.store.mark_read, "mark read", "marked read"))

    def _mark(
        self,
        caller: Caller,
        message_ids: Sequence[str],
        mark: Callable[[str, str, Sequence[str], datetime], list[str]],
        verb: str,
        done: str,
    ) -> list[str]:
        """``mark`` these messages, all or (when any is not in the mailbox) none; the ids marked."""
        check_message_ids(message_ids, verb)
        missing = mark(caller.workspace, caller.agent, message_ids, self.clock())
        if missing:
            raise UnknownMessage(
                f"not in {caller.agent}'s mailbox: {', '.join(missing)}; nothing was {done}.", missing=missing
            )
        return list(dict.fromkeys(message_ids))

    def message_status(self, caller: Caller, message_id: str) -> MessageStatus:
        """Per recipient, the state reached and when each state was reached.

        The sender sees every recipient; a recipient sees only its own row."""
        message = self._visible_message(caller, message_id)
        statuses = self.store.delivery_statuses(caller.workspace, message_id)
        handed = [s.agent for s in statuses if s.state == DeliveryState.handed and s.agent]
        if handed and any([self.handover.return_stranded(caller.workspace, agent, self.clock()) for agent in handed]):
            statuses = self.store.delivery_statuses(caller.workspace, message_id)
        statuses = [self.handover.named(caller.workspace, s) for s in statuses]
        if message.sender == caller.agent:
            result = self.store.send_result(caller.workspace, message_id)
            by_agent = {o.agent: o.address for o in result.recipients} if result else {}
            statuses = [s.model_copy(update={"address": by_agent.get(s.agent, s.address)}) for s in statuses]
            statuses += [
                RecipientStatus(address=o.address, state="unknown_recipient")
                for o in (result.recipients if result else [])
                if o.state == "unknown_recipient"
            ]
        else:
            statuses = [s for s in statuses if s.agent == caller.agent]
        now = self.clock()
        return MessageStatus(
            message_id=message.id,
            sender=message.sender,
            subject=message.subject,
            thread_id=message.thread_id,
            created_at=message.created_at,
            recipients=[holds_of.shown(s, message.sender, now) for s in self._with_reach(caller, statuses)],
        )

    # --- handed mail (the rule: ``handing``) ----------------------------------------------------

    def confirm_surfaced(self, caller: Caller, message_ids: Sequence[str], evidence: str) -> MarkResult:
        """Those of these messages handed to a session of the caller's agent are in its model's
        context now: ``evidence`` says how that is known ("transcript": the session's transcript
        recorded a turn carrying them). Ids not handed (surfaced already, read, another agent's)
        are passed over. The ids marked surfaced."""
        return self.handover.confirm_surfaced(caller, message_ids, evidence)

    def record_receipt(
        self, caller: Caller, message_ids: Sequence[str], status: str, reason: str | None = None
    ) -> MarkResult:
        """What the caller's session's client reported about mail handed to it (Claude Code's
        ``peer_message_status``): recorded in each message's history; mail the model will never
        see (expired, refused, denied, dropped) goes back to the mailbox. The ids recorded."""
        return self.handover.record_receipt(caller, message_ids, status, reason)

    def end_session(self, caller: Caller, session_id: str) -> Session:
        """End the session; mail handed to it and not surfaced goes back to the mailbox."""
        session = super().end_session(caller, session_id)
        self.handover.return_stranded(caller.workspace, caller.agent, self.clock())
        return session

    def register_session(self, caller: Caller, **options: Any) -> Session:
        """Register (see Directory); a session this one replaced gives back its handed mail."""
        session = super().register_session(caller, **options)
        self.handover.return_stranded(caller.workspace, caller.agent, self.clock())
        return session

    def _visible_message(self, caller: Caller, message_id: str) -> Message:
        check_message_id(message_id)
        message = self.store.get_message(caller.workspace, message_id)
        if message is not None and (
            message.sender == caller.agent
            or any(s.agent == caller.agent for s in self.store.delivery_statuses(caller.workspace, message_id))
        ):
            return message
        raise UnknownMessage(f"no message {message_id} sent by or to {caller.agent}.")


def _unknown(address: AgentAddress | ChannelAddress, reason: str) -> RecipientOutcome:
    return RecipientOutcome(address=str(address), state="unknown_recipient", reason=reason)


def _settle(future: Pending[T], compute: Callable[[], T]) -> None:
    try:
        future.set_result(compute())
    except BaseException as error:
        future.set_exception(error)


def _newest(sessions: Sequence[Session]) -> Session | None:
    """The newest of these sessions, among those the agent's own client keeps when there are any:
    one a sender's push registered (``UNSERVED_RUNTIME``) reports only when pushed into, and mail
    aimed at it would wait there, hidden from the agent's other sessions."""
    kept = [s for s in sessions if s.runtime != UNSERVED_RUNTIME]
    return max(kept or sessions, key=lambda s: s.started_at, default=None)


def _stored_state(target: _Target) -> DeliveryState:
    return DeliveryState.delivered if target.sessions else DeliveryState.queued
