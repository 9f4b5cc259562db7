"""Two agents exchanging mail through the CLI: send, read, peek, status, ack, inbox, threads, parts."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import uuid

import pytest


def _only_item(result: dict) -> dict:
    assert len(result["items"]) == 1, result
    return result["items"][0]


def test_send_json_reports_message_id_and_state_per_recipient(run_json):
    sent = run_json("send", "bob", "hello bob", "--subject", "greeting", agent="alice")

    uuid.UUID(sent["message_id"])  # a real id
    assert sent["thread_id"] == sent["message_id"]  # a new message starts its own thread
    assert sent["duplicate"] is False
    [bob] = sent["recipients"]
    assert bob["address"] == "bob"
    assert bob["agent"] == "bob"
    assert bob["state"] == "queued"  # bob has never run: stored, not delivered to anyone
    assert bob["sessions"] == []


def test_recipient_reads_text_subject_and_sender_and_a_second_read_is_empty(run_json, texts):
    sent = run_json("send", "bob", "the build is green", "--subject", "ci", agent="alice")

    first = run_json("read", agent="bob")
    item = _only_item(first)
    assert item["message"]["id"] == sent["message_id"]
    assert item["message"]["sender"] == "alice"
    assert item["message"]["subject"] == "ci"
    assert texts(first) == ["the build is green"]
    assert item["state"] == "read"
    assert first["unread"] == 0

    second = run_json("read", agent="bob")
    assert second["items"] == []  # drain never repeats
    assert second["unread"] == 0


def test_read_peek_shows_mail_without_marking_it_read(run_json, texts):
    sent = run_json("send", "bob", "peek at me", agent="alice")

    for _ in range(2):  # peeking twice shows it twice: nothing is consumed
        peeked = run_json("read", "--peek", agent="bob")
        assert texts(peeked) == ["peek at me"]
        assert peeked["items"][0]["state"] == "queued"
        assert peeked["unread"] == 1

    status = run_json("status", sent["message_id"], agent="alice")
    assert status["recipients"][0]["state"] == "queued"
    assert status["recipients"][0]["read_at"] is None

    drained = run_json("read", agent="bob")  # a real read still gets it, once
    assert texts(drained) == ["peek at me"]


def test_status_shows_read_for_the_recipient_with_timestamps(run_json):
    sent = run_json("send", "bob", "status please", "--subject", "s", agent="alice")
    message_id = sent["message_id"]

    before = run_json("status", message_id, agent="alice")
    assert before["message_id"] == message_id
    assert before["sender"] == "alice"
    assert before["subject"] == "s"
    [row] = before["recipients"]
    assert (row["agent"], row["state"]) == ("bob", "queued")
    assert row["queued_at"] is not None
    assert row["read_at"] is None and row["acked_at"] is None

    run_json("read", agent="bob")

    after = run_json("status", message_id, agent="alice")
    [row] = after["recipients"]
    assert (row["agent"], row["state"]) == ("bob", "read")
    assert row["queued_at"] is not None
    assert row["delivered_at"] is not None
    assert row["read_at"] is not None
    assert row["read_at"] >= row["queued_at"]  # ISO-8601 UTC strings order like the times
    assert row["acked_at"] is None

    # The recipient may look too, and sees its own row.
    mine = run_json("status", message_id, agent="bob")
    assert [(r["agent"], r["state"]) for r in mine["recipients"]] == [("bob", "read")]


def test_ack_marks_acked_and_inbox_lists_unacked_unless_all(run_json):
    first = run_json("send", "bob", "first", agent="alice")["message_id"]
    second = run_json("send", "bob", "second", agent="alice")["message_id"]

    inbox = run_json("inbox", agent="bob")  # unread mail is listed too, and inbox marks nothing
    assert [i["message"]["id"] for i in inbox] == [first, second]
    assert {i["state"] for i in inbox} == {"queued"}
    run_json("read", agent="bob")

    acked = run_json("ack", first, agent="bob")
    assert acked == {"acked": [first]}

    status = run_json("status", first, agent="alice")
    [row] = status["recipients"]
    assert row["state"] == "acked"
    assert row["acked_at"] is not None and row["read_at"] is not None

    unacked = run_json("inbox", agent="bob")
    assert [i["message"]["id"] for i in unacked] == [second]

    everything = run_json("inbox", "--all", agent="bob")
    assert [(i["message"]["id"], i["state"]) for i in everything] == [(first, "acked"), (second, "read")]


def test_reply_to_joins_the_thread_of_the_message_it_answers(run_json, texts):
    question = run_json("send", "bob", "can you review?", agent="alice")
    run_json("read", agent="bob")

    reply = run_json("send", "alice", "looks good", "--reply-to", question["message_id"], agent="bob")
    assert reply["message_id"] != question["message_id"]
    assert reply["thread_id"] == question["thread_id"] == question["message_id"]

    got = run_json("read", agent="alice")
    assert texts(got) == ["looks good"]
    message = got["items"][0]["message"]
    assert message["sender"] == "bob"
    assert message["reply_to"] == question["message_id"]
    assert message["thread_id"] == question["message_id"]


def test_send_to_several_recipients_reaches_each_once(run_json, texts):
    sent = run_json("send", "bob,carol", "team update", agent="alice")
    assert sorted((r["agent"], r["state"]) for r in sent["recipients"]) == [("bob", "queued"), ("carol", "queued")]

    for name in ("bob", "carol"):
        got = run_json("read", agent=name)
        assert texts(got) == ["team update"], name
        assert got["items"][0]["message"]["id"] == sent["message_id"]

    status = run_json("status", sent["message_id"], agent="alice")
    assert sorted((r["agent"], r["state"]) for r in status["recipients"]) == [("bob", "read"), ("carol", "read")]


def _dump(db) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


@pytest.mark.parametrize("to", ["#ghostchan", "bob,#ghostchan", "#ghostchan,newbie"])
def test_a_send_to_a_channel_that_does_not_exist_says_so_and_stores_nothing(cli, run_json, expect_error, to):
    run_json("send", "bob", "first", agent="alice")  # alice and bob exist
    before = _dump(cli.default_db)
    line = expect_error(cli.run("send", to, "hi", agent="alice"), "unknown_channel", as_json=False)
    assert "no channel #ghostchan" in line and "channel create ghostchan" in line and "channel list" in line
    assert "Nothing was sent to anyone" in line
    assert _dump(cli.default_db) == before
    posted = expect_error(
        cli.run("channel", "post", "ghostchan", "hi", "--json", agent="alice"), "unknown_channel", as_json=True
    )
    assert "no channel #ghostchan" in posted["message"]


def test_a_send_where_one_recipient_is_refused_fails_whole_and_names_each_refusal(cli, run_json, expect_error):
    run_json("send", "bob", "first", agent="alice")
    run_json("channel", "create", "closed", agent="bob")
    before = _dump(cli.default_db)
    refused = expect_error(
        cli.run("send", "bob,#closed,carol@nomachine", "hi", "--json", agent="alice"), "not_member", as_json=True
    )
    assert "not a member of #closed" in refused["message"] and "carol" in refused["message"]  # each refusal
    assert _dump(cli.default_db) == before  # bob got nothing: a send reaches every recipient or none
    sent = run_json("send", "bob,carol", "hi", agent="alice")  # exit 0: every recipient got it
    assert sorted(r["state"] for r in sent["recipients"]) == ["queued", "queued"]


def test_send_dash_reads_the_body_from_stdin(run_json, texts):
    body = "line one\nline two — with ünïcödé ✓\n\n  indented line\n"
    run_json("send", "bob", "-", agent="alice", input=body)

    got = run_json("read", agent="bob")
    assert texts(got) == [body]


def test_data_and_url_options_add_parts(run_json):
    run_json(
        "send",
        "bob",
        "see attached",
        "--data",
        '{"k": 1}',
        "--data",
        "[1, 2]",
        "--url",
        "https://example.com/report.pdf",
        agent="alice",
    )

    got = run_json("read", agent="bob")
    parts = got["items"][0]["message"]["parts"]
    assert parts == [
        {"text": "see attached"},
        {"data": {"k": 1}},
        {"data": [1, 2]},
        {"url": "https://example.com/report.pdf"},
    ]


def test_concurrent_readers_never_get_the_same_message(cli, run_json):
    count = 30
    # One process sends them all (cheaper than 30 CLI starts), through the same client the CLI uses.
    sender = (
        "from callboard.client.local import LocalClient\n"
        "from callboard.requests import SendRequest\n"
        "client = LocalClient.open()\n"
        f"for i in range({count}):\n"
        "    client.send(SendRequest(to='bob', text=f'message {i}'))\n"
        "client.close()\n"
    )
    subprocess.run([sys.executable, "-c", sender], env=cli.env("alice"), cwd=cli.workdir, check=True, timeout=60)

    seen: list[list[str]] = [[], [], []]
    failures: list[str] = []

    def drain(into: list[str]) -> None:
        while True:
            proc = cli.run("read", "--limit", "4", "--json", agent="bob")
            if proc.returncode != 0:
                failures.append(proc.stderr)
                return
            items = json.loads(proc.stdout)["items"]
            if not items:
                return
            into.extend(item["message"]["id"] for item in items)

    readers = [threading.Thread(target=drain, args=(bucket,)) for bucket in seen]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(timeout=60)
    assert not failures, failures

    every = [message_id for bucket in seen for message_id in bucket]
    assert len(every) == count, f"{len(every)} reads for {count} messages"
    assert len(set(every)) == count, "a message was read twice"
    assert run_json("read", agent="bob")["items"] == []


@pytest.mark.parametrize("recipient_case", ["Bob", " bob "])
def test_recipient_names_are_case_insensitive(run_json, texts, recipient_case):
    run_json("send", recipient_case, "case", agent="alice")
    assert texts(run_json("read", agent="bob")) == ["case"]


def test_reply_answers_the_sender_in_the_messages_thread(run_json, run, expect_error, texts):
    asked = run_json("send", "bob", "can you review #42?", agent="alice")
    run_json("channel", "create", "ops", agent="carol")
    run_json("channel", "join", "ops", agent="bob")
    posted = run_json("channel", "post", "ops", "deploying at five", agent="carol")

    answer = run_json("reply", asked["message_id"], "on it", agent="bob")
    assert [r["agent"] for r in answer["recipients"]] == ["alice"]
    assert answer["thread_id"] == asked["thread_id"]
    on_post = run_json("reply", posted["message_id"], "-", agent="bob", input="good luck\n")
    assert [r["agent"] for r in on_post["recipients"]] == ["carol"]  # the poster, not the channel

    got = _only_item(run_json("read", agent="alice"))["message"]
    assert (got["sender"], got["reply_to"], got["thread_id"]) == ("bob", asked["message_id"], asked["thread_id"])
    assert texts(run_json("read", agent="carol")) == ["good luck\n"]

    # Not a message of yours to answer: one line, nothing sent.
    expect_error(run("reply", asked["message_id"], "me again", agent="alice"), "bad_request", as_json=False)
    expect_error(run("reply", asked["message_id"], "who?", "--json", agent="dave"), "unknown_message", as_json=True)
    assert run_json("read", "--peek", agent="alice")["unread"] == 0  # either would have gone to alice
