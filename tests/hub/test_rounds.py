"""Rounds through the hub: the REST routes and HubClient, a long-poll that wakes on the next
event, a phase ended by the hub's own deadline job with the absentee recorded, refusals as
answers (200, accepted false), the audit trail for its parties only, and a hub SIGKILLed mid-vote
that finishes the round after restart with no vote lost or counted twice."""

from __future__ import annotations

from callboard.requests import RoundProposal, RoundRequest, RoundVote
from tests.hub.conftest import Hub, Tenant, expect_http_error
from tests.support.threads import in_thread
from tests.support.waiting import DEADLINE, scaled, wait_until


def _proposal(agent: str) -> dict:
    return {"parts": [{"text": f"solution by {agent}", "filename": f"{agent}.txt"}]}


def test_a_round_over_rest_is_asked_proposed_voted_and_decided(tenant: Tenant) -> None:
    with tenant.http("lead") as lead, tenant.http("ana") as ana, tenant.http("ben") as ben, tenant.http("cai") as cai:
        opened = lead.post("/v1/rounds", json={"goal": "pick one", "agents": ["ana", "ben", "cai"], "quorum": 2})
        assert opened.status_code == 201, opened.text
        round_id = opened.json()["id"]
        path = f"/v1/rounds/{round_id}"
        [task] = ana.get("/v1/tasks").json()["tasks"]
        assert task["metadata"]["callboard_round"] == {"id": round_id, "epoch": 0, "phase": "proposal"}
        assert [(r["id"], r["mine"]) for r in ana.get("/v1/rounds").json()] == [(round_id, "propose")]
        for agent, http in (("ana", ana), ("ben", ben), ("cai", cai)):
            answer = http.post(f"{path}/proposals", json=_proposal(agent))
            assert answer.status_code == 200 and answer.json()["accepted"], answer.text
        refused = ana.post(f"{path}/proposals", json=_proposal("ana"))
        assert refused.status_code == 200 and refused.json()["refusal"]["code"] == "wrong_phase"
        seen = len(lead.get(path).json()["events"])
        waiting, box = in_thread(lambda: lead.get(path, params={"after_events": seen, "wait": 30}, timeout=60))
        ben.post(f"{path}/votes", json={"endorse": "ana", "reason": "simplest"})
        waiting.join(DEADLINE)
        assert len(box["result"].json()["events"]) > seen
        decided = cai.post(f"{path}/votes", json={"endorse": "ana"}).json()
        assert decided["round"]["phase"] == "decided" and decided["round"]["decision"]["choice"] == "ana"
        shown = lead.get(path).json()
        assert [e["kind"] for e in shown["events"]].count("vote") == 2
        with tenant.hub.http(tenant.agent_token("eve")["token"]) as eve:  # an agent's token (a person's may look)
            expect_http_error(eve.get(path), 404, "unknown_round")
            expect_http_error(eve.post(f"{path}/votes", json={"endorse": "ana"}), 404, "unknown_round")
            assert eve.get("/v1/rounds").json() == []
        expect_http_error(
            lead.post("/v1/rounds", json={"goal": "g", "agents": ["ana"], "quorum": 2}), 400, "bad_request"
        )
        expect_http_error(lead.post(f"{path}/votes", json={"endorse": "ana", "bogus": 1}), 400, "bad_request")
        paths = lead.get("/openapi.json").json()["paths"]
    assert {"/v1/rounds", "/v1/rounds/{round_id}", "/v1/rounds/{round_id}/votes"} <= set(paths)


def test_the_hubs_deadline_job_ends_a_phase_and_records_the_absentee(tenant: Tenant) -> None:
    ana = tenant.client("ana")
    try:
        # ana proposes at once (well within a phase, even on a loaded machine); ben never does
        request = RoundRequest(goal="g", agents=["ana", "ben"], quorum=1, max_rounds=1, phase_timeout=scaled(3))
        info = ana.open_round(request)
        ana.propose(info.id, RoundProposal(parts=[{"text": "mine"}]))

        def absent() -> list[tuple[str | None, str | None]]:
            events = ana.get_round(info.id).events
            return [(e.agent, e.phase) for e in events if e.kind == "absent"]

        assert wait_until(absent, what="ben recorded absent by the hub's sweep") == [("ben", "proposal")]
        assert ana.get_round(info.id).phase == "vote"
    finally:
        ana.close()


def test_a_hub_killed_mid_vote_finishes_the_round_with_every_vote_counted_once(make_hub) -> None:
    hub: Hub = make_hub()
    clients = {agent: hub.client(hub.admin_token, agent) for agent in ("lead", "ana", "ben", "cai")}
    try:
        info = clients["lead"].open_round(RoundRequest(goal="pick", agents=["ana", "ben", "cai"], quorum=3))
        for agent in ("ana", "ben", "cai"):
            clients[agent].propose(info.id, RoundProposal(parts=[{"text": agent}]))
        assert clients["ana"].vote(info.id, RoundVote(endorse="ana")).accepted
        hub.kill()  # mid-vote: one of three votes in
        hub.start()
        for agent in ("lead", "ana", "ben", "cai"):
            clients[agent].close()
            clients[agent] = hub.client(hub.admin_token, agent)
        again = clients["ana"].vote(info.id, RoundVote(endorse="ana"))  # a replay after the restart
        assert again.refusal is not None and again.refusal.code == "already_voted"
        clients["ben"].vote(info.id, RoundVote(endorse="ana"))
        decided = clients["cai"].vote(info.id, RoundVote(endorse="ana"))
        assert decided.round.decision is not None and decided.round.decision.endorsements == 3
        votes = [e for e in clients["lead"].get_round(info.id).events if e.kind == "vote"]
        assert sorted(e.agent for e in votes) == ["ana", "ben", "cai"]
    finally:
        for client in clients.values():
            client.close()
