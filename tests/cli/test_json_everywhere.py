"""--json works on every command: one parseable JSON document on stdout, exit 0."""

from __future__ import annotations

import json


def test_every_command_prints_one_json_document(cli, live_process):
    def call(*args: object, agent: str = "alice"):
        proc = cli.run(*args, "--json", agent=agent)
        where = f"callboard {' '.join(map(str, args))} --json (as {agent})"
        assert proc.returncode == 0, f"{where}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, where
        try:
            return json.loads(proc.stdout)  # the whole of stdout is exactly one document
        except json.JSONDecodeError as error:
            raise AssertionError(f"{where}: stdout is not one JSON document ({error}):\n{proc.stdout}") from None

    me = call("whoami")
    assert me["agent"] == "alice" and me["source"] == "env:CALLBOARD_AGENT"
    assert me["workspace"] == "default"
    assert me["store"] == str(cli.default_db)

    helper = call("agent", "create", "helper", "--description", "runs errands", "--skill", "fetch", "--skill", "carry")
    assert (helper["name"], helper["description"], helper["skills"]) == ("helper", "runs errands", ["fetch", "carry"])
    assert "helper" in [a["name"] for a in call("agent", "list")]
    assert call("agent", "describe", "helper")["skills"] == ["fetch", "carry"]
    assert call("agent", "describe", "helper", "--description", "new card")["description"] == "new card"

    created = call("channel", "create", "ops", "--description", "operations")
    assert (created["name"], created["members"], created["joined"]) == ("ops", 1, True)
    joined = call("channel", "join", "ops", agent="bob")
    assert (joined["members"], joined["joined"]) == (2, True)
    assert [(c["name"], c["joined"]) for c in call("channel", "list", agent="carol")] == [("ops", False)]
    assert sorted(m["agent"] for m in call("channel", "members", "#ops")) == ["alice", "bob"]
    posted = call("channel", "post", "ops", "deploying", "--subject", "deploy")
    assert [(r["agent"], r["channel"]) for r in posted["recipients"]] == [("bob", "ops")]
    left = call("channel", "leave", "ops", agent="bob")
    assert (left["members"], left["joined"]) == (1, False)
    inner = call("channel", "create", "inner", "--invite-only")
    assert (inner["name"], inner["invite_only"]) == ("inner", True)
    assert call("channel", "invite", "inner", "bob")["members"] == 2
    assert call("channel", "remove", "inner", "bob")["members"] == 1

    sent = call("send", "bob", "hi bob")
    assert sent["recipients"][0]["state"] == "queued"
    peeked = call("read", "--peek", agent="bob")
    assert len(peeked["items"]) == 2 and peeked["unread"] == 2
    read = call("read", agent="bob")
    assert [i["message"]["id"] for i in read["items"]] == [posted["message_id"], sent["message_id"]]
    assert len(call("inbox", agent="bob")) == 2
    assert call("ack", sent["message_id"], agent="bob") == {"acked": [sent["message_id"]]}
    assert len(call("inbox", "--all", agent="bob")) == 2
    assert call("status", sent["message_id"])["recipients"][0]["state"] == "acked"

    session = call("session", "start", "--pid", live_process.pid, "--runtime", "test-runner")
    assert (session["agent"], session["pid"], session["runtime"], session["live"]) == (
        "alice",
        live_process.pid,
        "test-runner",
        True,
    )
    beat = call("session", "heartbeat", session["id"])
    assert (beat["id"], beat["live"]) == (session["id"], True)
    assert beat["last_seen"] >= session["last_seen"]
    who = call("who")
    alice = next(a for a in who["agents"] if a["name"] == "alice")
    assert alice["live"] is True and [s["id"] for s in alice["sessions"]] == [session["id"]]
    ended = call("session", "end", session["id"])
    assert ended["ended_at"] is not None and ended["live"] is False

    assert [w["name"] for w in call("workspace", "list")] == ["default"]
    assert call("agent", "delete", "helper", "--yes") == {"deleted": "helper", "unread_dropped": 0}
    assert "helper" not in [a["name"] for a in call("agent", "list")]
    assert [(e["action"], e["target"]) for e in call("audit", "--limit", "2")] == [
        ("agent.delete", "helper"),
        ("channel.remove", "bob"),
    ]
