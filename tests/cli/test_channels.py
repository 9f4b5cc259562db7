"""Channels by CLI: create, join, post (or send #name), leave; only members may post."""

from __future__ import annotations

from collections import Counter


def _read_ids(run_json, agent: str) -> list[str]:
    return [item["message"]["id"] for item in run_json("read", agent=agent)["items"]]


def test_channel_post_reaches_each_member_except_the_sender_exactly_once(run_json, run):
    run_json("channel", "create", "release", agent="alice")
    run_json("channel", "join", "release", agent="bob")
    run_json("channel", "join", "#release", agent="carol")  # with or without '#'

    post = run_json("channel", "post", "release", "shipping at five", agent="alice")
    assert sorted(r["agent"] for r in post["recipients"]) == ["bob", "carol"]
    assert {r["channel"] for r in post["recipients"]} == {"release"}
    # 'send #name' is the same post
    again = run_json("send", "#release", "one blocker left", agent="bob")
    assert sorted(r["agent"] for r in again["recipients"]) == ["alice", "carol"]

    got = {name: _read_ids(run_json, name) for name in ("alice", "bob", "carol", "dave")}
    assert got["alice"] == [again["message_id"]]
    assert got["bob"] == [post["message_id"]]
    assert got["carol"] == [post["message_id"], again["message_id"]]
    assert got["dave"] == []  # not a member
    assert all(count == 1 for ids in got.values() for count in Counter(ids).values())

    # and the message says where it came from
    item = run_json("inbox", agent="carol")[0]["message"]
    assert (item["sender"], item["channel"], item["recipients"]) == ("alice", "release", ["#release"])


def test_posting_to_a_channel_you_did_not_join_fails_with_not_member(run_json, run, expect_error):
    run_json("channel", "create", "release", agent="alice")
    run_json("channel", "join", "release", agent="bob")

    expect_error(run("channel", "post", "release", "let me in", "--json", agent="dave"), "not_member", as_json=True)
    expect_error(run("send", "#release", "let me in", agent="dave"), "not_member", as_json=False)

    # nothing was sent to anyone
    assert run_json("inbox", "--all", agent="bob") == []
    assert run_json("inbox", "--all", agent="alice") == []


def test_after_leaving_a_member_no_longer_gets_posts(run_json):
    run_json("channel", "create", "release", agent="alice")
    run_json("channel", "join", "release", agent="bob")
    run_json("channel", "join", "release", agent="carol")
    run_json("channel", "leave", "release", agent="carol")

    post = run_json("channel", "post", "release", "after carol left", agent="alice")
    assert [r["agent"] for r in post["recipients"]] == ["bob"]
    assert _read_ids(run_json, "carol") == []
    assert sorted(m["agent"] for m in run_json("channel", "members", "release", agent="bob")) == ["alice", "bob"]
