"""The Store contract for rounds (every store: see conftest): a round comes back as opened, an
act appends its events and keeps where the round stands in one transaction, a replayed proposal
or vote cannot be stored twice, an agent's rounds are listed, and open rounds past their deadline
are found."""

from __future__ import annotations

import pytest

from callboard import rounds
from callboard.rounds import Event, Propose, RoundInfo, Vote
from callboard.store.base import Store
from tests.support.store_data import OTHER_WS, WS, at


def opened(store: Store, round_id: str = "r1", workspace: str = WS, created: float = 0) -> RoundInfo:
    info = RoundInfo(
        id=round_id, workspace=workspace, coordinator="lead", goal="pick one", participants=["a", "b", "c"],
        quorum=2, max_rounds=3, kind="artifact", phase_seconds=60.0, channel="#decisions", epoch=0,
        phase="proposal", deadline=at(created + 60), created_at=at(created), updated_at=at(created),
    )  # fmt: skip
    store.rounds.open_round(info, rounds.opened(info.spec(), at(created)))
    return info


def act(store: Store, info: RoundInfo, what: rounds.Act, seconds: float, workspace: str = WS):
    def decide(now_info: RoundInfo, events: list[Event]) -> tuple[list[Event], RoundInfo]:
        added = rounds.judge(now_info.spec(), events, what, at(seconds))
        return added, rounds.stood(now_info, rounds.standing([*events, *added]), at(seconds))

    return store.rounds.act(workspace, info.id, decide)


def test_a_round_comes_back_as_opened_with_its_first_event(store: Store) -> None:
    info = opened(store)
    assert store.rounds.get_round(WS, "r1") == info
    [first] = store.rounds.round_events(WS, "r1")
    assert (first.kind, first.phase, first.deadline) == ("opened", "proposal", at(60))
    assert store.rounds.get_round(OTHER_WS, "r1") is None and store.rounds.get_round(WS, "r2") is None


def test_acts_append_their_events_and_keep_where_the_round_stands(store: Store) -> None:
    info = opened(store)
    for second, agent in enumerate("abc", start=1):
        after, added = act(store, info, Propose(agent, 0, content=[{"text": f"{agent}'s"}]), second)
    assert (after.phase, after.epoch, [e.kind for e in added]) == ("vote", 0, ["proposal", "phase"])
    act(store, info, Vote("b", 0, "a", "simplest"), 5)
    after, added = act(store, info, Vote("c", 0, "a"), 6)
    assert [e.kind for e in added] == ["vote", "decided"]
    kept = store.rounds.get_round(WS, "r1")
    assert kept == after and kept.phase == "decided" and kept.decision.choice == "a" and kept.deadline is None
    events = store.rounds.round_events(WS, "r1")
    assert [e.kind for e in events] == [
        "opened",
        "proposal",
        "proposal",
        "proposal",
        "phase",
        "vote",
        "vote",
        "decided",
    ]
    assert events[1].content == [{"text": "a's"}] and events[5].reason == "simplest"
    refused, _ = act(store, info, Vote("a", 0, "a"), 7)
    assert store.rounds.round_events(WS, "r1")[-1].code == "round_finished" and refused.phase == "decided"
    assert store.rounds.get_round(WS, "r1").updated_at == at(7)  # a refusal is an event of the round too
    assert act(store, info.model_copy(update={"id": "nope"}), Vote("a", 0, "a"), 8) is None


def test_a_replayed_proposal_cannot_be_stored_twice(store: Store) -> None:
    info = opened(store)
    act(store, info, Propose("a", 0, content="x"), 1)

    def replay(now_info: RoundInfo, events: list[Event]) -> tuple[list[Event], RoundInfo]:
        return [Event(kind="proposal", epoch=0, at=at(2), agent="a", content="again")], now_info

    with pytest.raises(Exception):  # noqa: B017, PT011 - the dialect's own unique-violation error
        store.rounds.act(WS, info.id, replay)
    assert [e.kind for e in store.rounds.round_events(WS, "r1")] == ["opened", "proposal"]  # nothing of it kept


def test_an_agents_rounds_are_listed_newest_first_and_due_ones_found(store: Store) -> None:
    first = opened(store, "r1", created=0)
    opened(store, "r2", created=10)
    opened(store, "r9", workspace=OTHER_WS, created=5)
    assert [r.id for r in store.rounds.rounds_of(WS, "a", open_only=False)] == ["r2", "r1"]
    assert [r.id for r in store.rounds.rounds_of(WS, "lead", open_only=True)] == ["r2", "r1"]
    assert store.rounds.rounds_of(WS, "z", open_only=False) == []
    act(store, first, rounds.Cancel("lead"), 1)
    assert [r.id for r in store.rounds.rounds_of(WS, "a", open_only=True)] == ["r2"]
    assert store.rounds.due_rounds(at(59), 10) == []
    assert store.rounds.due_rounds(at(100), 10) == [(OTHER_WS, "r9"), (WS, "r2")]  # earliest deadline first
