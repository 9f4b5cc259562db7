"""What evidence moves a delivery between delivered, handed and surfaced: the rule, once.

- A hook's own output carrying the mail (session start, prompt, after a tool, stop): the
  client puts that output into the model's context as it returns → ``surfaced`` by "hook".
- A runner's take of mail for its CLI's next turn → ``handed`` to the runner's session; it
  becomes ``surfaced`` once the CLI took the turn's input (``confirm_surfaced``, evidence
  "turn"), and goes back like any handed mail when the runner's session ends first.
- A frame the session's messaging socket accepted, a waiter's wake → ``handed`` to that
  session: it has the mail, the model does not yet (a busy session keeps it for its next
  model request). It becomes ``surfaced`` on evidence that the model's context holds it: the
  session's transcript records a turn carrying it (``confirm_surfaced``, evidence
  "transcript").
- The client's receipts for a frame (Claude Code's ``peer_message_status``): ``held`` is
  recorded; ``expired``, ``refused``, ``denied`` or ``dropped`` mail never reached the model,
  so it goes back to the mailbox.
- Mail handed to a session that ends (or is replaced, or whose process is gone) before it
  surfaced goes back to the mailbox, unread: ``delivered`` when another live session of the
  agent can take it, else ``queued``; it then reaches the next session or reader once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from callboard.errors import BadRequest
from callboard.limits import DELIVERY_ERROR_CHARS
from callboard.model import SURFACE_PATHS, Caller, DeliveryEvent, DeliveryState, MarkResult, RecipientStatus
from callboard.procs import process_alive
from callboard.service.content import check_message_ids, check_text
from callboard.service.identity_gate import AgentCaller, as_agent

if TYPE_CHECKING:
    from callboard.service.directory import Directory
    from callboard.service.events import MailboxEvents
    from callboard.service.liveness import Liveness
    from callboard.store.base import Store

# Paths whose success hands mail to a session rather than putting it before the model.
HANDING_PATHS = frozenset({"socket", "waiter", "runner"})
# Evidence that the model's context holds handed mail.
# "turn": a runner's CLI took the mail as its turn's input (the adapter said so).
Evidence = Literal["transcript", "hook", "turn"]
EVIDENCE: tuple[Evidence, ...] = ("transcript", "hook", "turn")
# Receipts a client sends about a frame; those that say the model will never see it return it.
RECEIPTS = ("held", "delivered", "expired", "refused", "denied", "dropped")
RETURNING_RECEIPTS = frozenset({"expired", "refused", "denied", "dropped"})
# How each receipt is named in the history.
RECEIPT_EVENTS = {
    "held": "held",
    "delivered": "handed",
    "expired": "expired",
    "refused": "refused",
    "denied": "refused",
    "dropped": "expired",
}


def hands(via: str) -> bool:
    """Whether taking mail by ``via`` hands it to a session (True) or surfaces it (False)."""
    assert via in SURFACE_PATHS
    return via in HANDING_PATHS


def returned_state(other_live_sessions: int) -> DeliveryState:
    return DeliveryState.delivered if other_live_sessions else DeliveryState.queued


def with_derived_history(status: RecipientStatus) -> RecipientStatus:
    """The status's history with the steps its own timestamps tell (queued, delivered, read,
    acked) among the stored ones (handed, surfaced, returned, receipts), oldest first."""
    if status.state == "unknown_recipient":
        return status
    derived: list[DeliveryEvent] = []
    for kind, at in (
        ("queued", status.queued_at),
        ("delivered", status.delivered_at),
        ("read", status.read_at),
        ("acked", status.acked_at),
    ):
        if at is not None:
            derived.append(DeliveryEvent(at=at, event=kind))
    events = sorted([*derived, *status.history], key=lambda e: e.at)
    return status.model_copy(update={"history": events})


def named_sessions(events: Sequence[DeliveryEvent], names: dict[str, str]) -> list[DeliveryEvent]:
    """The events with each session id replaced by its address where known."""
    return [e.model_copy(update={"session": names.get(e.session, e.session)}) if e.session else e for e in events]


class Handover:
    """The service's side of handed mail: confirming it, receipts, sweeping back what dead
    sessions held, and naming it in a status."""

    def __init__(
        self,
        store: Store,
        directory: Directory,
        events: MailboxEvents,
        liveness: Liveness,
        clock: Callable[[], datetime],
    ) -> None:
        self.store = store
        self.directory = directory
        self.events = events
        self.liveness = liveness
        self.clock = clock

    def confirm_surfaced(self, caller: AgentCaller, message_ids: Sequence[str], evidence: str) -> MarkResult:
        """See Service.confirm_surfaced."""
        if evidence not in EVIDENCE:
            raise BadRequest(f"evidence must be one of {', '.join(EVIDENCE)}.")
        check_message_ids(message_ids, "confirm")
        marked = self.store.handing.confirm_surfaced(
            caller.workspace, caller.agent, message_ids, evidence, self.clock()
        )
        if marked:
            self.events.publish_many(caller.workspace, [(caller.agent, None)])
        return MarkResult(marked=marked)

    def record_receipt(
        self, caller: Caller, message_ids: Sequence[str], status: str, reason: str | None = None
    ) -> MarkResult:
        """What the caller's session's client reported about mail handed to it (Claude Code's
        ``peer_message_status``): recorded in each message's history; mail the model will never
        see (expired, refused, denied, dropped) goes back to the mailbox. The ids recorded."""
        caller = as_agent(caller)
        if status not in RECEIPTS:
            raise BadRequest(f"status must be one of {', '.join(RECEIPTS)}.")
        check_message_ids(message_ids, "record")
        if reason is not None:
            check_text(reason, DELIVERY_ERROR_CHARS, "reason")
        store = self.store
        now, session = self.clock(), caller.session_id
        recorded = [
            m
            for m in dict.fromkeys(message_ids)
            if store.handing.record_delivery_event(
                caller.workspace, caller.agent, m, RECEIPT_EVENTS[status], now, session, "socket", reason
            )
        ]
        if status in RETURNING_RECEIPTS and session is not None and recorded:
            # The session lives on (only its socket refused): its hooks can still take the mail.
            live = store.sessions.list_sessions(caller.workspace, caller.agent)
            others = sum(1 for s in live if self.liveness.is_live(s, now))
            why = f"the session's client reported it {status}" + (f": {reason}" if reason else "")
            if store.handing.return_handed(
                caller.workspace, caller.agent, session, returned_state(others), why, now, recorded
            ):
                self.events.publish_many(caller.workspace, [(caller.agent, None)])
        return MarkResult(marked=recorded)

    def named(self, workspace: str, status: RecipientStatus) -> RecipientStatus:
        """The status with its whole history, and sessions named agent@machine#pid."""
        ids = {e.session for e in status.history if e.session} | ({status.handed_to} if status.handed_to else set())
        names = {i: s.address for i in ids if (s := self.directory.session_by_id(workspace, i)) is not None}
        handed = status.handed_to if status.state == DeliveryState.handed else None
        handed_to = names.get(handed, handed) if handed is not None else None
        status = status.model_copy(update={"handed_to": handed_to, "history": named_sessions(status.history, names)})
        return with_derived_history(status)

    def return_stranded(self, workspace: str, agent: str, now: datetime) -> list[str]:
        """Return to the mailbox the agent's mail handed to sessions that are gone: ended, not
        known, or (past the liveness window) whose process no longer runs on this machine or,
        elsewhere, that stopped reporting. The ids returned."""
        store = self.store
        held_by = store.handing.handed_sessions(workspace, agent)
        if not held_by:
            return []
        live = [s for s in store.sessions.list_sessions(workspace, agent) if self.liveness.is_live(s, now)]
        returned: list[str] = []
        for session_id in held_by:
            reason = self._gone(workspace, session_id, now)
            if reason is None:
                continue
            others = sum(1 for s in live if s.id != session_id)
            returned += store.handing.return_handed(workspace, agent, session_id, returned_state(others), reason, now)
        if returned:
            self.events.publish_many(workspace, [(agent, None)])
        return returned

    def _gone(self, workspace: str, session_id: str, now: datetime) -> str | None:
        """Why the session can no longer put handed mail before its model, or None (it can)."""
        session = self.store.sessions.get_session(workspace, session_id)
        if session is None:
            return "its session is not known any more"
        if session.ended_at is not None:
            return "its session ended before the model took it"
        if self.liveness.is_live(session, now):
            return None
        if session.machine == self.liveness.machine:
            if process_alive(session.pid, session.proc_start):
                return None  # quiet, but there: a hooks-only session reports only on its turns
            return "its session's process is gone"
        return "its session stopped reporting"
