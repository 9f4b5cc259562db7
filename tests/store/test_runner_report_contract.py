"""The Store contract for runner reports: one row per (workspace, agent, machine), the newest
replacing the last, listed newest update first, filtered by agent, kept per workspace (every
store: see conftest)."""

from __future__ import annotations

from callboard.runners import RunnerReport
from callboard.store.base import Store
from tests.support.store_data import OTHER_WS, WS, agents, at


def report(agent: str, machine: str, seconds: float, **fields: object) -> RunnerReport:
    base = {"pid": 4242, "cli": "generic:python agent.py", "state": "idle", "started_at": at(0)}
    return RunnerReport(agent=agent, machine=machine, updated_at=at(seconds), **{**base, **fields})


def test_a_report_replaces_the_last_of_its_agent_and_machine(store: Store) -> None:
    agents(store, WS, "alice")
    store.runners.put_runner_report(WS, report("alice", "m1", 1, state="starting"))
    newer = report("alice", "m1", 2, state="working", detail="mail from bob", turns=3, cost_usd=0.25)
    store.runners.put_runner_report(WS, newer)
    assert store.runners.runner_reports(WS) == [newer]


def test_reports_are_listed_newest_first_filtered_by_agent_and_kept_per_workspace(store: Store) -> None:
    agents(store, WS, "alice", "bob")
    agents(store, OTHER_WS, "alice")
    alice_m1, alice_m2, bob = report("alice", "m1", 1), report("alice", "m2", 3), report("bob", "m1", 2)
    for one in (alice_m1, alice_m2, bob):
        store.runners.put_runner_report(WS, one)
    store.runners.put_runner_report(OTHER_WS, report("alice", "m9", 9))
    assert store.runners.runner_reports(WS) == [alice_m2, bob, alice_m1]
    assert store.runners.runner_reports(WS, "alice") == [alice_m2, alice_m1]
    assert store.runners.runner_reports(WS, "carol") == []
    assert [r.machine for r in store.runners.runner_reports(OTHER_WS)] == ["m9"]


def test_every_field_comes_back_as_written(store: Store) -> None:
    agents(store, WS, "alice")
    full = report(
        "alice",
        "m1",
        5,
        session_id="3f2b0c9e-8d1a-4b5c-9e7f-0a1b2c3d4e5f",
        cli_session_id="cli-session-1",
        state="sleeping",
        detail="tick backoff",
        sleeping_until=at(65),
        turns=7,
        input_tokens=10_000,
        output_tokens=2_000,
        cache_read_tokens=30_000,
        cache_write_tokens=400,
        cost_usd=1.5,
        restarts=2,
        cwd="/work/team/engineering",
    )
    store.runners.put_runner_report(WS, full)
    assert store.runners.runner_reports(WS, "alice") == [full]
