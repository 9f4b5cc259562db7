"""Rounds: opening one, taking its proposals and votes, ending its phases at their deadlines,
and asking each phase of its participants (``rounds.py`` holds the rules).

Each act is one transaction of the store's rounds part, taking turns with every other act on
the same round, so a round needs no coordinator process: whoever acts applies the transition.
A refusal is recorded and answered, never raised. Each phase is asked of every participant as a
task from the round's coordinator, in the round's own thread (its id is the tasks' context), its
metadata naming the round, epoch and phase; a participant's act completes its own task, and the
tasks left open when a phase ends are canceled. The decision is posted to the round's channel.
Deadlines are swept by the hub's background job (``sweep``), and on the embedded store by whoever
looks at the round.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable
from datetime import datetime

from callboard.address import parse_name
from callboard.errors import BadRequest, CallboardError, Forbidden, TaskFinished, UnknownRound
from callboard.model import Caller, Part, new_id
from callboard.requests import RoundProposal, RoundRequest, RoundVote, SendRequest, TaskListQuery, TaskRequest
from callboard.rounds import (
    OPEN,
    ROUND_METADATA,
    Act,
    Cancel,
    Event,
    Propose,
    RoundActed,
    RoundInfo,
    Spec,
    Sweep,
    Vote,
    check_spec,
    default_quorum,
    describe_decision,
    judge,
    opened,
    standing,
    stood,
    to_do,
)
from callboard.service.events import MailboxEvents
from callboard.service.identity_gate import AgentCaller, as_agent
from callboard.service.sending import Sending
from callboard.service.tasking import Tasking
from callboard.store.parts.directory import DirectoryPart
from callboard.store.parts.rounds import RoundsPart, round_key
from callboard.tasks import FINAL, Task, TaskState

log = logging.getLogger(__name__)

SWEEP_BATCH = 100  # rounds past their deadline ended per sweep


class Rounds:
    """Opening, acting on, following and listing rounds."""

    def __init__(
        self,
        rounds: RoundsPart,
        directory: DirectoryPart,
        tasking: Tasking,
        sending: Sending,
        events: MailboxEvents,
        clock: Callable[[], datetime],
    ) -> None:
        self._rounds = rounds
        self._directory = directory
        self._tasking = tasking
        self._sending = sending
        self._events = events
        self._clock = clock

    # --- opening --------------------------------------------------------------------------

    def open_round(self, caller: Caller, request: RoundRequest) -> RoundInfo:
        """A new round, its coordinator the caller; each participant is asked to propose."""
        caller = as_agent(caller)
        participants = [parse_name(agent, "participant") for agent in request.agents]
        quorum = request.quorum if request.quorum is not None else default_quorum(len(participants))
        spec = Spec(tuple(participants), quorum, request.max_rounds, request.kind, request.phase_timeout)
        problem = check_spec(spec)
        if problem is not None:
            raise BadRequest(problem + " Nothing was opened.")
        if not request.goal.strip():
            raise BadRequest("a round needs a goal: say what the participants are to decide.")
        channel = self._checked_channel(caller, request.channel)
        now = self._clock()
        first = opened(spec, now)
        info = RoundInfo(
            id=new_id(),
            workspace=caller.workspace,
            coordinator=caller.agent,
            goal=request.goal,
            participants=participants,
            quorum=quorum,
            max_rounds=request.max_rounds,
            kind=request.kind,
            phase_seconds=request.phase_timeout,
            channel=channel,
            epoch=0,
            phase="proposal",
            deadline=first.deadline,
            created_at=now,
            updated_at=now,
        )
        self._rounds.open_round(info, first)
        self._ask(info, 0, "proposal")
        self._events.publish(info.workspace, round_key(info.id))
        return info

    def _checked_channel(self, caller: AgentCaller, channel: str | None) -> str | None:
        if channel is None:
            return None
        name = parse_name(channel.removeprefix("#"), "channel name")
        if caller.agent not in self._directory.channel_member_names(caller.workspace, name):
            raise BadRequest(f"#{name} is not a channel you are in: the decision could not be posted there.")
        return name

    # --- acting ---------------------------------------------------------------------------

    def propose(self, caller: Caller, round_id: str, request: RoundProposal) -> RoundActed:
        """The caller's proposal in the round (refused with a reason when it does not fit)."""
        caller = as_agent(caller)
        info = self._party_round(caller, round_id)
        content = [part.model_dump(mode="json") for part in request.parts] or None
        epoch = request.epoch if request.epoch is not None else info.epoch
        return self._acted(caller, info, Propose(caller.agent, epoch, request.value, content))

    def vote(self, caller: Caller, round_id: str, request: RoundVote) -> RoundActed:
        """The caller's vote in the round (refused with a reason when it does not fit)."""
        caller = as_agent(caller)
        info = self._party_round(caller, round_id)
        endorsed = parse_name(request.endorse, "agent to vote for")
        epoch = request.epoch if request.epoch is not None else info.epoch
        return self._acted(caller, info, Vote(caller.agent, epoch, endorsed, request.reason))

    def task_answered(self, caller: AgentCaller, task: Task) -> None:
        """A participant completed its phase task instead of calling propose or vote (an outside
        A2A agent does, or any worker answering the task it was given): its answer is its act.
        A proposal is the task's artifacts (else its status message), or a value round's number;
        a vote names the proposer it endorses (a data part {"vote": AGENT, "reason": …}, or
        "vote: AGENT …" in words). A participant that acted already is left be."""
        asked = (task.metadata or {}).get(ROUND_METADATA)
        if task.state is not TaskState.COMPLETED or not isinstance(asked, dict) or task.worker != caller.agent:
            return
        info = self._rounds.get_round(caller.workspace, str(asked.get("id")))
        epoch, phase = asked.get("epoch"), asked.get("phase")
        if info is None or not isinstance(epoch, int) or caller.agent not in info.participants:
            return
        kind = "proposal" if phase == "proposal" else "vote"
        events = self._rounds.round_events(info.workspace, info.id)
        if any(e.kind == kind and e.epoch == epoch and e.agent == caller.agent for e in events):
            return  # it acted (its act completed this task): nothing more to take
        act = _act_of(caller.agent, epoch, phase, info.kind, task)
        if act is not None:
            self._acted(caller, info, act)

    def cancel(self, caller: Caller, round_id: str) -> RoundInfo:
        """The coordinator's (or a person's) cancel: the round ends undecided, its tasks canceled."""
        caller = as_agent(caller)
        info = self._party_round(caller, round_id)
        if caller.agent != info.coordinator and not caller.person:
            raise Forbidden(f"only {info.coordinator}, who opened round {round_id}, or a person cancels it.")
        return self._act(info, Cancel(caller.agent))[0]

    def sweep(self) -> int:
        """End the phases past their deadline (absentees recorded); how many rounds moved."""
        moved = 0
        for workspace, round_id in self._rounds.due_rounds(self._clock(), SWEEP_BATCH):
            info = self._rounds.get_round(workspace, round_id)
            if info is not None and self._act(info, Sweep())[1]:
                moved += 1
        return moved

    def _acted(self, caller: AgentCaller, info: RoundInfo, act: Propose | Vote) -> RoundActed:
        after, added = self._act(info, act)
        refused = next((event for event in added if event.kind == "refused"), None)
        if refused is None:
            self._answered(caller, info, act.epoch, "proposal" if isinstance(act, Propose) else "vote")
        return RoundActed(accepted=refused is None, refusal=refused, round=after)

    def _act(self, info: RoundInfo, act: Act) -> tuple[RoundInfo, list[Event]]:
        now = self._clock()

        def decide(current: RoundInfo, events: list[Event]) -> tuple[list[Event], RoundInfo]:
            added = judge(current.spec(), events, act, now)
            return added, (stood(current, standing([*events, *added]), now) if added else current)

        done = self._rounds.act(info.workspace, info.id, decide)
        if done is None:  # only a round that exists is acted on: it was read just now
            raise UnknownRound(f"round {info.id} is gone.")
        after, added = done
        self._followed_up(after, added)
        return after, added

    def _followed_up(self, info: RoundInfo, added: list[Event]) -> None:
        """After an act's commit: ask the next phase, close the last one's tasks, post a decision."""
        for event in added:
            if event.kind == "phase":
                self._close_tasks(info)
                proposers = list(standing(self._rounds.round_events(info.workspace, info.id)).proposals)
                self._ask(info, event.epoch, event.phase or "proposal", proposers)
            elif event.kind in ("decided", "canceled"):
                self._close_tasks(info)
                if event.kind == "decided":
                    self._post_decision(info, event)
        if added:
            self._events.publish(info.workspace, round_key(info.id))

    # --- reading --------------------------------------------------------------------------

    def get_round(
        self, caller: Caller, round_id: str, *, after_events: int | None = None, wait: float = 0.0
    ) -> RoundInfo:
        """The round whole (every event), for its coordinator, participants and persons; with
        ``after_events`` (how many events the caller has seen), waits up to ``wait`` seconds for
        more. A phase past its deadline is ended first (on the embedded store nobody else might)."""
        caller = as_agent(caller)
        info = self._party_round(caller, round_id, looking=True)
        deadline = time.monotonic() + wait
        with self._events.subscribe(info.workspace, round_key(info.id)) as changes:
            while True:
                info = self._swept(info)
                events = self._rounds.round_events(info.workspace, info.id)
                remaining = deadline - time.monotonic()
                if after_events is None or len(events) > after_events or info.phase not in OPEN or remaining <= 0:
                    return info.model_copy(update={"events": events, "mine": to_do(info, events, caller.agent)})
                changes.wait(min(remaining, _until(info, self._clock())))

    def list_rounds(self, caller: Caller, *, open_only: bool = True) -> list[RoundInfo]:
        """The rounds the caller takes part in or opened (open ones only unless asked), newest
        first, each saying what is the caller's to do now."""
        caller = as_agent(caller)
        listed = []
        for info in self._rounds.rounds_of(caller.workspace, caller.agent, open_only):
            info = self._swept(info)
            if open_only and info.phase not in OPEN:
                continue
            events = self._rounds.round_events(info.workspace, info.id) if info.phase in OPEN else []
            listed.append(info.model_copy(update={"mine": to_do(info, events, caller.agent)}))
        return listed

    def _swept(self, info: RoundInfo) -> RoundInfo:
        if info.phase in OPEN and info.deadline is not None and self._clock() >= info.deadline:
            return self._act(info, Sweep())[0]
        return info

    def _party_round(self, caller: AgentCaller, round_id: str, *, looking: bool = False) -> RoundInfo:
        """The round, for its coordinator and participants; one that only looks may be a person
        (a round is the workspace's decision: a person audits it, as the audit trail)."""
        info = self._rounds.get_round(caller.workspace, round_id) if isinstance(round_id, str) else None
        party = info is not None and (caller.agent in info.participants or caller.agent == info.coordinator)
        if info is None or not (party or (looking and caller.person)):
            raise UnknownRound(
                f"no round {round_id!r} that {caller.agent} takes part in; `callboard round list` shows yours.",
                round_id=round_id,
            )
        return info

    # --- its tasks and its post -----------------------------------------------------------

    def _ask(self, info: RoundInfo, epoch: int, phase: str, proposers: list[str] | None = None) -> None:
        """Ask each participant this phase: a task from the coordinator, in the round's thread
        (a vote's names the proposers)."""
        coordinator = Caller(workspace=info.workspace, agent=info.coordinator)
        for agent in info.participants:
            request = TaskRequest(
                to=agent,
                text=_prompt(info, epoch, phase, proposers or []),
                context_id=info.id,
                subject=f"round {info.id[-8:]}: {phase} (epoch {epoch})",
                metadata={ROUND_METADATA: {"id": info.id, "epoch": epoch, "phase": phase}},
            )
            try:
                self._tasking.open_task(coordinator, request)
            except CallboardError as error:  # one participant unreachable: the others still take part
                log.warning("round %s: could not ask %s to %s: %s", info.id, agent, phase, error.message)

    def _answered(self, caller: AgentCaller, info: RoundInfo, epoch: int, phase: str) -> None:
        """The participant acted: its own task for the phase is completed (by it, its worker)."""
        for task in self._phase_tasks(caller, info):
            if _asks(task, epoch, phase) and task.worker == caller.agent:
                self._quietly(functools.partial(self._tasking.update_task, caller, task.id, state="completed"))

    def _close_tasks(self, info: RoundInfo) -> None:
        """Cancel the round's tasks still open from phases that are over (by the coordinator)."""
        coordinator = as_agent(Caller(workspace=info.workspace, agent=info.coordinator))
        state = (info.epoch, info.phase)
        for task in self._phase_tasks(coordinator, info):
            asked = (task.metadata or {}).get(ROUND_METADATA, {})
            if info.phase not in OPEN or (asked.get("epoch"), asked.get("phase")) != state:
                self._quietly(functools.partial(self._tasking.cancel_task, coordinator, task.id))

    def _phase_tasks(self, caller: AgentCaller, info: RoundInfo) -> list[Task]:
        page = self._tasking.list_tasks(caller, TaskListQuery(context_id=info.id, page_size=100))
        return [task for task in page.tasks if task.state not in FINAL and ROUND_METADATA in (task.metadata or {})]

    def _post_decision(self, info: RoundInfo, decision: Event) -> None:
        if info.channel is None:
            return
        coordinator = Caller(workspace=info.workspace, agent=info.coordinator)
        words = f"round {info.id} decided: {describe_decision(info, decision)}\ngoal: {info.goal}"
        post = SendRequest(to="#" + info.channel, parts=[Part(text=words)])
        self._quietly(functools.partial(self._sending.send, coordinator, post))

    @staticmethod
    def _quietly(work: Callable[[], object]) -> None:
        try:
            work()
        except TaskFinished:  # its participant or the coordinator ended it just now: as wanted
            pass
        except CallboardError as error:  # the round stands: a task or a post that fails is logged
            log.warning("a round's follow-up did not go through: %s", error.message)


_VOTE = re.compile(r"\b(?:vote|endorse)[:\s]+@?([A-Za-z0-9][A-Za-z0-9._-]*)[\s,;:.—-]*(.*)", re.IGNORECASE | re.DOTALL)
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _act_of(agent: str, epoch: int, phase: object, kind: str, task: Task) -> Propose | Vote | None:
    """The act a completed phase task stands for, or None when its answer says none."""
    words = " ".join(p.text for p in task.status_parts if p.text)
    data = next((p.data for p in task.status_parts if isinstance(p.data, dict)), {})
    if phase == "vote":
        choice = data.get("vote") or data.get("endorse")
        reason = data.get("reason")
        if not isinstance(choice, str):
            found = _VOTE.search(words)
            if found is None:
                return None
            choice, reason = found.group(1), found.group(2).strip() or None
        return Vote(agent, epoch, choice.lower(), reason if isinstance(reason, str) else None)
    if kind == "value":
        value = data.get("value")
        if not isinstance(value, int | float):
            found = _NUMBER.search(words)
            value = float(found.group()) if found else None
        return Propose(agent, epoch, value=float(value) if value is not None else None)
    parts = [p.model_dump(mode="json") for a in task.artifacts for p in a.parts] or [
        p.model_dump(mode="json") for p in task.status_parts
    ]
    return Propose(agent, epoch, content=parts or None)


def _asks(task: Task, epoch: int, phase: str) -> bool:
    asked = (task.metadata or {}).get(ROUND_METADATA, {})
    return asked.get("epoch") == epoch and asked.get("phase") == phase


def _until(info: RoundInfo, now: datetime) -> float:
    """Seconds to the phase's deadline (a follower looks again then: a sweep may be due)."""
    if info.deadline is None:
        return 3600.0
    return max(0.05, (info.deadline - now).total_seconds() + 0.05)


def _prompt(info: RoundInfo, epoch: int, phase: str, proposers: list[str]) -> str:
    what = "a number" if info.kind == "value" else "your answer as a file"
    how = (
        f"Propose {what}: callboard round propose {info.id} "
        + ("--value N" if info.kind == "value" else "--file FILE")
        + f" --epoch {epoch} (or complete this task with it as an artifact)"
        if phase == "proposal"
        else f"Proposals by: {', '.join(proposers)}. Read them (callboard round show {info.id}) and endorse one, "
        f"your own allowed: callboard round vote {info.id} --for AGENT --reason WHY --epoch {epoch} (or complete "
        "this task saying: vote: AGENT, and why)"
    )
    deadline = f" before {info.deadline:%H:%M:%S}Z" if info.deadline is not None else ""
    return (
        f"Round {info.id}, epoch {epoch}, {phase} phase, opened by {info.coordinator}.\n"
        f"Goal: {info.goal}\n{how}{deadline}. Quorum: {info.quorum} of {len(info.participants)}."
    )
