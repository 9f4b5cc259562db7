"""What people see without --json: the key facts are there. Also the demo and the console script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.support.forgery import FORGED_LINES, forged, hidden_characters

SENT_LINE = re.compile(r"^sent ([0-9a-f-]{36})\b", re.MULTILINE)


def _row(output: str, first_word: str) -> list[str]:
    """The words of the table row that starts with ``first_word``."""
    for line in output.splitlines():
        words = line.split()
        if words and words[0] == first_word:
            return words
    raise AssertionError(f"no row for {first_word!r} in:\n{output}")


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    return proc.stdout


def test_human_send_read_and_status_show_state_sender_and_text(run):
    sent = _ok(run("send", "bob", "deploy is done", "--subject", "deploy", agent="alice"))
    match = SENT_LINE.search(sent)
    assert match, sent
    message_id = match.group(1)
    assert "queued" in _row(sent, "bob")

    read = _ok(run("read", agent="bob"))
    assert "alice" in read and "deploy" in read and "deploy is done" in read
    assert message_id in read
    assert "no new mail" in _ok(run("read", agent="bob"))

    status = _ok(run("status", message_id, agent="alice"))
    assert message_id in status
    assert "from alice" in status
    assert "read" in _row(status, "bob")


def test_human_send_names_the_live_session_and_who_shows_it(run, run_json, live_process):
    session = run_json("session", "start", "--pid", live_process.pid, agent="bob")
    address = f"bob@{session['machine']}#{live_process.pid}"

    sent = _ok(run("send", "bob,carol", "are you up?", agent="alice"))
    assert _row(sent, "bob")[2:6] == ["delivered", "pushed", "to", address]
    assert "queued" in _row(sent, "carol")

    who = _ok(run("who", agent="alice"))
    bob = _row(who, "bob")
    assert bob[1] == "yes" and address in bob  # live, 1 unread, its session
    assert bob[2] == "1"
    assert _row(who, "carol")[1:3] == ["no", "1"]


def test_demo_runs_a_dm_a_reply_a_channel_post_and_a_status(cli, run):
    proc = run("demo", timeout=60)
    out = _ok(proc)

    assert re.search(r"^reviewer\s+reviewer\s+delivered\s+pushed to reviewer@", out, re.MULTILINE), (
        out
    )  # the DM, delivered
    assert "Can you review the new /v1/orders endpoint?" in out
    assert re.search(r"^reply \S+ joins thread \S+", out, re.MULTILINE), out
    assert "Looks good; one nit on error codes." in out
    assert "backend in #release" in out and "Shipping 1.4" in out  # the channel post, read by a member
    assert re.search(r"^reviewer: read — queued .*, read ", out, re.MULTILINE), out  # the status
    assert "done." in out
    assert not cli.default_db.exists()  # the demo used a throwaway store, not the user's


def test_the_a2a_demo_works_a_task_through_an_outside_agent_with_a_question_back(cli, run):
    out = _ok(run("demo", "--scenario", "a2a", timeout=120))
    assert "translator: translates release notes into French" in out  # registered by its card
    assert re.search(r"^translator\s+translator\s+queued\s+queued for the outside A2A agent", out, re.MULTILINE), out
    assert "Formal or informal French?" in out  # the question back, as mail
    assert re.search(r"completed \(generation \d+\)", out), out  # lead's task, with the artifact
    assert out.count("Les commandes indiquent désormais leur devise.") >= 3  # remote's, lead's mail, the task
    assert not cli.default_db.exists()


def test_the_handoff_demo_shows_the_packet_compact_in_mail_and_whole_for_the_cli(cli, run):
    out = _ok(run("demo", "--scenario", "handoff", timeout=60))
    assert re.search(r"^\s*\d+ ms\s+claude-dev\s+handed over as task \S+", out, re.MULTILINE), out
    mail, whole = out.split("the packet whole")
    assert "Retries are in; the backoff cap is not." in mail and "[hand-off packet, " in mail
    assert "+MAX_ATTEMPTS = 5" not in mail and "+MAX_ATTEMPTS = 5" in whole and "Diff — whole" in whole
    assert "; 1 changed file\n" in out


def test_the_delegate_demo_hands_off_a_task_and_waits_for_its_file(cli, run):
    out = _ok(run("demo", "--scenario", "delegate", timeout=60))
    assert re.search(r"^\s*\d+ ms\s+lead\s+asked writer: task \S+ \(submitted\)", out, re.MULTILINE), out
    assert re.search(r"^\s*\d+ ms\s+writer\s+task \S+: completed", out, re.MULTILINE), out
    assert "release-notes.md" in out and "Orders carry a currency." in out
    assert not cli.default_db.exists()


def test_the_coordinate_demo_shows_each_event_and_the_decision(cli, run):
    out = _ok(run("demo", "--scenario", "coordinate", timeout=60))
    for who in ("ana", "ben", "cai"):
        assert re.search(rf"^\s*\d+ ms\s+{who}\s+epoch 0\s+proposed", out, re.MULTILINE), out
    assert re.search(r"^\s*\d+ ms\s+round\s+epoch 0\s+vote phase begins", out, re.MULTILINE), out
    assert re.search(r"^\s*\d+ ms\s+round\s+epoch 0\s+decided$", out, re.MULTILINE), out
    assert "ana's proposal, endorsed by 2 (quorum 2)" in out


def test_a_demo_scenario_it_does_not_know_is_refused(cli, run):
    proc = run("demo", "--scenario", "nope")
    assert proc.returncode != 0 and "bad_request" in proc.stderr and "mailbox, a2a" in proc.stderr


def test_the_console_script_runs(cli):
    script = Path(sys.executable).with_name("callboard")
    assert script.is_file(), f"no console script next to {sys.executable}"
    proc = subprocess.run(
        [str(script), "whoami", "--json"],
        env=cli.env("alice"),
        cwd=cli.workdir,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"agent": "alice"' in proc.stdout


# At the default width of a pipe or a small terminal (80 columns), the id a person needs for
# 'status', 'ack' and '--reply-to' must still be printed whole.
NARROW = {"COLUMNS": "80"}
LONG_SUBJECT = "quarterly numbers for the finance review, second draft with comments"


def test_human_read_at_80_columns_still_shows_the_whole_message_id(run_json, run):
    sent = run_json("send", "bob", "numbers attached", "--subject", LONG_SUBJECT, agent="alice-from-accounting")

    out = _ok(run("read", agent="bob", env=NARROW))
    assert "numbers attached" in out
    assert sent["message_id"] in out, f"the message id is cut from 'read' at 80 columns:\n{out}"


def test_human_inbox_at_80_columns_still_shows_whole_message_ids(run_json, run):
    sent = run_json("send", "bob", "short one", agent="alice")

    out = _ok(run("inbox", agent="bob", env=NARROW))
    assert sent["message_id"] in out, f"the message id is cut from 'inbox' at 80 columns:\n{out}"


def test_human_read_shows_sender_chosen_header_fields_on_one_line(run, run_json, live_process):
    """A model may read 'callboard read' through its shell tool: a terminal label or subject
    holding a forged header prints as one line, with its hiding characters shown as escapes."""
    session = run_json(
        "session", "start", "--pid", str(live_process.pid), "--terminal", forged("tmux:%1"), agent="mallory"
    )
    sent = _ok(
        run(
            "send",
            "bob",
            "hello",
            "--subject",
            forged("plans"),
            agent="mallory",
            env={"CALLBOARD_SESSION": session["id"]},
        )
    )
    assert SENT_LINE.search(sent), sent
    out = _ok(run("read", agent="bob"))
    assert not hidden_characters(out), f"hidden characters {hidden_characters(out)} in:\n{out}"
    header_lines = [line for line in out.splitlines() if "alice" in line]
    assert header_lines and all("mallory" in line for line in header_lines), out
    assert not any(line.startswith(("from: alice", FORGED_LINES[0])) for line in out.splitlines()), out


def test_counts_read_in_the_number_they_say_and_an_empty_listing_says_what_it_left_out(run, run_json):
    created = _ok(run("channel", "create", "ops", agent="alice"))
    assert "1 member" in created and "(s)" not in created, created
    sent = run_json("send", "bob", "hello", agent="alice")
    acked = _ok(run("ack", sent["message_id"], agent="bob"))
    assert "acknowledged 1 message" in acked and "(s)" not in acked, acked
    listed = _ok(run("inbox", agent="bob"))  # the acknowledged message is still in the mailbox
    assert "no unacknowledged mail" in listed and "mailbox empty" not in listed, listed
    assert sent["message_id"] in _ok(run("inbox", "--all", agent="bob"))


def test_runner_logs_of_an_agent_with_no_runner_here_has_a_code_of_its_own(run, expect_error):
    line = expect_error(run("runner", "logs", "nobody", agent="alice"), "unknown_runner", as_json=False)
    assert "no runner of nobody has run on this machine" in line
