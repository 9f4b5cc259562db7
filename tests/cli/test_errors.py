"""Bad input: exit 2, one line with a stable code (stderr, or JSON on stdout with --json), no traceback."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

UNKNOWN_ID = "01a22958-0000-7000-8000-000000000000"  # well-formed, never issued


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    code: str
    agent: str | None = "alice"
    input: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    prepare: str | None = None  # a named setup step, see _prepare


CASES = {
    "bad-recipient-name": Case(("send", "bad name!!", "x"), "bad_address"),
    "bad-channel-name": Case(("channel", "create", "bad channel!"), "bad_name"),
    "status-unknown-id": Case(("status", UNKNOWN_ID), "unknown_message"),
    "status-malformed-id": Case(("status", "not-a-message-id"), "unknown_message"),
    "ack-unknown-id": Case(("ack", UNKNOWN_ID), "unknown_message"),
    "ack-malformed-id": Case(("ack", "12345"), "unknown_message"),
    "oversized-body-from-stdin": Case(("send", "bob", "-"), "too_large", input="x" * 300 * 1024),
    "empty-message": Case(("send", "bob", ""), "bad_request"),
    "blank-message-from-stdin": Case(("send", "bob", "-"), "bad_request", input="  \n\t\n"),
    "bad-data-json": Case(("send", "bob", "hi", "--data", "{not json"), "bad_request"),
    "reply-to-unknown-message": Case(("send", "bob", "hi", "--reply-to", UNKNOWN_ID), "unknown_message"),
    "unknown-agent-describe": Case(("agent", "describe", "nobody"), "unknown_agent"),
    "unknown-channel-join": Case(("channel", "join", "nowhere"), "unknown_channel"),
    "unknown-session-end": Case(("session", "end", UNKNOWN_ID), "unknown_session"),
    "require-live-without-session": Case(("send", "bob", "hi", "--require-live"), "no_live_session"),
    "delete-agent-without-yes": Case(("agent", "delete", "bob"), "bad_request", prepare="bob"),
    "delete-no-agent-without-yes": Case(("agent", "delete", "nobody"), "unknown_agent"),
    "read-limit-zero": Case(("read", "--limit", "0"), "bad_request"),
    "session-pid-zero": Case(("session", "start", "--pid", "0"), "bad_request"),
    "missing-argument": Case(("send", "bob"), "usage"),
    "unknown-option": Case(("send", "bob", "hi", "--bogus"), "usage"),
    "unknown-command": Case(("frobnicate",), "usage"),
    "option-value-of-wrong-type": Case(("read", "--wait", "soon"), "usage"),
    "bad-CALLBOARD_AGENT": Case(("whoami",), "bad_name", agent="Not A Name!"),
    "no-identity": Case(("whoami",), "no_identity", agent=None),
    "no-identity-on-send": Case(("send", "bob", "hi"), "no_identity", agent=None),
    "bad-agent-file": Case(("whoami",), "bad_name", agent=None, prepare="bad-agent-file"),
    "bad-CALLBOARD_WORKSPACE": Case(("whoami",), "bad_name", env={"CALLBOARD_WORKSPACE": "Bad Workspace"}),
    "db-is-not-a-database": Case(("whoami",), "store_unavailable", prepare="junk-db"),
    "unreadable-config-file": Case(("whoami",), "bad_request", prepare="bad-config"),
}


def _prepare(cli, step: str | None) -> tuple[Path | None, list[str]]:
    """Run a case's setup; return the cwd to use and extra arguments."""
    if step == "bad-agent-file":
        (cli.workdir / ".callboard-agent").write_text("Not A Valid Name!\n")
    elif step == "junk-db":
        junk = cli.root / "junk.db"
        junk.write_text("this is not a database\n" * 100)
        return None, ["--db", str(junk)]
    elif step == "bob":
        assert cli.run("agent", "create", "bob", agent="alice").returncode == 0
    elif step == "bad-config":
        cli.callboard_home.mkdir(parents=True, exist_ok=True)
        (cli.callboard_home / "config.toml").write_text("agent = [unterminated\n")
    return None, []


@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_input_exits_2_with_one_line_naming_its_code(cli, run, expect_error, case, as_json):
    if case.agent is None and case.prepare is None and not cli.outside_any_project():
        pytest.skip(f"{cli.workdir} is inside a git repository or below an agent file")
    cwd, extra = _prepare(cli, case.prepare)
    args = [*case.args, *extra, *(["--json"] if as_json else [])]
    proc = run(*args, agent=case.agent, input=case.input, env=case.env, cwd=cwd)
    expect_error(proc, case.code, as_json=as_json)


def test_a_bad_send_leaves_the_recipients_mailbox_unchanged(run, run_json, expect_error):
    original = run_json("send", "bob", "the one real message", agent="alice")

    bad_sends = [
        (("send", "bob", "-"), "too_large", "y" * 300 * 1024),
        (("send", "bob", ""), "bad_request", None),
        (("send", "bob", "hi", "--data", "{broken"), "bad_request", None),
        (("send", "bob,newcomer,bad name!!", "hi"), "bad_address", None),
        (("send", "bob", "hi", "--reply-to", UNKNOWN_ID), "unknown_message", None),
        (("send", "bob", "hi", "--thread", "not-a-thread"), "unknown_message", None),
        (("send", "bob", "hi", "--subject", "s" * 1000), "too_large", None),
        (("send", "bob,newcomer", "hi", "--require-live"), "no_live_session", None),
    ]
    for args, code, stdin in bad_sends:
        expect_error(run(*args, "--json", agent="alice", input=stdin), code, as_json=True)

    inbox = run_json("inbox", "--all", agent="bob")
    assert [(i["message"]["id"], i["state"]) for i in inbox] == [(original["message_id"], "queued")]
    assert "newcomer" not in [a["name"] for a in run_json("agent", "list", agent="alice")]
    got = run_json("read", agent="bob")
    assert [i["message"]["id"] for i in got["items"]] == [original["message_id"]]


def test_a_body_that_is_not_utf8_never_makes_the_recipients_json_unreadable(cli, run_json):
    """Raw bytes on stdin: reject them (exit 2, nothing stored) or store text that reads back as JSON."""
    sent = subprocess.run(
        cli.argv("send", "bob", "-", "--json"),
        env=cli.env("alice"),
        cwd=cli.workdir,
        input=b"caf\xe9 \xff\xfe bytes that are not UTF-8\n",
        capture_output=True,
        timeout=30,
    )
    assert b"Traceback" not in sent.stdout + sent.stderr
    assert sent.returncode in (0, 2), sent
    if sent.returncode == 2:
        assert json.loads(sent.stdout)["error"]["code"] == "bad_request"
        assert run_json("inbox", "--all", agent="bob") == []
        return

    read = subprocess.run(
        cli.argv("read", "--json"), env=cli.env("bob"), cwd=cli.workdir, capture_output=True, timeout=30
    )
    assert read.returncode == 0, read
    try:
        document = json.loads(read.stdout.decode("utf-8"))  # JSON text is UTF-8 (RFC 8259)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        at = getattr(error, "start", getattr(error, "pos", 0))
        pytest.fail(
            f"after a non-UTF-8 send (exit 0), bob's 'read --json' is not valid UTF-8 JSON: {error}; "
            f"bytes there: {read.stdout[max(at - 30, 0) : at + 30]!r}"
        )
    assert len(document["items"]) == 1
