"""Sending a message, in the steps every send takes:

1. check the request (recipients, parts, subject, idempotency key), and answer a repeated
   idempotency key with the original result;
2. resolve the recipients (``recipients``), and refuse the whole send when it cannot reach every
   one of them as asked (an address that names nobody, a channel that does not exist or is not
   the sender's, no live session where the address names one or ``require_live`` asks for one);
3. let the guards hold what a loop or a flood would surface (``holds``);
4. store the message and one delivery per recipient, in one commit;
5. publish a mailbox signal for each recipient once it is committed;
6. say, per recipient, what really happened (the outcome).

Bad input fails the whole send before anything is stored; the result is given only once the
message is durable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from callboard.address import Address, ChannelAddress, parse_addresses
from callboard.errors import (
    BadRequest,
    CallboardError,
    IdempotencyConflict,
    NoLiveSession,
    TooLarge,
    UnknownMessage,
    UnknownRecipient,
    listed,
)
from callboard.limits import Limits
from callboard.model import Caller, Held, Message, Part, RecipientOutcome, SendResult, built, new_id
from callboard.pending import Pending, completed
from callboard.remotes import RemoteAgent
from callboard.requests import SendRequest
from callboard.service.content import (
    check_idempotency_key,
    check_message_id,
    clean_subject,
    message_parts,
    request_hash,
)
from callboard.service.directory import Directory
from callboard.service.events import MailboxEvents, PushedDelivery
from callboard.service.from_memory import NotInMemory, memory_only, store_needed
from callboard.service.holds import Guards
from callboard.service.identity_gate import AgentCaller, as_agent
from callboard.service.recipients import Recipients, Target
from callboard.service.remotes import Remotes
from callboard.service.status import visible_message
from callboard.service.unread_counts import UnreadCounts
from callboard.store.base import Store
from callboard.store.records import DuplicateIdempotencyKey, NewDelivery, RecipientsGone, TaskWrite
from callboard.tasks import TASK_KEY_PREFIX

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CheckedSend:
    """A send's request, checked: its addresses parsed, its text and parts one list of parts."""

    addresses: list[Address]
    parts: list[Part]
    subject: str | None
    request: SendRequest
    fingerprint: str | None  # only a keyed send can be repeated, so only it needs its fingerprint


@dataclass(frozen=True, slots=True)
class _Decided:
    """What a send was decided to be, before it is stored."""

    caller: AgentCaller
    request: CheckedSend
    message: Message
    targets: list[Target]
    result: SendResult
    task: TaskWrite | None = None  # the task's change the message carries (``delivery.tasking``)


class Sending:
    """The send path: decides now, stores, and answers once the store committed."""

    def __init__(
        self,
        store: Store,
        directory: Directory,
        recipients: Recipients,
        guards: Guards,
        events: MailboxEvents,
        limits: Limits,
        clock: Callable[[], datetime],
        unread: UnreadCounts,
        remotes: Remotes | None = None,
    ) -> None:
        self.store = store
        self.unread = unread  # each recipient's kept unread count goes up as the send commits
        self.remotes = remotes
        self.directory = directory
        self.recipients = recipients
        self.guards = guards
        self.events = events
        self.limits = limits
        self.clock = clock

    def send(self, caller: Caller, request: SendRequest) -> SendResult:
        """Store a message for each recipient and say, per recipient, what really happened, once
        it is durable (``submit``, waited for)."""
        return self.submit(caller, request).result()

    def submit(
        self,
        caller: Caller,
        request: SendRequest,
        *,
        task: Callable[[Message], TaskWrite] | None = None,
        task_id: str | None = None,
    ) -> Pending[SendResult]:
        """``send`` for a server: checks and decides now (bad input raises at once), and returns
        a future that resolves once the message is durable, so no thread waits on the commit.
        A task's mail (``tasking``) names its task (``task_id``), and ``task(message)`` gives
        the task's change to store in the same transaction; the answer then fails with
        TaskConflict when the task changed meanwhile."""
        caller = as_agent(caller)
        # 1. check, and answer a repeated key with the original
        checked = self._checked(request)
        if checked.request.idempotency_key is not None and not memory_only():
            earlier = self.store.sent.find_idempotent(caller.workspace, caller.agent, checked.request.idempotency_key)
            if earlier is not None:
                return completed(_repeat(earlier.request_hash, earlier.result, checked))
        # Decided from memory (``from_memory``), a keyed send is not looked up first: a repeat
        # is told by the store when it commits (see ``_committed``), and a send refused here
        # is decided again where the store may be read, so that a repeat gets its original.
        try:
            now = self.clock()
            message, targets, remote, write = self._decide(caller, checked, now, task, task_id)
        except CallboardError:
            if checked.request.idempotency_key is not None and memory_only():
                raise NotInMemory from None
            raise
        # 3. hold what a loop or a flood would surface (its last step: the first that changes
        # anything), and 6. say what happened to each
        holds = self.guards.decide(caller.workspace, caller.agent, [t.agent for t in targets], now)
        outcomes = [_outcome(t, holds.get(t.agent)) for t in targets]
        if remote is not None:
            outcomes = [Remotes.outcome(o, remote) for o in outcomes]
        result = built(
            SendResult,
            message_id=message.id,
            thread_id=message.thread_id,
            created_at=now,
            recipients=outcomes,
            duplicate=False,
        )
        decided = _Decided(caller, checked, message, targets, result, write)
        # 4. store, in one commit; 5. publish once committed (``_committed``)
        self.unread.sending(caller.workspace, [t.agent for t in targets])
        try:
            stored = self.store.submit_message(
                message,
                _deliveries(targets, holds),
                result,
                checked.request.idempotency_key,
                checked.fingerprint,
                write,
            )
        except BaseException:
            self.unread.sent(caller.workspace, _pushed_to(targets), committed=False)
            raise
        answer: Pending[SendResult] = Pending()
        answer.set_running_or_notify_cancel()
        stored.add_done_callback(lambda done: self._committed(decided, done, answer))
        return answer

    def _decide(
        self,
        caller: AgentCaller,
        checked: CheckedSend,
        now: datetime,
        task: Callable[[Message], TaskWrite] | None,
        task_id: str | None,
    ) -> tuple[Message, list[Target], RemoteAgent | None, TaskWrite | None]:
        """The message, whom it reaches and the task it carries; the sender exists from here
        (from its first send that passed every check: a refused send creates nobody)."""
        thread = self._thread(caller, checked.request.thread_id, checked.request.reply_to)
        # 2. resolve the recipients, and refuse a send that cannot reach them all as asked
        targets = self.recipients.resolve(caller, checked.addresses, now)
        _check_live(checked, targets)
        # Mail to an outside A2A agent is a task, sent by a pump (``remotes``).
        remote = self._remote(caller, targets)
        if remote is not None:
            task_id, task = self._remote_task(caller, remote, thread, task_id, task)
        message = self._message(caller, checked, thread, now, task_id)
        write = task(message) if task is not None else None
        self.directory.enter(caller)
        return message, targets, remote, write

    def _remote(self, caller: Caller, targets: list[Target]) -> RemoteAgent | None:
        """The outside agent the send goes to, if any; asked only about agents with no live
        session (an outside agent has none), so other sends pay nothing for it."""
        if self.remotes is None:
            return None
        remote = self.remotes.remote_among(caller, [t.agent for t in targets if not t.sessions and t.channel is None])
        if remote is not None and len(targets) > 1:
            others = listed([t.agent for t in targets if t.agent != remote.name])
            raise BadRequest(
                f"{remote.name} is an outside A2A agent: mail to it is a task of its own. Send it to "
                f"{remote.name} alone, and to {others} in another message. Nothing was sent."
            )
        return remote

    def _remote_task(
        self,
        caller: AgentCaller,
        remote: RemoteAgent,
        thread: str | None,
        task_id: str | None,
        task: Callable[[Message], TaskWrite] | None,
    ) -> tuple[str | None, Callable[[Message], TaskWrite]]:
        """The task mail to an outside agent carries, with its outbox row: a plain send's new
        task (or follow-up), or a task's own mail (opened, followed up, canceled)."""
        if task is None:
            assert self.remotes is not None, "the remote was found by them (_remote)"
            return self.remotes.task_for(caller, remote, thread)
        return task_id, Remotes.sent_out(task, remote)

    def _checked(self, request: SendRequest) -> CheckedSend:
        """The request checked against the limits (too_large, bad_request), nothing looked up."""
        addresses = parse_addresses(request.to if isinstance(request.to, str) else list(request.to))
        if len(addresses) > self.limits.recipients:
            raise TooLarge(f"{len(addresses)} recipients; the limit is {self.limits.recipients}.")
        content = message_parts(request.text, request.parts, self.limits)
        subject = clean_subject(request.subject, self.limits)
        key = request.idempotency_key
        check_idempotency_key(key, self.limits)
        fingerprint = None
        if key is not None:
            fingerprint = request_hash(
                addresses, subject, content, request.thread_id, request.reply_to, request.require_live, request.urgent
            )
        return CheckedSend(addresses, content, subject, request, fingerprint)

    def _thread(self, caller: AgentCaller, thread_id: str | None, reply_to: str | None) -> str | None:
        """A reply joins its parent's thread; a new message starts its own (its id)."""
        if thread_id is not None or reply_to is not None:
            store_needed()
        if thread_id is not None:
            check_message_id(thread_id, "thread id")
            # A thread that exists is joined only by a party to it; a new id starts a new thread.
            if self.store.sent.thread_party(caller.workspace, thread_id, caller.agent) is False:
                raise UnknownMessage(
                    f"no message of thread {thread_id} was sent by or to {caller.agent}; "
                    "reply to a message you got (reply_to), or leave the thread out."
                )
        if reply_to is None:
            return thread_id
        parent = visible_message(self.store.sent, caller, reply_to)
        return thread_id or parent.thread_id

    def _message(
        self, caller: Caller, checked: CheckedSend, thread_id: str | None, now: datetime, task_id: str | None
    ) -> Message:
        message_id = new_id()
        sender = self.directory.session_by_id(caller.workspace, caller.session_id) if caller.session_id else None
        # Every field was checked before: build the model without validating it again.
        return built(
            Message,
            id=message_id,
            workspace=caller.workspace,
            sender=caller.agent,
            sender_session=caller.session_id,
            sender_address=sender.address if sender else None,
            sender_terminal=sender.terminal if sender else None,
            recipients=[str(a) for a in checked.addresses],
            channel=next((a.name for a in checked.addresses if isinstance(a, ChannelAddress)), None),
            subject=checked.subject,
            parts=checked.parts,
            thread_id=thread_id or message_id,
            reply_to=checked.request.reply_to,
            created_at=now,
            urgent=checked.request.urgent,
            task_id=task_id,
        )

    def _committed(self, decided: _Decided, done: Pending[dict[str, int]], answer: Pending[SendResult]) -> None:
        """The store's answer: the result once committed, the original's for a key a racing
        send committed first, unknown_recipient for a recipient deleted meanwhile, or the
        store's error."""
        caller, checked = decided.caller, decided.request
        self.unread.sent(caller.workspace, _pushed_to(decided.targets), committed=done.exception() is None)
        try:
            seqs = done.result()
        except DuplicateIdempotencyKey:
            earlier = self.store.sent.find_idempotent(
                caller.workspace, caller.agent, checked.request.idempotency_key or ""
            )
            assert earlier is not None
            _settle(answer, lambda: _repeat(earlier.request_hash, earlier.result, checked))
        except RecipientsGone as gone:  # deleted since the recipients were resolved
            answer.set_exception(
                UnknownRecipient(
                    f"agent {listed(gone.names)} was deleted while this message was being sent; nothing was stored.",
                    addresses=gone.names,
                )
            )
        except BaseException as error:
            answer.set_exception(error)
        else:
            new_agents = [t.agent for t in decided.targets if t.new_agent]
            self.directory.agents_changed(caller.workspace, new_agents, added=True)
            self._publish(decided, seqs)
            answer.set_result(decided.result)

    def _publish(self, decided: _Decided, seqs: dict[str, int]) -> None:
        """Wake each recipient's readers (a stream reading a mailbox gets the delivery itself),
        and the subscribers of the task the message moved."""
        workspace, targets = decided.caller.workspace, decided.targets
        agents = [t.agent for t in targets]
        task = decided.task.task if decided.task is not None else None
        woken: list[tuple[str, PushedDelivery | None]] = [(TASK_KEY_PREFIX + task.id, None)] if task else []
        if not self.events.has_streams(workspace, agents):  # serialise only for a reader
            self.events.publish_many(workspace, [(agent, None) for agent in agents] + woken)
            return
        message_json = decided.message.model_dump_json()
        task_id, task_state = (task.id, task.state.value) if task else (None, None)
        pushed: list[tuple[str, PushedDelivery | None]] = [
            (
                t.agent,
                PushedDelivery(
                    seqs[t.agent],
                    t.stored_state.value,
                    message_json,
                    t.target.id if t.target else None,
                    task_id,
                    task_state,
                ),
            )
            for t in targets
        ]
        self.events.publish_many(workspace, pushed + woken)


def _repeat(stored_hash: str, result: SendResult, checked: CheckedSend) -> SendResult:
    """The original result for a repeated idempotency key, or idempotency_conflict."""
    if stored_hash != checked.fingerprint:
        raise IdempotencyConflict(
            f"idempotency key {checked.request.idempotency_key!r} was used for a different message; "
            "use a new key for a new message."
        )
    return result.model_copy(update={"duplicate": True})


def _check_live(checked: CheckedSend, targets: list[Target]) -> None:
    """Refuse the send, storing nothing, when a recipient has no live session and
    ``require_live`` asks for one."""
    if not checked.request.require_live:
        return
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


def _outcome(target: Target, held: Held | None = None) -> RecipientOutcome:
    """What the send did for one recipient, in words where it did not simply deliver."""
    if held is not None:  # stored and queued, and said so: it is not surfaced before its time
        until = held.until  # not strftime (a C call through the locale): every held send says it
        reason = f"held until {until.hour:02d}:{until.minute:02d}:{until.second:02d}Z: {held.why}"
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


def _deliveries(targets: list[Target], holds: dict[str, Held]) -> list[NewDelivery]:
    return [
        NewDelivery(
            recipient=t.agent,
            state=t.stored_state,
            channel=t.channel,
            sessions=[s.address for s in t.sessions],
            target_session=t.target.id if t.target else None,
            create_agent=t.new_agent,
            held_until=holds[t.agent].until.timestamp() if t.agent in holds else None,
            held_reason=holds[t.agent].reason if t.agent in holds else None,
        )
        for t in targets
    ]


def _pushed_to(targets: list[Target]) -> list[tuple[str, str | None]]:
    """Each recipient and the session its delivery is pushed to (see ``UnreadCounts.sent``)."""
    return [(t.agent, t.target.id if t.target else None) for t in targets]


def _settle(future: Pending[T], compute: Callable[[], T]) -> None:
    try:
        future.set_result(compute())
    except BaseException as error:
        future.set_exception(error)
