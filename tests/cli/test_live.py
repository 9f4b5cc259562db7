"""Live sessions: --require-live, sessions started for a pid, and a reader waiting for mail."""

from __future__ import annotations

import json
import subprocess

import pytest


def _address(session: dict) -> str:
    return f"{session['agent']}@{session['machine']}#{session['pid']}"


def test_require_live_to_an_agent_without_a_live_session_fails_and_stores_nothing(run, run_json, expect_error):
    run_json("agent", "create", "erin", agent="alice")  # erin exists but has never run

    error = expect_error(
        run("send", "erin", "are you there?", "--require-live", "--json", agent="alice"),
        "no_live_session",
        as_json=True,
    )
    assert "erin" in error["message"]

    assert run_json("read", agent="erin")["items"] == []
    assert run_json("inbox", "--all", agent="erin") == []


def test_require_live_with_a_live_session_delivers_to_that_session(run, run_json, expect_error, live_process):
    session = run_json("session", "start", "--pid", live_process.pid, "--json", agent="erin")
    assert session["live"] is True and session["pid"] == live_process.pid

    # Every recipient must be live: bob is not, so nothing is stored for erin either.
    expect_error(
        run("send", "erin,bob", "all or nothing", "--require-live", "--json", agent="alice"),
        "no_live_session",
        as_json=True,
    )
    assert run_json("inbox", "--all", agent="erin") == []

    sent = run_json("send", "erin", "you are live", "--require-live", agent="alice")
    [outcome] = sent["recipients"]
    assert outcome["agent"] == "erin"
    assert outcome["state"] == "delivered"
    assert outcome["sessions"] == [_address(session)]

    got = run_json("read", agent="erin")
    assert [i["message"]["id"] for i in got["items"]] == [sent["message_id"]]

    # When the session's process dies, the session is no longer live.
    live_process.kill()
    live_process.wait()
    expect_error(run("send", "erin", "still there?", "--require-live", agent="alice"), "no_live_session", as_json=False)


def test_a_waiting_reader_is_live_and_wakes_when_mail_arrives(cli, run_json, wait_until):
    # Create the store first: two processes opening a brand-new store at once can trip over its
    # first-use race (see test_concurrency.py), which is not what this test is about.
    run_json("whoami", agent="dave")
    reader = cli.spawn("read", "--wait", "20", "--json", agent="carol")
    try:
        # The waiting reader registers a session while it waits: poll 'who' until it shows.
        def carol_is_live() -> dict | None:
            if reader.poll() is not None:
                out, err = reader.communicate()
                pytest.fail(f"the reader ended before any mail was sent (exit {reader.returncode}):\n{out}\n{err}")
            who = run_json("who", agent="dave")
            carol = next((a for a in who["agents"] if a["name"] == "carol"), None)
            return carol if carol is not None and carol["live"] else None

        carol = wait_until(carol_is_live, 15, "carol's waiting reader to show as a live session")
        [session] = [s for s in carol["sessions"] if s["live"]]
        assert session["pid"] == reader.pid
        assert session["runtime"] == "cli"

        sent = run_json("send", "carol", "wake up, carol", agent="dave")
        [outcome] = sent["recipients"]
        assert outcome["state"] == "delivered"  # truthful: a live reader is there to take it
        assert outcome["sessions"] == [_address(session)]

        try:
            out, err = reader.communicate(timeout=10)  # far sooner than the 20 s it would wait
        except subprocess.TimeoutExpired:
            pytest.fail("the waiting reader did not return within 10 s of the send")
        assert reader.returncode == 0, err
        got = json.loads(out)
        assert [i["message"]["id"] for i in got["items"]] == [sent["message_id"]]
        message = got["items"][0]["message"]
        assert message["sender"] == "dave"
        assert message["parts"] == [{"text": "wake up, carol"}]
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.communicate()

    # Its session ended with it.
    who = run_json("who", agent="dave")
    carol = next(a for a in who["agents"] if a["name"] == "carol")
    assert carol["live"] is False
    # and the message was read exactly once
    assert run_json("read", agent="carol")["items"] == []
