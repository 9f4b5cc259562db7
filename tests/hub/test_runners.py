"""Runner reports through the hub: a runner's report written over PUT /v1/runners/{agent}
(HubClient.report_runner) is listed to every agent of its workspace (GET /v1/runners,
HubClient.list_runners) and to no other workspace; refusals keep their status and code."""

from __future__ import annotations

from datetime import UTC, datetime

from callboard.errors import Forbidden
from callboard.runners import RunnerReport
from tests.hub.conftest import Tenant, new_tenant

NOW = datetime.now(UTC)


def report(agent: str, machine: str = "far-box", **fields: object) -> RunnerReport:
    base = {"pid": 321, "cli": "codex", "state": "idle", "started_at": NOW, "updated_at": datetime.now(UTC)}
    return RunnerReport(agent=agent, machine=machine, **{**base, **fields})


def test_a_report_over_the_hub_is_listed_to_the_workspace_and_no_other(tenant: Tenant) -> None:
    alice, bob = tenant.client("alice"), tenant.client("bob")
    try:
        kept = alice.report_runner(report("alice", state="working", detail="mail from bob", cost_usd=0.5))
        assert (kept.agent, kept.machine, kept.live, kept.cost_usd) == ("alice", "far-box", True, 0.5)
        alice.report_runner(report("alice", machine="near-box", state="sleeping"))
        listed = bob.list_runners()
        assert [(r.machine, r.state) for r in listed] == [("near-box", "sleeping"), ("far-box", "working")]
        assert bob.list_runners("alice") == listed and bob.list_runners("bob") == []
        other = new_tenant(tenant.hub).client("alice")
        try:
            assert other.list_runners() == []
        finally:
            other.close()
    finally:
        alice.close()
        bob.close()


def test_refusals_keep_their_status_and_code(tenant: Tenant) -> None:
    bob = tenant.client("bob")
    try:
        try:
            bob.report_runner(report("alice"))
            raise AssertionError("bob reported alice's runner")
        except Forbidden as error:
            assert "only its own runner" in error.message
    finally:
        bob.close()
    body = report("alice").model_dump(mode="json")
    with tenant.http("alice") as alice:
        mismatch = alice.put("/v1/runners/bob", json=body)
        assert (mismatch.status_code, mismatch.json()["error"]["code"]) == (400, "bad_request"), mismatch.text
        negative = alice.put("/v1/runners/alice", json={**body, "turns": -3})
        assert negative.status_code == 400 and "turns must be a count" in negative.json()["error"]["message"]
        unknown = alice.put("/v1/runners/alice", json={**body, "mood": "fine"})
        assert unknown.status_code == 400, unknown.text
        bad_filter = alice.get("/v1/runners", params={"agent": "Not A Name!"})
        assert bad_filter.status_code == 400, bad_filter.text
