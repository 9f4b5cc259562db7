"""Tasks through the hub's REST API (/v1/tasks), HubClient, and the CLI logged in to a hub: the
same round trip as on the embedded store, every refusal with its status and stable code, and no
task of one workspace or agent readable or movable from another."""

from __future__ import annotations

import json

from callboard.requests import TaskListQuery, TaskRequest
from tests.hub.conftest import CLI, Tenant, expect_error, new_tenant


def _error(answer, status: int, code: str) -> str:
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["code"] == code, answer.text
    return answer.json()["error"]["message"]


def test_a_task_over_rest_opens_moves_lists_and_cancels(tenant: Tenant) -> None:
    with tenant.http("alice") as alice, tenant.http("bob") as bob:
        opened = alice.post("/v1/tasks", json={"to": "bob", "text": "please review", "subject": "PR 7"})
        assert opened.status_code == 201, opened.text
        task = opened.json()["task"]
        assert (task["state"], task["requester"], task["worker"], task["generation"]) == (
            "submitted",
            "alice",
            "bob",
            1,
        )
        assert opened.json()["send"]["recipients"][0]["agent"] == "bob"

        [item] = bob.post("/v1/read").json()["items"]
        assert (item["task_id"], item["task_state"]) == (task["id"], "submitted")

        asked = bob.post(f"/v1/tasks/{task['id']}/update", json={"state": "input-required", "message": "which?"})
        assert asked.status_code == 200 and asked.json()["state"] == "input-required", asked.text
        answer = {"to": "bob", "parts": [{"text": "main"}], "task_id": task["id"], "context_id": task["context_id"]}
        followed = alice.post("/v1/tasks", json=answer)
        assert followed.status_code == 201 and followed.json()["task"]["state"] == "submitted", followed.text

        artifact = {"name": "review.md", "parts": [{"text": "LGTM", "media_type": "text/markdown"}]}
        done = bob.post(
            f"/v1/tasks/{task['id']}/update",
            json={
                "state": "completed",
                "parts": [{"text": "done"}],
                "artifacts": [artifact, {"parts": [{"data": [1]}]}],
            },
        )
        assert done.status_code == 200, done.text
        got = alice.get(f"/v1/tasks/{task['id']}", params={"history_length": 10}).json()
        assert got["state"] == "completed" and [a["name"] for a in got["artifacts"]] == ["review.md", None]
        assert got["artifacts"][1]["artifact_id"] and len(got["history"]) >= 4

        second = alice.post("/v1/tasks", json={"to": "bob", "text": "another"}).json()["task"]
        page = alice.get("/v1/tasks", params={"page_size": 1}).json()
        assert [t["id"] for t in page["tasks"]] == [second["id"]] and page["total_size"] == 2
        rest = alice.get("/v1/tasks", params={"page_size": 1, "page_token": page["next_page_token"]}).json()
        assert [t["id"] for t in rest["tasks"]] == [task["id"]] and rest["next_page_token"] == ""
        assert [t["id"] for t in bob.get("/v1/tasks", params={"state": "completed"}).json()["tasks"]] == [task["id"]]
        in_context = alice.get("/v1/tasks", params={"context_id": task["context_id"]}).json()["tasks"]
        assert [t["id"] for t in in_context] == [task["id"]]

        canceled = alice.post(f"/v1/tasks/{second['id']}/cancel")
        assert canceled.status_code == 200 and canceled.json()["state"] == "canceled", canceled.text
        told = bob.post("/v1/read").json()["items"]
        assert told[-1]["task_state"] == "canceled"


def test_each_task_mail_over_rest_carries_the_state_its_update_made(tenant: Tenant) -> None:
    with tenant.http("alice") as alice, tenant.http("bob") as bob:
        task = alice.post("/v1/tasks", json={"to": "bob", "text": "review it"}).json()["task"]
        for state, words in (("working", "starting now"), ("input-required", "which branch?")):
            moved = bob.post(f"/v1/tasks/{task['id']}/update", json={"state": state, "message": words})
            assert moved.status_code == 200, moved.text
        items = alice.post("/v1/read").json()["items"]
        assert [(i["message"]["parts"][0]["text"], i["task_state"]) for i in items] == [
            ("starting now", "working"),
            ("which branch?", "input-required"),
        ]


def test_task_refusals_have_their_status_and_stable_code(tenant: Tenant) -> None:
    with tenant.http("alice") as alice, tenant.http("bob") as bob:
        task = alice.post("/v1/tasks", json={"to": "bob", "text": "do it"}).json()["task"]
        path = f"/v1/tasks/{task['id']}"
        _error(bob.post(f"{path}/update", json={"state": "done"}), 400, "bad_task_state")
        _error(bob.post(f"{path}/update", json={}), 400, "bad_request")
        _error(bob.post(f"{path}/update", json={"state": "working", "bogus": 1}), 400, "bad_request")
        _error(alice.post(f"{path}/update", json={"state": "completed"}), 403, "forbidden")
        _error(bob.post(f"{path}/cancel"), 403, "forbidden")  # the requester's move
        _error(alice.post(f"{path}/cancel", json={"why": "x"}), 400, "bad_request")  # takes no body
        _error(alice.post("/v1/tasks", json={"to": "bob"}), 400, "bad_request")  # asks nothing
        _error(alice.post("/v1/tasks", json={"to": "#ops", "text": "x"}), 400, "bad_request")
        _error(alice.get("/v1/tasks", params={"page_token": "garbage"}), 400, "bad_request")
        _error(alice.get("/v1/tasks", params={"page_size": 0}), 400, "bad_request")
        _error(alice.get("/v1/tasks", params={"state": "bogus"}), 400, "bad_task_state")
        _error(alice.get("/v1/tasks/01a2364b-4cd9-70b4-9090-93301124e4c0"), 404, "unknown_task")
        bob.post(f"{path}/update", json={"state": "failed", "message": "broke"})
        _error(bob.post(f"{path}/update", json={"state": "working"}), 409, "task_finished")
        _error(alice.post(f"{path}/cancel"), 409, "task_finished")
        assert alice.get(path).json()["generation"] == 3  # taken up, failed; no refusal moved it


def test_no_task_is_readable_or_movable_from_another_agent_or_workspace(tenant: Tenant) -> None:
    with tenant.http("alice") as alice:
        task = alice.post("/v1/tasks", json={"to": "bob", "text": "secret"}).json()["task"]
    path = f"/v1/tasks/{task['id']}"
    other = new_tenant(tenant.hub)
    for client in (tenant.http("carol"), other.http("alice"), other.http("bob")):
        with client:
            _error(client.get(path), 404, "unknown_task")
            _error(client.post(f"{path}/update", json={"state": "working"}), 404, "unknown_task")
            _error(client.post(f"{path}/cancel"), 404, "unknown_task")
            assert client.get("/v1/tasks").json()["tasks"] == []
    carol_token = tenant.agent_token("carol")["token"]
    with tenant.hub.http(carol_token, "bob") as forged:  # an agent token acts only as its agent
        _error(forged.get(path), 403, "forbidden")


def test_the_hub_client_and_openapi_speak_the_same_tasks(tenant: Tenant) -> None:
    alice, bob = tenant.client("alice"), tenant.client("bob")
    try:
        sent = alice.open_task(TaskRequest(to="bob", parts=[{"text": "review"}], subject="PR 9", metadata={"pr": 9}))
        assert sent.task.metadata == {"pr": 9}
        moved = bob.update_task(
            sent.task.id, state="completed", parts=[{"text": "ok"}], artifacts=[{"parts": [{"text": "x"}]}]
        )
        assert moved.state == "completed" and alice.get_task(sent.task.id, history_length=2).history
        assert [t.id for t in alice.list_tasks(TaskListQuery(state="completed")).tasks] == [sent.task.id]
    finally:
        alice.close()
        bob.close()
    with tenant.http("alice") as http:
        paths = http.get("/openapi.json").json()["paths"]
    assert {"get", "post"} <= set(paths["/v1/tasks"]) and set(paths["/v1/tasks/{task_id}/update"]) == {"post"}
    assert "task_id" in {p["name"] for p in paths["/v1/tasks/{task_id}"]["get"]["parameters"]}


def test_the_cli_logged_in_to_a_hub_answers_a_task_with_a_file(tenant: Tenant, cli: CLI, tmp_path) -> None:
    cli.run_json("login", tenant.hub.url, "--token", tenant.token)
    task_id = cli.run_json("task", "send", "bob", "please review", agent="alice")["task"]["id"]
    assert cli.run_json("read", agent="bob")["items"][0]["task_id"] == task_id
    cli.run_json("task", "update", task_id, "--state", "input-required", "--message", "which branch?", agent="bob")
    review = tmp_path / "review.txt"
    review.write_text("LGTM")
    cli.run_json("task", "update", task_id, "--state", "completed", "--artifact", review, agent="bob")
    shown = cli.run_json("task", "show", task_id, agent="alice")
    assert shown["state"] == "completed" and "LGTM" in json.dumps(shown["artifacts"])
    assert [t["id"] for t in cli.run_json("task", "list", agent="alice")["tasks"]] == [task_id]


def test_a_repeated_message_id_returns_the_first_task_never_a_second(tenant: Tenant, cli: CLI) -> None:
    with tenant.http("alice") as alice:
        first = alice.post("/v1/tasks", json={"to": "bob", "text": "once", "message_id": "m-1"})
        again = alice.post("/v1/tasks", json={"to": "bob", "text": "once", "message_id": "m-1"})
        assert (first.status_code, again.status_code) == (201, 200), again.text
        assert again.json()["task"]["id"] == first.json()["task"]["id"] and again.json()["send"]["duplicate"]
    client = tenant.client("alice")
    try:
        one = client.open_task(TaskRequest(to="bob", parts=[{"text": "twice"}], message_id="m-2"))
        two = client.open_task(TaskRequest(to="bob", parts=[{"text": "twice"}], message_id="m-2"))
        assert one.task.id == two.task.id and two.send.duplicate
        fresh = client.open_task(
            TaskRequest(to="bob", parts=[{"text": "its own key"}])
        )  # a key of the client's own: not a duplicate
        assert fresh.task.id != one.task.id and not fresh.send.duplicate
    finally:
        client.close()
    cli.run_json("login", tenant.hub.url, "--token", tenant.token)
    ids = {cli.run_json("task", "send", "bob", "x", "--message-id", "m-3", agent="alice")["task"]["id"] for _ in "ab"}
    assert len(ids) == 1
    with tenant.http("bob") as bob:
        assert bob.get("/v1/tasks").json()["total_size"] == 4


def test_a_task_sent_to_a_hub_that_is_down_is_a_clear_error(make_hub, cli: CLI) -> None:
    hub = make_hub()
    cli.run_json("login", hub.url, "--token", hub.admin_token)
    hub.kill()
    proc = cli.run("task", "send", "bob", "anyone?", agent="alice", env={"CALLBOARD_SEND_RETRY_SECONDS": "1"})
    assert "nothing was sent" in str(expect_error(proc, "hub_unavailable", as_json=False))
