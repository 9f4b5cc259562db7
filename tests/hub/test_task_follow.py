"""Following a task through the hub: ``GET /v1/tasks/{id}?after_generation=N&wait=S`` long-polls
until the task moves past N (or is final), HubClient does the same, bad options have their
status and code, and ``delegate --wait`` against a hub follows the task to its end."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from callboard.requests import TaskRequest
from tests.hub.conftest import CLI, Tenant, expect_http_error
from tests.support.cli_runner import CALL_TIMEOUT, describe
from tests.support.threads import in_thread
from tests.support.waiting import DEADLINE, scaled, wait_until


def test_a_long_poll_on_a_task_answers_when_the_worker_moves_it(tenant: Tenant) -> None:
    with tenant.http("alice") as alice, tenant.http("bob") as bob:
        task = alice.post("/v1/tasks", json={"to": "bob", "text": "review"}).json()["task"]
        path = f"/v1/tasks/{task['id']}"
        seen = task["generation"]
        same = alice.get(path, params={"after_generation": seen, "wait": 0.2})
        assert same.status_code == 200 and same.json()["generation"] == seen  # nothing moved: as it is at its wait
        waiting, box = in_thread(lambda: alice.get(path, params={"after_generation": seen, "wait": 30}, timeout=60))
        bob.post(f"{path}/update", json={"state": "working", "message": "on it"})
        waiting.join(DEADLINE)
        moved = box["result"]
        assert moved.status_code == 200, moved.text
        assert moved.json()["state"] == "working" and moved.json()["generation"] > seen
        final = bob.post(f"{path}/update", json={"state": "completed"}).json()
        # final: answered at once, however long the wait asked for
        ended = alice.get(path, params={"after_generation": final["generation"], "wait": 3600})
        assert ended.json()["state"] == "completed"


def test_follow_options_are_checked_with_their_status_and_code(tenant: Tenant) -> None:
    with tenant.http("alice") as alice, tenant.http("carol") as carol:
        task = alice.post("/v1/tasks", json={"to": "bob", "text": "review"}).json()["task"]
        path = f"/v1/tasks/{task['id']}"
        assert (
            "after_generation" in expect_http_error(alice.get(path, params={"wait": 5}), 400, "bad_request")["message"]
        )
        expect_http_error(alice.get(path, params={"after_generation": 99}), 400, "bad_request")
        expect_http_error(alice.get(path, params={"after_generation": -1}), 400, "bad_request")
        expect_http_error(alice.get(path, params={"after_generation": 1, "wait": 99999}), 400, "bad_request")
        expect_http_error(carol.get(path, params={"after_generation": 1, "wait": 5}), 404, "unknown_task")
        paths = alice.get("/openapi.json").json()["paths"]
    named = {p["name"] for p in paths["/v1/tasks/{task_id}"]["get"]["parameters"]}
    assert {"after_generation", "wait", "history_length"} <= named


def test_the_hub_client_follows_a_task(tenant: Tenant) -> None:
    alice, bob = tenant.client("alice"), tenant.client("bob")
    try:
        sent = alice.open_task(TaskRequest(to="bob", parts=[{"text": "review"}]))
        waiting, box = in_thread(lambda: alice.get_task(sent.task.id, after_generation=sent.task.generation, wait=30))
        bob.update_task(sent.task.id, state="rejected", parts=[{"text": "not mine"}])
        waiting.join(DEADLINE)
        assert "error" not in box, box
        assert box["result"].state == "rejected"
    finally:
        alice.close()
        bob.close()


def test_delegate_against_a_hub_waits_for_the_result(tenant: Tenant, cli: CLI, tmp_path: Path) -> None:
    cli.run_json("login", tenant.hub.url, "--token", tenant.token)
    waiting = cli.spawn(
        "delegate", "bob", "write a haiku", "--wait", "--out", tmp_path / "out", "--json", agent="alice"
    )

    def asked() -> list[dict]:
        return cli.run_json("task", "list", agent="bob")["tasks"]

    [task] = wait_until(asked, what="bob's task")
    haiku = tmp_path / "haiku.txt"
    haiku.write_text("agents in a row\n")
    cli.run_json("task", "update", task["id"], "--state", "completed", "--artifact", haiku, agent="bob")
    out, err = waiting.communicate(timeout=scaled(CALL_TIMEOUT))
    done = subprocess.CompletedProcess(waiting.args, waiting.returncode, out, err)
    assert done.returncode == 0, describe(done)
    assert json.loads(out)["task"]["state"] == "completed"
    assert (tmp_path / "out" / "haiku.txt").read_text() == "agents in a row\n"
