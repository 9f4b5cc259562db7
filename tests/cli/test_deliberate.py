"""Deliberate actions by CLI on the embedded store (a person's own machine): deleting an agent that
has unread mail needs --force, invite-only channels take members by invitation, and 'audit' shows
who did what, newest first."""

from __future__ import annotations


def test_deleting_an_agent_with_unread_mail_needs_force_and_audit_shows_who_did_it(run, run_json, expect_error):
    run_json("send", "bob", "are you there?", agent="alice")
    run_json("send", "bob", "hello?", agent="alice")

    refused = expect_error(run("agent", "delete", "bob", "--yes", agent="alice"), "has_unread_mail", as_json=False)
    assert "bob has 2 unread messages" in refused and "--force" in refused
    assert "bob" in [a["name"] for a in run_json("agent", "list", agent="alice")]

    forced = run("agent", "delete", "bob", "--yes", "--force", agent="alice")
    assert forced.returncode == 0, forced.stderr
    assert "deleted agent bob (dropped 2 unread)" in forced.stdout

    (entry,) = run_json("audit", agent="carol")
    assert (entry["actor"], entry["action"], entry["target"]) == ("alice", "agent.delete", "bob")
    assert entry["detail"] == {"forced": True, "unread": 2} and entry["token_kind"] is None
    table = run("audit", agent="carol")
    assert table.returncode == 0 and "agent.delete" in table.stdout and "local store" in table.stdout


def test_an_invite_only_channel_takes_members_by_invitation_and_each_change_is_audited(run, run_json, expect_error):
    for name in ("bob", "carol"):
        run_json("agent", "create", name, agent="alice")  # an invitation names existing agents
    created = run_json("channel", "create", "inner", "--invite-only", agent="alice")
    assert created["invite_only"] is True
    listing = run("channel", "list", agent="bob")
    assert "invite-only" in listing.stdout

    invited = run("channel", "invite", "inner", "bob", "carol", agent="alice")
    assert invited.returncode == 0 and "added bob, carol to #inner" in invited.stdout
    assert [m["agent"] for m in run_json("channel", "members", "inner", agent="bob")] == ["alice", "bob", "carol"]
    post = run_json("channel", "post", "inner", "welcome", agent="alice")
    assert sorted(r["agent"] for r in post["recipients"]) == ["bob", "carol"]

    run_json("channel", "remove", "inner", "carol", agent="alice")
    expect_error(run("channel", "remove", "inner", "carol", agent="alice"), "not_member", as_json=False)
    expect_error(run("channel", "invite", "inner", "nobody", "--json", agent="alice"), "unknown_agent", as_json=True)
    assert [(e["action"], e["target"]) for e in run_json("audit", "--limit", "3", agent="alice")] == [
        ("channel.remove", "carol"),
        ("channel.invite", "carol"),
        ("channel.invite", "bob"),
    ]
