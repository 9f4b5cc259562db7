"""A round's rules (rounds.py) on their own: quorum, split votes, the round limit, value rounds,
absences and every refusal, as examples and as properties of any sequence of acts."""

from __future__ import annotations

import statistics
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callboard import rounds
from callboard.rounds import Cancel, Event, Propose, Spec, Sweep, Vote

ABC = ("a", "b", "c")


def spec(kind: rounds.RoundKind = "artifact", quorum: int = 2, max_rounds: int = 3, participants=ABC) -> Spec:
    return Spec(tuple(participants), quorum, max_rounds, kind, phase_seconds=60.0)


class Round:
    """A round driven act by act, as the service drives it (one act a transaction)."""

    def __init__(self, the_spec: Spec) -> None:
        self.spec, self.now = the_spec, datetime(2026, 12, 7, tzinfo=UTC)
        self.events: list[Event] = [rounds.opened(the_spec, self.now)]

    def act(self, act: rounds.Act, after: float = 1.0) -> list[Event]:
        self.now += timedelta(seconds=after)
        added = rounds.judge(self.spec, self.events, act, self.now)
        self.events += added
        return added

    @property
    def state(self) -> rounds.Standing:
        return rounds.standing(self.events)

    def propose_all(self, epoch: int = 0) -> None:
        for agent in self.spec.participants:
            self.act(Propose(agent, epoch, content=f"{agent}'s solution"))


def kinds(events: list[Event]) -> list[str]:
    return [e.kind for e in events]


def test_an_artifact_round_is_decided_the_moment_a_proposal_reaches_the_quorum_2_of_3() -> None:
    r = Round(spec())
    r.propose_all()
    assert (r.state.phase, r.state.epoch) == ("vote", 0)
    assert kinds(r.act(Vote("b", 0, "a", "simplest"))) == ["vote"]
    decided = r.act(Vote("c", 0, "a", "agree"))
    assert kinds(decided) == ["vote", "decided"]  # c's vote made it two: no waiting for a's
    assert (decided[-1].choice, decided[-1].endorsements, decided[-1].forced, decided[-1].epoch) == ("a", 2, False, 0)
    assert r.state.phase == "decided"
    late = r.act(Vote("a", 0, "a"))
    assert [(e.kind, e.code) for e in late] == [("refused", "round_finished")]


def test_a_split_vote_starts_the_next_epoch() -> None:
    r = Round(spec())
    r.propose_all()
    for agent in ABC:  # each for its own: no quorum
        r.act(Vote(agent, 0, agent))
    assert (r.state.epoch, r.state.phase, r.state.proposals) == (1, "proposal", {})


def test_at_the_round_limit_the_most_endorsed_wins_ties_to_the_earliest_proposal() -> None:
    r = Round(spec(quorum=3, max_rounds=1))
    r.propose_all()
    r.act(Vote("a", 0, "b"))
    r.act(Vote("b", 0, "c"))
    decided = r.act(Vote("c", 0, "c"))[-1]
    assert (decided.kind, decided.choice, decided.endorsements, decided.forced) == ("decided", "c", 2, True)
    tie = Round(spec(quorum=3, max_rounds=1))
    for agent in ("b", "a", "c"):  # b proposed first
        tie.act(Propose(agent, 0, content=agent))
    for voter, choice in (("a", "a"), ("b", "b"), ("c", "c")):
        tie.act(Vote(voter, 0, choice))
    assert (tie.state.decision.choice, tie.state.decision.forced) == ("b", True)


def test_a_value_round_takes_the_median_at_the_quorum_with_no_vote() -> None:
    r = Round(spec(kind="value", quorum=3, participants=("a", "b", "c", "d")))
    r.act(Propose("a", 0, value=10))
    r.act(Propose("b", 0, value=1))
    decided = r.act(Propose("c", 0, value=4))
    assert kinds(decided) == ["proposal", "decided"]
    assert (decided[-1].value, decided[-1].forced) == (4, False)
    refused = r.act(Propose("d", 0, value=99))
    assert refused[0].code == "round_finished"


def test_who_misses_a_deadline_is_recorded_absent_and_not_waited_on() -> None:
    r = Round(spec())
    r.act(Propose("a", 0, content="x"))
    assert r.act(Sweep(), after=10) == []  # before the deadline: nothing
    swept = r.act(Sweep(), after=60)
    assert [(e.kind, e.agent) for e in swept] == [("absent", "b"), ("absent", "c"), ("phase", None)]
    assert (r.state.phase, r.state.epoch) == ("vote", 0)
    decided = r.act(Vote("b", 0, "a"))  # an absentee of the proposal phase still votes
    assert kinds(decided) == ["vote"]
    r.act(Vote("c", 0, "a"))
    assert r.state.decision.choice == "a"


def test_a_proposal_phase_with_nothing_proposed_goes_on_and_the_limit_ends_it_undecided() -> None:
    r = Round(spec(max_rounds=2))
    r.act(Sweep(), after=61)
    assert (r.state.epoch, r.state.phase) == (1, "proposal")
    r.act(Sweep(), after=61)
    decision = r.state.decision
    assert decision is not None and decision.forced and decision.choice is None and "nobody" in decision.reason


@pytest.mark.parametrize(
    ("act", "code"),
    [
        (Propose("z", 0, content="x"), "not_participant"),
        (Propose("a", 1, content="x"), "future_epoch"),
        (Vote("a", 0, "a"), "wrong_phase"),
        (Propose("a", 0), "bad_proposal"),
    ],
)
def test_each_refusal_is_recorded_with_its_code_and_changes_nothing(act: rounds.Act, code: str) -> None:
    r = Round(spec())
    before = r.state
    [refused] = r.act(act)
    assert (refused.kind, refused.code, refused.agent) == ("refused", code, act.agent)
    assert refused.reason and refused.attempted in ("proposal", "vote")
    after = r.state
    assert (after.epoch, after.phase, after.proposals, after.votes) == (
        before.epoch,
        before.phase,
        before.proposals,
        before.votes,
    )


def test_the_second_proposal_or_vote_and_a_vote_for_nothing_proposed_are_refused() -> None:
    r = Round(spec(participants=("a", "b", "c", "d"), quorum=3))
    for agent in ("a", "b", "c"):
        r.act(Propose(agent, 0, content=agent))
    assert r.act(Propose("a", 0, content="again"))[0].code == "already_proposed"
    r.act(Propose("d", 0, content="d"))
    assert r.act(Vote("a", 0, "nobody"))[0].code == "unknown_proposal"
    r.act(Vote("a", 0, "b"))
    assert r.act(Vote("a", 0, "c"))[0].code == "already_voted"
    r.act(Vote("b", 0, "b"))
    r.act(Vote("c", 0, "c"))
    r.act(Vote("d", 0, "d"))  # split: epoch 1
    assert r.act(Propose("a", 0, content="late"))[0].code == "past_epoch"
    assert r.act(Vote("a", 1, "b"))[0].code == "wrong_phase"


def test_a_canceled_round_takes_nothing_more() -> None:
    r = Round(spec())
    assert kinds(r.act(Cancel("lead"))) == ["canceled"]
    assert r.act(Propose("a", 0, content="x"))[0].code == "round_finished"
    assert r.act(Cancel("lead")) == [] and r.act(Sweep(), after=999) == []


def test_check_spec_says_what_cannot_open_a_round() -> None:
    assert rounds.check_spec(spec()) is None
    assert "quorum" in rounds.check_spec(spec(quorum=4))
    assert "once" in rounds.check_spec(spec(participants=("a", "a")))
    assert "participants" in rounds.check_spec(spec(participants=()))
    assert "max rounds" in rounds.check_spec(spec(max_rounds=0))
    assert rounds.default_quorum(3) == 2 and rounds.default_quorum(4) == 3


# --- properties of any sequence of acts ----------------------------------------------------------

AGENTS = ["a", "b", "c", "d", "z"]  # z never participates
specs = st.builds(
    lambda kind, count, quorum, max_rounds: Spec(
        ("a", "b", "c", "d")[:count], min(quorum, count), max_rounds, kind, 60.0
    ),
    st.sampled_from(["artifact", "value"]),
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(1, 4),
)


def an_act(data: st.DataObject, r: Round) -> rounds.Act:
    """Mostly what a participant of the current epoch would do, sometimes anything at all."""
    state = r.state
    agent = data.draw(st.sampled_from(AGENTS))
    epoch = data.draw(st.sampled_from([state.epoch] * 6 + [state.epoch - 1, state.epoch + 1]))
    what = data.draw(st.sampled_from(["propose"] * 4 + ["vote"] * 4 + ["sweep", "cancel"]))
    if what == "propose":
        value = data.draw(st.one_of(st.integers(-5, 5), st.none(), st.just(float("nan"))))
        return Propose(agent, epoch, value, data.draw(st.sampled_from(["x", "x", None])))
    if what == "vote":
        choice = data.draw(st.sampled_from([*state.proposals, *AGENTS] if state.proposals else AGENTS))
        return Vote(agent, epoch, choice)
    return Sweep() if what == "sweep" else Cancel(agent)


@settings(max_examples=200)
@given(specs, st.integers(0, 60), st.data())
def test_any_sequence_of_acts_keeps_the_rounds_promises(the_spec: Spec, length: int, data) -> None:
    r = Round(the_spec)
    for _ in range(length):
        r.act(an_act(data, r), data.draw(st.sampled_from([0.0, 1.0, 5.0, 61.0])))
    events = r.events
    accepted = Counter((e.epoch, e.kind, e.agent) for e in events if e.kind in ("proposal", "vote"))
    assert all(count == 1 for count in accepted.values()), "one proposal and one vote each, per epoch"
    proposers = {(e.epoch, e.agent) for e in events if e.kind == "proposal"}
    for vote in (e for e in events if e.kind == "vote"):
        assert (vote.epoch, vote.choice) in proposers, "a vote is for a proposal of its epoch"
        assert vote.agent in the_spec.participants
    assert all(e.agent in the_spec.participants for e in events if e.kind == "proposal")
    ends = [i for i, e in enumerate(events) if e.kind in ("decided", "canceled")]
    assert len(ends) <= 1, "a round ends once"
    if ends:
        assert all(e.kind == "refused" for e in events[ends[0] + 1 :]), "nothing is taken after the end"
    assert all(e.epoch < the_spec.max_rounds for e in events if e.kind != "refused")
    for refused in (e for e in events if e.kind == "refused"):
        assert refused.code and refused.reason
    for decided in (e for e in events if e.kind == "decided"):
        epoch_events = [e for e in events[: events.index(decided)] if e.epoch == decided.epoch]
        if decided.forced:
            assert decided.epoch == the_spec.max_rounds - 1, "a decision is forced only at the round limit"
        elif the_spec.kind == "artifact":
            votes = [e for e in epoch_events if e.kind == "vote" and e.choice == decided.choice]
            assert len(votes) == the_spec.quorum, "decided the moment the endorsements reach the quorum"
        else:
            values = [e.value for e in epoch_events if e.kind == "proposal"]
            assert len(values) == the_spec.quorum and decided.value == statistics.median(values)
