"""Rounds through the service (Service.rounds) on both stores: a round opened to three agents asks
each phase of each as a task in the round's thread, takes proposals and votes, decides at the
quorum and posts the decision; refusals are answered, recorded and never raised; deadlines are
swept with absentees recorded; only its parties see it."""

from __future__ import annotations

import pytest

from callboard.client.local import LocalClient
from callboard.errors import BadRequest, Forbidden, UnknownRound
from callboard.model import Caller, Part
from callboard.requests import RoundProposal, RoundRequest, RoundVote, SurfaceQuery
from callboard.rounds import ROUND_METADATA
from callboard.service.door import Service
from tests.support.service_setup import WS, Clock, new_agent


def as_(agent: str) -> Caller:
    return Caller(workspace=WS, agent=agent)


def opened(service: Service, **fields) -> str:
    request = RoundRequest(goal="pick the simplest solution", agents=["alice", "bob", "carol"], **fields)
    return service.rounds.open_round(as_("lead"), request).id


def propose(service: Service, agent: str, round_id: str, text: str | None = None, **fields):
    parts = [Part(text=text or f"{agent}'s solution", filename=f"{agent}.txt")] if "value" not in fields else []
    return service.rounds.propose(as_(agent), round_id, RoundProposal(parts=parts, **fields))


def vote(service: Service, agent: str, round_id: str, endorse: str, **fields):
    return service.rounds.vote(as_(agent), round_id, RoundVote(endorse=endorse, reason="simplest", **fields))


def test_a_round_asks_each_phase_as_tasks_and_is_decided_at_the_quorum(
    service: Service, alice: LocalClient, bob: LocalClient, carol: LocalClient, team: str
) -> None:
    new_agent(service, "lead").join_channel("team")
    round_id = opened(service, channel="team")
    for client in (alice, bob, carol):
        [task] = client.list_tasks().tasks
        asked = task.metadata[ROUND_METADATA]
        assert (task.requester, task.context_id, asked) == (
            "lead",
            round_id,
            {"id": round_id, "epoch": 0, "phase": "proposal"},
        )
    assert [r.mine for r in service.rounds.list_rounds(as_("alice"))] == ["propose"]
    for agent in ("alice", "bob", "carol"):
        assert propose(service, agent, round_id).accepted
    assert [t.state for t in alice.list_tasks().tasks if t.metadata[ROUND_METADATA]["phase"] == "proposal"] == [
        "completed"
    ]
    shown = service.rounds.get_round(as_("bob"), round_id)
    assert (shown.phase, shown.mine) == ("vote", "vote")
    assert vote(service, "bob", round_id, "alice").accepted
    decided = vote(service, "carol", round_id, "alice")
    assert decided.round.phase == "decided" and decided.round.decision.choice == "alice"
    assert not decided.round.decision.forced and decided.round.decision.endorsements == 2
    kinds = [e.kind for e in service.rounds.get_round(as_("lead"), round_id).events]
    assert kinds == ["opened", "proposal", "proposal", "proposal", "phase", "vote", "vote", "decided"]
    # alice never voted: her vote task is canceled with the round decided; nothing is left open
    assert all(t.state in ("completed", "canceled") for t in alice.list_tasks().tasks)
    post = [i.message.text for i in bob.read().items if i.message.channel == "team"]
    assert post and "alice's proposal, endorsed by 2 (quorum 2)" in post[-1]


def test_refusals_are_answered_and_recorded_never_raised(service: Service, alice: LocalClient) -> None:
    round_id = opened(service)
    early = vote(service, "alice", round_id, "bob")
    assert (early.accepted, early.refusal.code) == (False, "wrong_phase")
    assert propose(service, "alice", round_id).accepted
    again = propose(service, "alice", round_id, "another")
    assert again.refusal.code == "already_proposed" and "one proposal each" in again.refusal.reason
    future = propose(service, "bob", round_id, epoch=3)
    assert future.refusal.code == "future_epoch"
    refused = [e for e in service.rounds.get_round(as_("lead"), round_id).events if e.kind == "refused"]
    assert [(e.agent, e.code) for e in refused] == [
        ("alice", "wrong_phase"),
        ("alice", "already_proposed"),
        ("bob", "future_epoch"),
    ]


def test_a_participant_who_misses_the_deadline_is_recorded_absent(
    service: Service, clock: Clock, alice: LocalClient, bob: LocalClient, carol: LocalClient
) -> None:
    round_id = opened(service, phase_timeout=30)
    propose(service, "alice", round_id)
    propose(service, "bob", round_id)
    assert service.rounds.sweep() == 0
    clock.advance(31)
    assert service.rounds.sweep() == 1
    info = service.rounds.get_round(as_("lead"), round_id)
    assert [(e.kind, e.agent) for e in info.events if e.kind == "absent"] == [("absent", "carol")]
    assert (info.phase, info.epoch) == ("vote", 0)
    assert [t.state for t in carol.list_tasks().tasks if t.metadata[ROUND_METADATA]["phase"] == "proposal"] == [
        "canceled"
    ]


def test_a_value_round_takes_the_median(service: Service, alice: LocalClient, bob: LocalClient) -> None:
    round_id = opened(service, kind="value")
    propose(service, "alice", round_id, value=10)
    decided = propose(service, "bob", round_id, value=4)
    assert decided.round.decision.value == 7 and decided.round.phase == "decided"


def test_only_its_parties_see_a_round_and_only_its_coordinator_cancels(service: Service, dave: LocalClient) -> None:
    round_id = opened(service)
    dave_token = Caller(workspace=WS, agent="dave", person=False)  # an agent's token: not a party, not a person
    with pytest.raises(UnknownRound):
        service.rounds.get_round(dave_token, round_id)
    assert service.rounds.get_round(as_("dave"), round_id).goal  # a person looks at the workspace's rounds
    with pytest.raises(UnknownRound):
        propose(service, "dave", round_id)
    assert service.rounds.list_rounds(as_("dave")) == []
    with pytest.raises(Forbidden):  # an agent's token; a person (or this machine's own store) may
        service.rounds.cancel(Caller(workspace=WS, agent="alice", person=False), round_id)
    assert service.rounds.cancel(as_("lead"), round_id).phase == "canceled"
    assert service.rounds.list_rounds(as_("alice")) == []
    assert service.rounds.list_rounds(as_("alice"), open_only=False)[0].phase == "canceled"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"quorum": 4}, "quorum"),
        ({"agents": ["alice", "alice"]}, "once"),
        ({"channel": "nowhere"}, "not a channel you are in"),
        ({"goal": "   "}, "goal"),
    ],
)
def test_a_round_that_cannot_be_opened_opens_nothing(service: Service, alice: LocalClient, fields, said) -> None:
    request = RoundRequest(**{"goal": "pick", "agents": ["alice", "bob", "carol"], **fields})
    with pytest.raises(BadRequest, match=said):
        service.rounds.open_round(as_("lead"), request)
    assert service.rounds.list_rounds(as_("lead"), open_only=False) == [] and alice.list_tasks().tasks == []


def test_a_participant_that_completes_its_phase_task_takes_part_with_that_answer(
    service: Service, alice: LocalClient, bob: LocalClient, carol: LocalClient
) -> None:
    """An outside A2A agent (or any worker) answers the task it was given: the answer is its act."""
    round_id = opened(service)

    def phase_task(client: LocalClient, phase: str):
        return next(
            t
            for t in client.list_tasks().tasks
            if t.metadata[ROUND_METADATA]["phase"] == phase and t.state == "submitted"
        )

    artifact = {"name": "plan.md", "parts": [{"text": "bob's plan", "filename": "plan.md"}]}
    bob.update_task(phase_task(bob, "proposal").id, state="completed", artifacts=[artifact])
    propose(service, "alice", round_id)
    carol.update_task(phase_task(carol, "proposal").id, state="completed", parts=[{"text": "carol's idea"}])
    info = service.rounds.get_round(as_("lead"), round_id)
    proposals = {e.agent: e.content for e in info.events if e.kind == "proposal"}
    assert proposals["bob"] == [{"text": "bob's plan", "filename": "plan.md"}] and info.phase == "vote"
    bob.update_task(phase_task(bob, "vote").id, state="completed", parts=[{"text": "vote: carol — the simplest"}])
    carol.update_task(phase_task(carol, "vote").id, state="completed", parts=[{"data": {"vote": "carol"}}])
    decided = service.rounds.get_round(as_("lead"), round_id)
    assert decided.decision.choice == "carol" and decided.phase == "decided"
    votes = [(e.agent, e.choice, e.reason) for e in decided.events if e.kind == "vote"]
    assert votes == [("bob", "carol", "the simplest"), ("carol", "carol", None)]
    assert not [e for e in decided.events if e.kind == "refused"]  # its own completions are not acts twice


def test_a_participant_taking_up_its_phase_task_sends_the_coordinator_no_working_notice(
    service: Service, alice: LocalClient, bob: LocalClient, carol: LocalClient
) -> None:
    lead = new_agent(service, "lead")
    round_id = opened(service)
    surfaced = bob.surface(SurfaceQuery(via="runner"))  # a runner puts it before its model
    assert [i.task_state for i in surfaced.items] == ["submitted"]
    [task] = bob.list_tasks().tasks
    assert task.state == "submitted"  # not moved to working: its answer is the act
    assert lead.read().items == []  # nothing in the coordinator's mailbox
    assert propose(service, "bob", round_id).accepted
