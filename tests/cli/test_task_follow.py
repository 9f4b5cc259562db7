"""Delegation that waits, through the real CLI on the embedded store: ``delegate`` / ``task send
--wait`` follow a task to its end and write its artifacts (exit 0 completed, 1 failed, 2 timed
out and canceled); ``send --wait-reply`` asks and waits for the first reply in the thread, leaving
other mail unread; bad options send nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runner import CALL_TIMEOUT, CLI, describe, expect_error
from tests.support.waiting import scaled, wait_until


def _finished(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=scaled(CALL_TIMEOUT))
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _timed_out(proc: subprocess.CompletedProcess[str]) -> str:
    """Exit 2 with ``timed_out`` as the last line: what was said before it (the send, the task's
    moves) stays said."""
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, describe(proc)
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("error: timed_out: "), describe(proc)
    return last


def _asked_of(cli: CLI, agent: str) -> dict[str, Any]:
    """The task ``agent`` was asked, once it is there (the waiting command opened it)."""

    def asked() -> dict[str, Any] | None:
        tasks = cli.run_json("task", "list", agent=agent)["tasks"]
        return tasks[0] if tasks else None

    task = wait_until(asked, what=f"a task asked of {agent}")
    assert task is not None
    return task


def test_delegate_waits_for_the_result_and_writes_the_artifacts(cli: CLI, tmp_path: Path) -> None:
    out = tmp_path / "out"
    waiting = cli.spawn("delegate", "ben", "write a haiku about queues", "--wait", "--out", out, "--json", agent="lead")
    task = _asked_of(cli, "ben")
    cli.run_json("task", "update", task["id"], "--state", "working", "--message", "on it", agent="ben")
    haiku = tmp_path / "haiku.txt"
    haiku.write_text("agents in a row\n")
    picture = tmp_path / "dot.bin"
    picture.write_bytes(b"\x00\x01\xff")
    cli.run_json(
        "task", "update", task["id"], "--state", "completed", "--artifact", haiku, "--artifact", picture,
        "--data", '{"lines": 1}', agent="ben",
    )  # fmt: skip
    done = _finished(waiting)
    assert done.returncode == 0, describe(done)
    document = json.loads(done.stdout)
    assert (document["task"]["id"], document["task"]["state"]) == (task["id"], "completed")
    written = {Path(p).name: Path(p) for p in document["written"]}
    assert set(written) == {"haiku.txt", "dot.bin", "data"}
    assert (out / "haiku.txt").read_text() == "agents in a row\n"
    assert (out / "dot.bin").read_bytes() == b"\x00\x01\xff"  # raw bytes as they are
    assert json.loads((out / "data").read_text()) == {"lines": 1}
    assert "working" in done.stderr and "on it" in done.stderr  # each move told as it happens


def test_task_send_wait_exits_1_when_the_task_fails(cli: CLI) -> None:
    waiting = cli.spawn("task", "send", "ben", "try it", "--wait", agent="lead")
    task = _asked_of(cli, "ben")
    cli.run_json("task", "update", task["id"], "--state", "failed", "--message", "the tests do not pass", agent="ben")
    done = _finished(waiting)
    assert done.returncode == 1, describe(done)
    assert "failed" in done.stdout and "the tests do not pass" in done.stdout


def test_a_task_that_does_not_end_in_time_is_canceled_and_its_worker_told(cli: CLI) -> None:
    said = _timed_out(cli.run("delegate", "ben", "never answered", "--wait", "--timeout", "0.5", agent="lead"))
    assert "canceled and ben was told" in said
    [task] = cli.run_json("task", "list", agent="lead")["tasks"]
    assert task["state"] == "canceled"
    told = cli.run_json("read", agent="ben")["items"]
    assert [item["task_state"] for item in told] == ["submitted", "canceled"]


@pytest.mark.parametrize(
    "args",
    [
        ["delegate", "ben", "x", "--out", "somewhere"],  # --out without --wait
        ["delegate", "ben", "x", "--wait", "--timeout", "0"],
        ["delegate", "ben", "x", "--wait", "--timeout", "nan"],
        ["task", "send", "ben", "x", "--wait", "--timeout", "-3"],
        ["send", "ben", "x", "--wait-reply", "--timeout", "0"],
    ],
)
def test_bad_wait_options_send_nothing(cli: CLI, args: list[str]) -> None:
    expect_error(cli.run(*args, agent="lead"), "bad_request", as_json=False)
    assert cli.run_json("task", "list", agent="lead")["tasks"] == []
    assert cli.run_json("inbox", agent="ben") == []


def test_send_wait_reply_prints_the_first_reply_and_leaves_other_mail_unread(cli: CLI) -> None:
    cli.run_json("send", "ana", "from before", agent="ben")  # older mail: not a reply
    asking = cli.spawn("send", "ben", "which branch?", "--wait-reply", "--json", agent="ana")
    question = wait_until(
        lambda: [i for i in cli.run_json("inbox", agent="ben") if i["message"]["parts"] == [{"text": "which branch?"}]],
        what="ben has the question",
    )[0]
    cli.run_json("send", "ana", "unrelated news", agent="ben")
    cli.run_json("reply", question["message"]["id"], "main, please", agent="ben")
    done = _finished(asking)
    assert done.returncode == 0, describe(done)
    document = json.loads(done.stdout)
    assert document["reply"]["message"]["parts"] == [{"text": "main, please"}]
    assert document["reply"]["message"]["reply_to"] == document["message_id"]
    unread = [i["message"]["parts"][0]["text"] for i in cli.run_json("read", agent="ana")["items"]]
    assert unread == ["from before", "unrelated news"]  # only the reply was taken


def test_send_wait_reply_times_out_with_exit_2_and_the_message_stays_sent(cli: CLI) -> None:
    proc = cli.run("send", "ben", "anyone?", "--wait-reply", "--timeout", "0.3", agent="ana")
    assert "stays sent" in _timed_out(proc) and proc.stdout.startswith("sent ")
    assert [i["message"]["parts"] for i in cli.run_json("read", agent="ben")["items"]] == [[{"text": "anyone?"}]]
