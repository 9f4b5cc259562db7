"""A round: a goal put to several agents, who converge on one answer with no person in the middle.

A round runs in epochs. Each epoch has a **proposal phase** (each participant proposes once: an
artifact, or a number for a ``value`` round) and, for artifacts, a **vote phase** (each
participant endorses one proposal of the epoch, its own allowed, with a reason).

- An artifact round is decided the moment one proposal's endorsements reach the quorum.
- A value round has no vote: the moment the proposals reach the quorum, their median decides.
- A phase ends when every participant has acted or its deadline passes; who missed the deadline
  is recorded absent, not waited on. A proposal phase with nothing to vote on, or a split vote,
  starts the next epoch.
- At the round limit (the last epoch's end) the decision is forced: the proposal with the most
  endorsements, ties going to the earliest proposal (a value round: the median of what came).

What does not fit is refused with a stable code and a sentence, recorded, and never an error:
an event for a past or future epoch or a finished round, a second proposal or vote, a vote for
something not proposed, a non-participant, the wrong phase.

Event-sourced and pure: a round's state is what its events say (``standing``), and ``judge``
says which events an incoming act adds (the act itself or its refusal, then any phase change
and the decision). The service stores the events, one act per transaction; nothing here does
I/O. The statements are property tests (tests/test_rounds.py).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from callboard.model import Model

RoundKind = Literal["artifact", "value"]
Phase = Literal["proposal", "vote", "decided", "canceled"]
EventKind = Literal["opened", "proposal", "vote", "refused", "absent", "phase", "decided", "canceled"]
Refusal = Literal[
    "round_finished",
    "not_participant",
    "past_epoch",
    "future_epoch",
    "wrong_phase",
    "already_proposed",
    "already_voted",
    "unknown_proposal",
    "bad_proposal",
]

PARTICIPANTS_MAX = 32
ROUNDS_MAX = 20
PHASE_SECONDS_MIN = 1.0
PHASE_SECONDS_MAX = 24 * 3600.0
PHASE_SECONDS_DEFAULT = 300.0
OPEN: frozenset[Phase] = frozenset({"proposal", "vote"})
ROUND_METADATA = "callboard_round"  # a phase task's metadata key: {"id", "epoch", "phase"}


@dataclass(frozen=True, slots=True)
class Spec:
    """What a round was opened with (checked by ``check_spec``)."""

    participants: tuple[str, ...]
    quorum: int
    max_rounds: int
    kind: RoundKind
    phase_seconds: float


class Event(Model):
    """One thing that happened to a round, as stored and shown."""

    kind: EventKind
    epoch: int
    at: datetime
    agent: str | None = Field(default=None, description="who acted: the proposer, voter, absentee, canceler")
    phase: Phase | None = Field(default=None, description="the phase begun (opened, phase) or missed (absent)")
    value: float | None = Field(default=None, description="a value round's proposal, or its decision")
    content: Any = Field(default=None, description="an artifact proposal: its parts")
    choice: str | None = Field(default=None, description="the proposer a vote endorses, or the decision's winner")
    reason: str | None = Field(default=None, description="a vote's reason, a refusal's or an undecided end's words")
    code: Refusal | None = Field(default=None, description="a refusal's stable code")
    attempted: str | None = Field(default=None, description="what a refused act was: proposal or vote")
    deadline: datetime | None = Field(default=None, description="when the phase begun ends")
    endorsements: int | None = None
    forced: bool = Field(default=False, description="decided at the round limit without a quorum")


@dataclass(frozen=True, slots=True)
class Propose:
    agent: str
    epoch: int
    value: float | None = None
    content: object = None


@dataclass(frozen=True, slots=True)
class Vote:
    agent: str
    epoch: int
    choice: str
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Sweep:
    """Time passes: a phase whose deadline is past ends, its absentees recorded."""


@dataclass(frozen=True, slots=True)
class Cancel:
    agent: str


Act = Propose | Vote | Sweep | Cancel


@dataclass(slots=True)
class Standing:
    """Where a round stands after its events: the current epoch and phase, its deadline, and
    this epoch's proposals (in order) and votes."""

    epoch: int = 0
    phase: Phase = "proposal"
    deadline: datetime | None = None
    proposals: dict[str, Event] = field(default_factory=dict)  # proposer -> its proposal
    votes: dict[str, Event] = field(default_factory=dict)  # voter -> its vote
    absent: set[str] = field(default_factory=set)  # missed this phase's deadline
    decision: Event | None = None


def check_spec(spec: Spec) -> str | None:
    """Why ``spec`` cannot open a round (a sentence), or None."""
    count = len(spec.participants)
    if not 1 <= count <= PARTICIPANTS_MAX:
        return f"a round has 1-{PARTICIPANTS_MAX} participants, not {count}."
    if len(set(spec.participants)) != count:
        return "each participant is named once."
    if not 1 <= spec.quorum <= count:
        return f"the quorum is 1-{count} (the participants), not {spec.quorum}."
    if not 1 <= spec.max_rounds <= ROUNDS_MAX:
        return f"max rounds is 1-{ROUNDS_MAX}, not {spec.max_rounds}."
    if not PHASE_SECONDS_MIN <= spec.phase_seconds <= PHASE_SECONDS_MAX:  # False for NaN too
        return f"a phase lasts {PHASE_SECONDS_MIN:g}-{PHASE_SECONDS_MAX:g} seconds, not {spec.phase_seconds:g}."
    return None


def default_quorum(participants: int) -> int:
    """A majority."""
    return participants // 2 + 1


def opened(spec: Spec, now: datetime) -> Event:
    """The first event of a round: epoch 0's proposal phase begins."""
    return Event(kind="opened", epoch=0, at=now, phase="proposal", deadline=_deadline(spec, now))


def _deadline(spec: Spec, now: datetime) -> datetime:
    return now + timedelta(seconds=spec.phase_seconds)


def standing(events: Sequence[Event]) -> Standing:
    """The round's state after ``events`` (oldest first, starting with ``opened``)."""
    state = Standing()
    for event in events:
        _apply(state, event)
    return state


def judge(spec: Spec, events: Sequence[Event], act: Act, now: datetime) -> list[Event]:
    """The events ``act`` adds to the round at ``now``: a refusal, or the act and what follows
    from it (absences, a new phase, the decision). A sweep before the deadline adds nothing."""
    state = standing(events)
    added: list[Event] = []

    def add(event: Event) -> None:
        added.append(event)
        _apply(state, event)

    if isinstance(act, Cancel):
        if state.phase in OPEN:
            add(Event(kind="canceled", epoch=state.epoch, at=now, agent=act.agent))
        return added
    if isinstance(act, Sweep):
        if state.phase in OPEN and state.deadline is not None and now >= state.deadline:
            for agent in spec.participants:
                if not _acted(state, agent):
                    add(Event(kind="absent", epoch=state.epoch, at=now, agent=agent, phase=state.phase))
            _phase_over(spec, state, now, add)
        return added
    refusal = _refusal(spec, state, act)
    if refusal is not None:
        code, reason = refusal
        kind = "proposal" if isinstance(act, Propose) else "vote"
        add(Event(kind="refused", epoch=act.epoch, at=now, agent=act.agent, code=code, reason=reason, attempted=kind))
        return added
    if isinstance(act, Propose):
        add(Event(kind="proposal", epoch=state.epoch, at=now, agent=act.agent, value=act.value, content=act.content))
        if spec.kind == "value" and len(state.proposals) >= spec.quorum:
            add(_median_decision(state, now, forced=False))
            return added
    else:
        add(Event(kind="vote", epoch=state.epoch, at=now, agent=act.agent, choice=act.choice, reason=act.reason))
        endorsed = sum(1 for vote in state.votes.values() if vote.choice == act.choice)
        if endorsed >= spec.quorum:
            add(Event(kind="decided", epoch=state.epoch, at=now, choice=act.choice, endorsements=endorsed))
            return added
    if all(_acted(state, agent) for agent in spec.participants):
        _phase_over(spec, state, now, add)
    return added


def tally(state: Standing) -> list[tuple[str, int]]:
    """This epoch's proposals by endorsements, most first, ties to the earliest proposal."""
    counts = dict.fromkeys(state.proposals, 0)  # in proposal order; a vote is only for a proposal
    for vote in state.votes.values():
        if vote.choice in counts:
            counts[vote.choice] += 1
    order = list(counts)
    return sorted(counts.items(), key=lambda item: (-item[1], order.index(item[0])))


def _refusal(spec: Spec, state: Standing, act: Propose | Vote) -> tuple[Refusal, str] | None:
    if state.phase not in OPEN:
        return "round_finished", f"the round is {state.phase}; nothing more is taken."
    if act.agent not in spec.participants:
        return "not_participant", f"{act.agent} is not a participant of this round."
    if act.epoch < state.epoch:
        return "past_epoch", f"epoch {act.epoch} is over; the round is in epoch {state.epoch} ({state.phase})."
    if act.epoch > state.epoch:
        return "future_epoch", f"epoch {act.epoch} has not begun; the round is in epoch {state.epoch}."
    wanted: Phase = "proposal" if isinstance(act, Propose) else "vote"
    if state.phase != wanted:
        return "wrong_phase", f"epoch {state.epoch} is in its {state.phase} phase, not its {wanted} phase."
    if isinstance(act, Propose):
        if act.agent in state.proposals:
            return "already_proposed", f"{act.agent} proposed in epoch {state.epoch} already; one proposal each."
        if spec.kind == "value" and (act.value is None or act.value != act.value or abs(act.value) == float("inf")):
            return "bad_proposal", "a value round takes a finite number as the proposal."
        if spec.kind == "artifact" and act.content is None:
            return "bad_proposal", "an artifact round takes an artifact (a file) as the proposal."
        return None
    if act.agent in state.votes:
        return "already_voted", f"{act.agent} voted in epoch {state.epoch} already; one vote each."
    if act.choice not in state.proposals:
        proposed = ", ".join(state.proposals) or "nobody"
        return "unknown_proposal", f"{act.choice} proposed nothing in epoch {state.epoch}; proposals are by {proposed}."
    return None


def _acted(state: Standing, agent: str) -> bool:
    done = state.proposals if state.phase == "proposal" else state.votes
    return agent in done or agent in state.absent


def _phase_over(spec: Spec, state: Standing, now: datetime, add: Callable[[Event], None]) -> None:
    """Every participant acted or was absent: vote, go on to the next epoch, or decide."""
    last = state.epoch + 1 >= spec.max_rounds
    if state.phase == "proposal" and spec.kind == "artifact" and state.proposals:
        add(Event(kind="phase", epoch=state.epoch, at=now, phase="vote", deadline=_deadline(spec, now)))
        return
    if not last:
        add(Event(kind="phase", epoch=state.epoch + 1, at=now, phase="proposal", deadline=_deadline(spec, now)))
        return
    if spec.kind == "value":
        add(_median_decision(state, now, forced=True))
        return
    ranked = tally(state)
    if not ranked:
        add(Event(kind="decided", epoch=state.epoch, at=now, forced=True, reason="nobody proposed anything"))
        return
    winner, endorsements = ranked[0]
    add(Event(kind="decided", epoch=state.epoch, at=now, choice=winner, endorsements=endorsements, forced=True))


def _median_decision(state: Standing, now: datetime, *, forced: bool) -> Event:
    values = [p.value for p in state.proposals.values() if p.value is not None]
    if not values:
        return Event(kind="decided", epoch=state.epoch, at=now, forced=forced, reason="nobody proposed a value")
    median = statistics.median(values)
    return Event(kind="decided", epoch=state.epoch, at=now, value=median, endorsements=len(values), forced=forced)


def _apply(state: Standing, event: Event) -> None:
    kind = event.kind
    if kind in ("opened", "phase"):
        if event.epoch != state.epoch:
            state.proposals, state.votes = {}, {}
        state.epoch, state.phase, state.deadline = event.epoch, event.phase or "proposal", event.deadline
        state.absent = set()
    elif kind == "proposal" and event.agent is not None:
        state.proposals[event.agent] = event
    elif kind == "vote" and event.agent is not None:
        state.votes[event.agent] = event
    elif kind == "absent" and event.agent is not None:
        state.absent.add(event.agent)
    elif kind == "decided":
        state.phase, state.decision = "decided", event
    elif kind == "canceled":
        state.phase = "canceled"


# --- a round as stored and shown ------------------------------------------------------------------


class RoundInfo(Model):
    """A round: what it was opened with, where it stands, and (shown whole) its events."""

    id: str
    workspace: str
    coordinator: str = Field(description="the agent that opened it (it asks each phase of the participants)")
    goal: str
    participants: list[str]
    quorum: int
    max_rounds: int
    kind: RoundKind
    phase_seconds: float
    channel: str | None = Field(default=None, description="where the decision is posted")
    epoch: int
    phase: Phase
    deadline: datetime | None = Field(default=None, description="when the current phase ends")
    decision: Event | None = None
    created_at: datetime
    updated_at: datetime
    events: list[Event] = Field(default_factory=list, description="every event, oldest first, when shown whole")
    mine: str | None = Field(default=None, description="what is the asking agent's to do now: propose or vote")

    def spec(self) -> Spec:
        return Spec(tuple(self.participants), self.quorum, self.max_rounds, self.kind, self.phase_seconds)


def stood(info: RoundInfo, state: Standing, now: datetime) -> RoundInfo:
    """``info`` where ``state`` says it stands now."""
    return info.model_copy(
        update={
            "epoch": state.epoch,
            "phase": state.phase,
            "deadline": state.deadline if state.phase in OPEN else None,
            "decision": state.decision,
            "updated_at": now,
        }
    )


def to_do(info: RoundInfo, events: Sequence[Event], agent: str) -> str | None:
    """What ``agent`` has to do in the round now: ``propose``, ``vote``, or nothing."""
    if info.phase not in OPEN or agent not in info.participants:
        return None
    state = standing(events)
    done = state.proposals if state.phase == "proposal" else state.votes
    if agent in done or agent in state.absent:
        return None
    return "propose" if state.phase == "proposal" else "vote"


class RoundActed(Model):
    """What a proposal or a vote did: taken, or refused (with the refusal as recorded)."""

    accepted: bool
    refusal: Event | None = None
    round: RoundInfo


def describe_decision(info: RoundInfo, decision: Event) -> str:
    """The decision in words: the winner or the value, its endorsements, forced or not."""
    forced = " (forced at the round limit)" if decision.forced else ""
    if decision.choice is not None:
        return f"{decision.choice}'s proposal, endorsed by {decision.endorsements} (quorum {info.quorum}){forced}"
    if decision.value is not None:
        return f"{decision.value:g}, the median of {decision.endorsements} proposals{forced}"
    return f"nothing: {decision.reason or 'no proposal'}{forced}"
