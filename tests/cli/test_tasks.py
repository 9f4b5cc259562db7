"""Tasks through the real CLI on the embedded store: a person or a script asks an agent (task
send), the agent sees the task in its mail, asks back, is answered, hands over files and data and
completes it; list, show and cancel; and bad input that sends nothing."""

from __future__ import annotations

import base64


def _open(cli, text: str = "please review") -> str:
    sent = cli.run_json("task", "send", "bob", text, agent="alice")
    assert sent["task"]["state"] == "submitted" and sent["send"]["recipients"][0]["agent"] == "bob"
    return sent["task"]["id"]


def test_a_task_round_trip_with_a_question_back_and_artifacts(cli, tmp_path) -> None:
    cli.run_json("agent", "create", "bob", agent="alice")
    plain = cli.run("task", "send", "bob", "please review", agent="alice")
    assert plain.returncode == 0, plain.stderr
    task_id = plain.stdout.strip()  # the human output is the id, for scripts: id=$(callboard task send …)

    peeked = cli.run("read", "--peek", agent="bob")  # a person sees which task, and its state
    assert f"task {task_id} submitted" in peeked.stdout and "please review" in peeked.stdout, peeked.stdout
    [item] = cli.run_json("read", agent="bob")["items"]
    assert (item["task_id"], item["task_state"], item["message"]["task_id"]) == (task_id, "submitted", task_id)

    asked = cli.run_json(
        "task", "update", task_id, "--state", "input-required", "--message", "which branch?", agent="bob"
    )
    assert (asked["state"], asked["generation"]) == ("input-required", 3)  # taken up by its answer, then asked
    [question] = cli.run_json("read", agent="alice")["items"]
    assert question["task_state"] == "input-required" and question["message"]["parts"] == [{"text": "which branch?"}]

    mine = cli.run_json("task", "list", agent="alice")
    assert [(t["id"], t["state"]) for t in mine["tasks"]] == [(task_id, "input-required")]
    assert mine["next_page_token"] == ""
    listed = cli.run("task", "list", agent="alice")
    assert task_id in listed.stdout and "input-required" in listed.stdout and "which branch?" in listed.stdout

    answered = cli.run_json("task", "send", "bob", "main", "--answer", task_id, agent="alice")
    assert (answered["task"]["id"], answered["task"]["state"]) == (task_id, "submitted")
    assert [i["message"]["parts"] for i in cli.run_json("read", agent="bob")["items"]] == [[{"text": "main"}]]

    review = tmp_path / "review.md"
    review.write_text("LGTM — ship it\n")
    shot = tmp_path / "shot.png"
    shot.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    done = cli.run_json(
        "task", "update", task_id, "--state", "completed", "--message", "done",
        "--artifact", review, "--artifact", shot, "--data", '{"score": 9}',
        agent="bob",
    )  # fmt: skip
    assert done["state"] == "completed"
    text, binary, data = done["artifacts"]
    assert (text["name"], text["parts"]) == (
        "review.md",
        [{"text": "LGTM — ship it\n", "filename": "review.md", "media_type": "text/markdown"}],
    )
    assert binary["parts"][0]["media_type"] == "image/png" and binary["parts"][0]["filename"] == "shot.png"
    assert base64.b64decode(binary["parts"][0]["raw"]) == shot.read_bytes()
    assert data["parts"] == [{"data": {"score": 9}, "media_type": "application/json"}]

    shown = cli.run_json("task", "show", task_id, "--history", "10", agent="alice")
    assert shown["status_parts"] == [{"text": "done"}] and len(shown["artifacts"]) == 3
    assert [m["sender"] for m in shown["history"]][-1] == "bob"
    human = cli.run("task", "show", task_id, agent="alice")
    assert "completed" in human.stdout and "LGTM — ship it" in human.stdout and "shot.png" in human.stdout
    last = cli.run_json("read", agent="alice")["items"][-1]  # the requester's mail carries the artifacts too
    assert last["task_state"] == "completed"
    assert {"text": "LGTM — ship it\n", "filename": "review.md", "media_type": "text/markdown"} in last["message"][
        "parts"
    ]


def test_each_update_is_headed_with_the_state_it_made_not_the_tasks_state_now(cli) -> None:
    task_id = _open(cli)
    cli.run_json("read", agent="bob")  # taken up: "working" mail to alice
    cli.run_json("task", "update", task_id, "--state", "working", "--message", "starting now", agent="bob")
    cli.run_json("task", "update", task_id, "--state", "input-required", "--message", "which branch?", agent="bob")

    def state_of(items: list[dict], words: str) -> str:
        [item] = [i for i in items if i["message"]["parts"] == [{"text": words}]]
        return item["task_state"]

    listed = cli.run_json("inbox", agent="alice")
    assert (state_of(listed, "starting now"), state_of(listed, "which branch?")) == ("working", "input-required")
    human = cli.run("read", "--peek", agent="alice").stdout
    starting = human[: human.index("starting now")]
    assert starting.rstrip().endswith(f"task {task_id} working"), human
    items = cli.run_json("read", agent="alice")["items"]
    assert (state_of(items, "starting now"), state_of(items, "which branch?")) == ("working", "input-required")
    assert cli.run_json("task", "show", task_id, agent="alice")["state"] == "input-required"  # the state now
    [starting] = [i for i in items if i["message"]["parts"] == [{"text": "starting now"}]]
    status = cli.run("status", starting["message"]["id"], agent="alice").stdout  # says which state it gives
    assert f"task {task_id}: input-required (its state now)" in status, status


def test_a_task_to_a_name_nobody_used_says_so_on_stderr(cli) -> None:
    cli.run_json("agent", "create", "bob", agent="alice")
    typo = cli.run("task", "send", "bobb", "please review", agent="alice")
    assert typo.returncode == 0 and len(typo.stdout.split()) == 1  # still only the id on stdout
    assert "note: " in typo.stderr and "'bob'" in typo.stderr, typo.stderr
    known = cli.run("task", "send", "bob", "please review", agent="alice")
    assert known.stderr == "", known.stderr


def test_cancel_tells_the_worker_and_a_finished_task_moves_no_more(cli, expect_error) -> None:
    task_id = _open(cli)
    cli.run_json("read", agent="bob")
    canceled = cli.run_json("task", "cancel", task_id, agent="alice")
    assert canceled["state"] == "canceled"
    [told] = cli.run_json("read", agent="bob")["items"]
    assert told["task_state"] == "canceled" and "canceled by alice" in told["message"]["parts"][0]["text"]
    expect_error(
        cli.run("task", "update", task_id, "--state", "working", "--json", agent="bob"), "task_finished", as_json=True
    )
    expect_error(cli.run("task", "cancel", task_id, "--json", agent="alice"), "task_finished", as_json=True)


def test_bad_input_is_refused_with_a_stable_code_and_sends_nothing(cli, expect_error, tmp_path) -> None:
    task_id = _open(cli)
    bad_json = expect_error(
        cli.run("task", "update", task_id, "--state", "working", "--data", "{nope", "--json", agent="bob"),
        "bad_request",
        as_json=True,
    )
    assert "not JSON" in bad_json["message"] and "nothing was sent" in bad_json["message"]
    missing = cli.run(
        "task", "update", task_id, "--state", "working", "--artifact", tmp_path / "gone.txt", "--json", agent="bob"
    )
    assert "cannot read" in expect_error(missing, "bad_request", as_json=True)["message"]
    huge = tmp_path / "huge.bin"
    huge.write_bytes(b"x" * (300 * 1024))
    too_big = cli.run("task", "update", task_id, "--artifact", huge, "--json", agent="bob")
    assert "URL" in expect_error(too_big, "too_large", as_json=True)["message"]
    expect_error(
        cli.run("task", "update", task_id, "--state", "done", "--json", agent="bob"), "bad_task_state", as_json=True
    )
    expect_error(
        cli.run("task", "update", task_id, "--state", "completed", "--json", agent="alice"), "forbidden", as_json=True
    )
    expect_error(cli.run("task", "show", task_id, "--json", agent="carol"), "unknown_task", as_json=True)
    expect_error(cli.run("task", "show", "nope", agent="alice"), "unknown_task", as_json=False)
    expect_error(cli.run("task", "list", "--state", "bogus", "--json", agent="alice"), "bad_task_state", as_json=True)
    expect_error(cli.run("task", "send", "#ops", "hello", "--json", agent="alice"), "bad_request", as_json=True)
    # Nothing above moved the task or wrote mail.
    task = cli.run_json("task", "show", task_id, agent="alice")
    assert (task["state"], task["generation"]) == ("submitted", 1)
    assert cli.run_json("read", "--peek", agent="alice")["items"] == []
