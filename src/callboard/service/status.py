"""What happened to a message, per recipient, as its sender or a recipient may see it.

A message is visible to its sender and its recipients only: to any other agent it does not exist
(unknown_message), so an id cannot be used to learn who wrote to whom. A person who names no
agent (the embedded store on one's own machine, a user or admin token) sees any message of the
workspace as its sender does: that credential may act as any of its agents anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from callboard.errors import UnknownMessage
from callboard.model import Caller, DeliveryState, Message, MessageStatus, RecipientStatus
from callboard.service import holds
from callboard.service.content import check_message_id
from callboard.service.handing import Handover
from callboard.service.presence import Presence
from callboard.store.parts.sent import SentPart


def visible_message(sent: SentPart, caller: Caller, message_id: str) -> Message:
    """The message, when the caller sent or received it (a person who names no agent: any)."""
    check_message_id(message_id)
    message = sent.get_message(caller.workspace, message_id)
    if message is not None and (
        (caller.agent is None and caller.person)
        or message.sender == caller.agent
        or any(s.agent == caller.agent for s in sent.delivery_statuses(caller.workspace, message_id))
    ):
        return message
    if caller.agent is None:
        raise UnknownMessage(f"no message {message_id} in workspace {caller.workspace}.")
    raise UnknownMessage(f"no message {message_id} sent by or to {caller.agent}.")


class Statuses:
    """Each recipient's state, its history and, while it waits, whether it can be reached."""

    def __init__(self, sent: SentPart, handover: Handover, presence: Presence, clock: Callable[[], datetime]) -> None:
        self.sent = sent
        self.handover = handover
        self.presence = presence
        self.clock = clock

    def message_status(self, caller: Caller, message_id: str) -> MessageStatus:
        """Per recipient, the state reached and when each state was reached.

        The sender sees every recipient (and so does a person who names no agent); a recipient
        sees only its own row."""
        message = visible_message(self.sent, caller, message_id)
        statuses = self._delivered(caller, message_id)
        if caller.agent is None or message.sender == caller.agent:
            statuses = self._as_addressed(caller, message_id, statuses)
        else:
            statuses = [s for s in statuses if s.agent == caller.agent]
        now = self.clock()
        return MessageStatus(
            message_id=message.id,
            sender=message.sender,
            subject=message.subject,
            thread_id=message.thread_id,
            created_at=message.created_at,
            recipients=[holds.shown(s, message.sender, now) for s in self.presence.with_reach(caller, statuses)],
        )

    def _delivered(self, caller: Caller, message_id: str) -> list[RecipientStatus]:
        """Every delivery of the message, mail a gone session held returned first (so the row
        says where it is now), with its whole history and sessions named."""
        statuses = self.sent.delivery_statuses(caller.workspace, message_id)
        handed = [s.agent for s in statuses if s.state == DeliveryState.handed and s.agent]
        if handed and any([self.handover.return_stranded(caller.workspace, agent, self.clock()) for agent in handed]):
            statuses = self.sent.delivery_statuses(caller.workspace, message_id)
        return [self.handover.named(caller.workspace, s) for s in statuses]

    def _as_addressed(self, caller: Caller, message_id: str, statuses: list[RecipientStatus]) -> list[RecipientStatus]:
        """For the sender: each row under the address the send named, and the addresses that
        named nobody (kept in the send's result, not as deliveries)."""
        result = self.sent.send_result(caller.workspace, message_id)
        outcomes = result.recipients if result else []
        by_agent = {o.agent: o.address for o in outcomes}
        statuses = [s.model_copy(update={"address": by_agent.get(s.agent, s.address)}) for s in statuses]
        return statuses + [
            RecipientStatus(address=o.address, state="unknown_recipient")
            for o in outcomes
            if o.state == "unknown_recipient"
        ]
