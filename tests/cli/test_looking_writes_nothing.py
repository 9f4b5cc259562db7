"""Looking writes nothing: a command that only looks, or that fails, leaves every table of the
store as it was (no agent, no workspace, no row of any kind); an agent exists once it sends, is
sent to by a person, registers a session, joins or creates a channel, or is created. And a
person at this machine looks without naming an agent at all.

Each command is a real subprocess on the embedded store: a copy, for each test, of one store made
once (alice, bob, #team, a message, a task), read before and after the command by a connection
of its own (tests/support/store_rows.py)."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runner import CLI
from tests.support.store_rows import changed, snapshot

UNKNOWN_ID = "0190aaaa-0000-7000-8000-000000000000"  # well-formed, never issued
# One command per fresh home: it runs in its own process whatever this says (a home's first
# command starts the warm server for the next), so a server started for nothing is spared.
COLD = {"CALLBOARD_WARM": "0"}
NOBODY = "zed"  # an agent no command of the setup names

# Commands that only look, each of which succeeds. "{message}" and "{task}" stand for the ids
# of the store's message (alice to bob) and task (bob asked).
LOOKS = [
    ("who",),
    ("who", "bob"),
    ("agent", "list"),
    ("agent", "describe", "bob"),
    ("agent", "card", "bob"),
    ("agent", "export"),
    ("channel", "list"),
    ("channel", "members", "team"),
    ("runner", "status"),
    ("workspace", "list"),
    ("audit",),
]
# Looks at one's own mailbox, tasks and messages (an agent nobody made has none).
OWN = [
    ("whoami",),
    ("inbox",),
    ("inbox", "--all"),
    ("read",),
    ("read", "--peek"),
    ("task", "list"),
    ("status", "{message}"),  # not its own: unknown_message
]
# Commands that fail.
FAILS = [
    ("status", UNKNOWN_ID),
    ("send", "bad name!", "hi"),
    ("send", "bob", ""),
    ("send", "bob", "hi", "--reply-to", UNKNOWN_ID),
    ("send", "bob,newcomer", "hi", "--require-live"),
    ("send", "#nowhere", "hi"),
    ("ack", UNKNOWN_ID),
    ("channel", "join", "nowhere"),
    ("channel", "leave", "team"),
    ("channel", "post", "team", "hi"),
    ("channel", "create", "team"),
    ("task", "show", UNKNOWN_ID),
    ("task", "update", "{task}", "--state", "working"),
    ("task", "cancel", "{task}"),
    ("session", "end", UNKNOWN_ID),
    ("session", "heartbeat", UNKNOWN_ID),
    ("agent", "describe", "nobody"),
    ("agent", "delete", "nobody", "--yes"),
]


def _id(args: tuple[str, ...]) -> str:
    return "-".join(args).replace(" ", "_")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The store every test copies, and its ids by name."""
    cli = CLI(tmp_path_factory.mktemp("made"))
    sent = cli.run_json("send", "bob", "the build is green", agent="alice")
    cli.run_json("channel", "create", "team", agent="alice")
    task = cli.run_json("task", "send", "bob", "review it", agent="alice")
    return cli.default_db, {"message": sent["message_id"], "task": task["task"]["id"]}


@pytest.fixture
def store(cli: CLI, made: tuple[Path, dict[str, str]]) -> dict[str, str]:
    """This test's copy of the made store (as its CLI's embedded store); the ids by name."""
    source, ids = made
    cli.callboard_home.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as original, sqlite3.connect(cli.default_db) as copy:
        original.backup(copy)
    return ids


def _args(args: tuple[str, ...], ids: dict[str, str]) -> list[str]:
    return [arg.format(**ids) for arg in args]


def _run(cli: CLI, args: list[str], agent: str | None, env: dict[str, str] | None = None) -> tuple[dict, Any]:
    """What ``callboard ARGS`` (as ``agent``; None: no identity at all) changed in the store, and its run."""
    before = snapshot(cli.default_db)
    proc = cli.run(*args, agent=agent, env={**COLD, **(env or {})})
    assert "Traceback" not in proc.stderr, proc.stderr
    return changed(before, snapshot(cli.default_db)), proc


def _agents(cli: CLI) -> list[str]:
    with sqlite3.connect(f"file:{cli.default_db}?mode=ro", uri=True) as conn:
        return [name for (name,) in conn.execute("SELECT name FROM agents ORDER BY name")]


@pytest.mark.parametrize("args", [*LOOKS, *OWN, *FAILS], ids=_id)
def test_an_agent_nobody_made_that_only_looks_or_fails_creates_nothing(cli, store, args):
    found, _ = _run(cli, _args(args, store), NOBODY)
    assert found == {}, f"{' '.join(args)} as {NOBODY} wrote to the store"
    assert NOBODY not in _agents(cli) and "newcomer" not in _agents(cli)


# Not `channel create #team`: that name is free in a new workspace, and creating it is an act.
ELSEWHERE = [args for args in (*LOOKS, *OWN, *FAILS) if args[:2] != ("channel", "create")]


@pytest.mark.parametrize("args", ELSEWHERE, ids=_id)
def test_a_look_in_a_workspace_nobody_used_creates_no_workspace(cli, store, args):
    found, _ = _run(cli, _args(args, store), NOBODY, env={"CALLBOARD_WORKSPACE": "elsewhere"})
    assert found == {}, f"{' '.join(args)} in a new workspace wrote to the store"


@pytest.mark.parametrize("args", [*LOOKS, ("status", "{message}")], ids=_id)
def test_a_person_with_no_agent_identity_looks_and_writes_nothing(cli, store, args):
    """No CALLBOARD_AGENT, no agent file, outside any git repository: the person at this machine
    sees the workspace, and a message's status as its sender does."""
    assert cli.outside_any_project()
    found, proc = _run(cli, [*_args(args, store), "--json"], None)
    assert proc.returncode == 0, f"{' '.join(args)} without an identity: {proc.stdout} {proc.stderr}"
    assert found == {}, f"{' '.join(args)} without an identity wrote to the store"
    if args[0] == "status":
        assert '"agent":"bob"' in proc.stdout.replace(" ", "")  # every recipient, as the sender sees it
    if args == ("who",):
        assert '"name":"alice"' in proc.stdout.replace(" ", "") and '"name":"bob"' in proc.stdout.replace(" ", "")


@pytest.mark.parametrize(
    "args",
    [
        ("whoami",),
        ("send", "bob", "hi"),
        ("read",),
        ("read", "--wait", "1"),
        ("inbox",),
        ("ack", UNKNOWN_ID),
        ("channel", "join", "team"),
        ("channel", "create", "mine"),
        ("task", "list"),
        ("task", "send", "bob", "do it"),
        ("session", "start"),
    ],
    ids=_id,
)
def test_a_command_that_acts_as_an_agent_says_it_needs_one_and_writes_nothing(cli, store, args, expect_error):
    assert cli.outside_any_project()
    found, proc = _run(cli, list(args), None)
    line = expect_error(proc, "no_identity", as_json=False)
    assert "CALLBOARD_AGENT" in line
    assert found == {}, f"{' '.join(args)} without an identity wrote to the store"


@pytest.mark.parametrize(
    ("agent", "args", "creates"),
    [
        ("sender", ("send", "bob", "hi"), "sender"),
        ("alice", ("send", "newcomer", "hi"), "newcomer"),
        ("starter", ("session", "start", "--pid", "{live}"), "starter"),
        ("waiter", ("read", "--wait", "0.2"), "waiter"),
        ("founder", ("channel", "create", "founded"), "founder"),
        ("joiner", ("channel", "join", "team"), "joiner"),
        ("asker", ("task", "send", "bob", "look at it"), "asker"),
        ("alice", ("agent", "create", "made"), "made"),
    ],
    ids=lambda value: value if isinstance(value, str) else _id(value),
)
def test_an_agent_exists_once_it_acts(cli, store, live_process: subprocess.Popen[bytes], agent, args, creates):
    """Sending, being sent to by a person, a session (started, or a waiting read), a channel
    created or joined, a task sent, an agent created: each makes its agent, in that step."""
    assert creates not in _agents(cli)
    proc = cli.run(*_args(args, {**store, "live": str(live_process.pid)}), agent=agent, env=COLD)
    assert proc.returncode == 0, proc.stderr
    assert creates in _agents(cli), f"{' '.join(args)} as {agent} did not create {creates}"
