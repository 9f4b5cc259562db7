"""Whom a send reaches: each address resolved to the agents it names and, for each, the live
session its mail is pushed to (the newest one the address allows: see ``reach``).

``name`` reaches the agent's mailbox (created by the send when a person's credential names an
agent nobody has seen); ``#channel`` every other member; ``name@machine`` and
``name@machine#pid`` a live session there.

One rule for every address that cannot take the mail — an agent that does not exist (an agent
token creates none), a channel that does not exist (unknown_channel), one the sender is not in
(not_member) or has no other member, a machine or session with no live session now
(no_live_session): the whole send fails, storing nothing for anyone, with one error naming every
refused address and why. A send reaches every recipient it names, or none: the sender fixes the
address and sends again, and nobody gets the message twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from callboard.address import AgentAddress, ChannelAddress, RemoteAddress
from callboard.errors import (
    BadAddress,
    CallboardError,
    NoLiveSession,
    NotMember,
    UnknownChannel,
    UnknownRecipient,
)
from callboard.model import Caller, DeliveryState, Reach, Session
from callboard.service.directory import Directory
from callboard.service.from_memory import store_needed
from callboard.service.presence import Presence
from callboard.service.remotes import Remotes
from callboard.store.base import Store


@dataclass(slots=True)
class Target:
    """One agent a send will reach, and how it was addressed."""

    address: str
    agent: str
    channel: str | None
    sessions: list[Session]
    target: Session | None  # the live session its mail is pushed to
    new_agent: bool
    guess: str = ""  # for a new agent: the existing names it is close to (see Directory.did_you_mean)

    @property
    def stored_state(self) -> DeliveryState:
        """The state its delivery is stored in: delivered to a live session, or queued."""
        return DeliveryState.delivered if self.sessions else DeliveryState.queued


class Recipients:
    """Resolves a send's addresses, from the directory and the presence of sessions."""

    def __init__(self, store: Store, directory: Directory, presence: Presence, remotes: Remotes | None = None) -> None:
        self.store = store
        self.remotes = remotes
        self.directory = directory
        self.presence = presence

    def resolve(
        self, caller: Caller, addresses: Sequence[AgentAddress | ChannelAddress | RemoteAddress], now: datetime
    ) -> list[Target]:
        """The agents the addresses reach (each once); or, when any address cannot take the
        mail, the one error that names every such address (see the module's rule)."""
        targets: dict[str, Target] = {}
        refused: list[Refusal] = []
        for address in addresses:
            if isinstance(address, ChannelAddress):
                refused.extend(self._add_members(caller, address, now, targets))
                continue
            if isinstance(address, RemoteAddress):
                self._add_remote(caller, address, targets)
                continue
            if address.name in targets:
                continue
            found = self._agent(caller, address, now)
            if isinstance(found, Target):
                targets[address.name] = found
            else:
                refused.append(found)
        if refused:
            raise refusal_error(refused)
        return list(targets.values())

    def _add_remote(self, caller: Caller, address: RemoteAddress, targets: dict[str, Target]) -> None:
        """The outside agent at the address (registered now, by its card, on first use)."""
        if self.remotes is None:
            raise BadAddress(f"{address} is an outside A2A agent, and this mailbox cannot reach those.")
        store_needed()
        name = self.remotes.name_for_url(caller, address.url)
        targets.setdefault(name, Target(str(address), name, None, [], None, False))

    def _add_members(
        self, caller: Caller, address: ChannelAddress, now: datetime, targets: dict[str, Target]
    ) -> list[Refusal]:
        """The channel's other members not reached already, each a target; or why the channel
        cannot take the mail."""
        members = self._post_members(caller, address)
        if isinstance(members, Refusal):
            return [members]
        if not members:
            return [Refusal(str(address), UnknownRecipient, f"#{address.name} has no members besides you.")]
        new_members = [m for m in members if m not in targets]
        live = self.directory.live_sessions_by_agent(caller, new_members, now) if new_members else {}
        for member in new_members:
            targets[member] = Target(str(address), member, address.name, live[member], newest(live[member]), False)
        return []

    def _post_members(self, caller: Caller, address: ChannelAddress) -> list[str] | Refusal:
        store_needed()
        channel = self.store.directory.get_channel(caller.workspace, address.name, caller.agent)
        if channel is None:
            return Refusal(
                str(address),
                UnknownChannel,
                f"there is no channel #{address.name} (create it with 'callboard channel create {address.name}'; "
                "'callboard channel list' shows those there are).",
            )
        if not channel.joined:
            how = (
                f"it is invite-only: ask its creator {channel.created_by} or a person to add you"
                if channel.invite_only
                else f"join it first with 'callboard channel join {address.name}'"
            )
            return Refusal(str(address), NotMember, f"{caller.agent} is not a member of #{address.name}; {how}.")
        return [
            m for m in self.store.directory.channel_member_names(caller.workspace, address.name) if m != caller.agent
        ]

    def _agent(self, caller: Caller, address: AgentAddress, now: datetime) -> Target | Refusal:
        """The agent address's target; or why it cannot take the mail: it names nobody, or (an
        address naming a machine or a session) no live session answers it."""
        directory = self.directory
        exists = directory.agent_exists(caller.workspace, address.name)
        if not exists and address.machine is None and not caller.person:
            # Only a person's credential creates an agent by sending: an agent token's typo
            # would otherwise make a mailbox nobody reads.
            return _unknown(
                address,
                f"no agent named {address.name} exists (an agent token creates none by sending; "
                "'callboard agent list' shows those that do)." + directory.did_you_mean(caller.workspace, address.name),
            )
        if address.machine is None:
            sessions = directory.live_sessions_by_agent(caller, [address.name], now)[address.name] if exists else []
            guess = "" if exists else directory.did_you_mean(caller.workspace, address.name)
            return Target(str(address), address.name, None, sessions, newest(sessions), not exists, guess)
        if not exists:
            return _unknown(
                address,
                f"no agent named {address.name} exists." + directory.did_you_mean(caller.workspace, address.name),
            )
        store_needed()
        found, sessions = self.presence.of_address(caller, address, now)
        if found.state == "unknown_address":
            return _unknown(address, found.reason)
        if found.session is None:
            return Refusal(str(address), NoLiveSession, found.reason[:1].upper() + found.reason[1:], found)
        live = [s for s in sessions if s.live and s.address in found.sessions]
        target = next(s for s in live if s.address == found.session)
        return Target(str(address), address.name, None, live, target, False)


def newest(sessions: Sequence[Session]) -> Session | None:
    """The newest of these sessions, among those the agent's own client keeps when there are any:
    an unserved one (``Session.unserved``: registered by a sender writing mail into it) reports
    only when written into, and mail aimed at it would wait there, hidden from the agent's other
    sessions."""
    kept = [s for s in sessions if not s.unserved]
    return max(kept or sessions, key=lambda s: s.started_at, default=None)


@dataclass(frozen=True, slots=True)
class Refusal:
    """An address a send cannot take its mail to, and why (one sentence)."""

    address: str
    kind: type[CallboardError]
    reason: str
    reach: Reach | None = None  # for no_live_session: what was found at the address


def _unknown(address: AgentAddress, reason: str) -> Refusal:
    return Refusal(str(address), UnknownRecipient, reason)


def refusal_error(refused: Sequence[Refusal]) -> CallboardError:
    """The one error of a send some of whose addresses cannot take it: its code the first
    refused address's, its message every reason, then what to do; ``details.refused`` lists each
    address with its own code."""
    first = refused[0].kind
    reasons = [r.reason.rstrip(".") + "." for r in refused]
    live_hint = " Send to the agent's name to queue it in its mailbox." if any(r.reach for r in refused) else ""
    message = " ".join(reasons) + " Nothing was sent to anyone." + live_hint
    details: dict[str, object] = {
        "refused": [{"address": r.address, "code": r.kind.code, "reason": r.reason} for r in refused]
    }
    if first is UnknownRecipient:
        details["addresses"] = [r.address for r in refused if r.kind is UnknownRecipient]
    if first is NoLiveSession:
        unreachable = [r.reach for r in refused if r.reach is not None]
        details["recipients"] = [r.address for r in unreachable]
        details["reach"] = [r.model_dump(mode="json") for r in unreachable]
    return first(message, **details)
