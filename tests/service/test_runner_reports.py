"""Runner reports through the service (embedded store): a caller reports only its own agent's
runner, bad fields are refused with a sentence and write nothing, a report gone quiet past the
liveness window is not live unless its runner said it stopped or crashed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from callboard.errors import BadRequest, Forbidden
from callboard.model import Caller
from callboard.runners import RunnerReport
from callboard.service.door import Service
from callboard.store.opening import open_store

WS = "team"
ALICE = Caller(workspace=WS, agent="alice")
BOB = Caller(workspace=WS, agent="bob")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(tmp_path: Path, clock: Clock) -> Iterator[Service]:
    store = open_store(str(tmp_path / "callboard.db"))
    try:
        service = Service(store, machine="box", liveness_seconds=60, clock=clock)
        for caller in (ALICE, BOB):
            service.directory.enter(caller)
        yield service
    finally:
        store.close()


def report(agent: str = "alice", **fields: object) -> RunnerReport:
    base = {"machine": "box", "pid": 100, "cli": "claude", "state": "idle", "started_at": T0, "updated_at": T0}
    return RunnerReport(agent=agent, **{**base, **fields})


def test_a_runner_reports_itself_and_the_workspace_lists_it(service: Service) -> None:
    kept = service.runners.report(ALICE, report(machine="Box", state="working", detail="mail from bob"))
    assert (kept.machine, kept.live) == ("box", True)  # names folded as everywhere
    assert service.runners.listed(BOB) == [kept]
    assert service.runners.listed(BOB, agent="ALICE") == [kept]
    assert service.runners.listed(BOB, agent="bob") == []


def test_a_caller_may_not_report_another_agents_runner(service: Service) -> None:
    with pytest.raises(Forbidden, match="only its own runner"):
        service.runners.report(BOB, report("alice"))
    assert service.runners.listed(ALICE) == []


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"machine": "not a host!"}, "machine name"),
        ({"pid": 0}, "pid must be"),
        ({"turns": -1}, "turns must be a count"),
        ({"input_tokens": 2**64}, "input_tokens must be a count"),
        ({"cost_usd": -0.5}, "cost_usd must be"),
        ({"cost_usd": float("nan")}, "cost_usd must be"),
        ({"detail": "x" * 5000}, "detail must be at most"),
        ({"cli": "  "}, "cli must name"),
        ({"cwd": "a\x00b"}, "NUL"),
        ({"updated_at": datetime(2026, 1, 1)}, "time zone"),
    ],
)
def test_bad_fields_are_refused_with_a_sentence_and_write_nothing(
    service: Service, fields: dict[str, object], says: str
) -> None:
    with pytest.raises(BadRequest, match=says):
        service.runners.report(ALICE, report(**fields))
    assert service.runners.listed(ALICE) == []


def test_a_bad_agent_filter_is_a_bad_request(service: Service) -> None:
    with pytest.raises(BadRequest, match="agent"):
        service.runners.listed(ALICE, agent="no such name!")


def test_a_report_gone_quiet_is_not_live_unless_its_runner_stopped_or_crashed(service: Service, clock: Clock) -> None:
    service.runners.report(ALICE, report("alice", state="working"))
    service.runners.report(BOB, report("bob", state="crashed", detail="claude exited 1 five times"))
    clock.now = T0 + timedelta(seconds=59)
    assert all(r.live for r in service.runners.listed(ALICE))
    clock.now = T0 + timedelta(seconds=61)
    live = {r.agent: r.live for r in service.runners.listed(ALICE)}
    assert live == {"alice": False, "bob": True}
    service.runners.report(ALICE, report("alice", state="idle", updated_at=clock.now))
    assert [(r.agent, r.live) for r in service.runners.listed(ALICE)] == [("alice", True), ("bob", True)]
