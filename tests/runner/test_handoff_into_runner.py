"""A hand-off to a runner: the packet goes into its CLI's context whole (the diff and all) ahead
of the turn's mail, while the mail itself names the packet; and a live reader of the mailbox
gets it compactly (``read``), the large parts named with the command that shows them."""

from __future__ import annotations

import subprocess

from tests.runner.conftest import RunnerMachine
from tests.support.waiting import wait_until


def _repository(machine: RunnerMachine) -> None:
    """A git repository in the machine's working folder, with a change not yet committed."""
    folder = machine.cli.workdir

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)

    git("init", "-q")
    git("-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "start")
    (folder / "retry.py").write_text("def retry():\n    return 'BACKOFF-CAP-42'\n")
    git("add", "retry.py")


def test_a_runner_takes_a_hand_offs_packet_into_its_context(machine: RunnerMachine) -> None:
    _repository(machine)
    machine.start()
    sent = machine.cli.run_json(
        "handoff", "--to", "rbot", "--summary", "Retry change half done.", "--next", "cap the backoff", agent="alice"
    )
    prompt = wait_until(
        lambda: [p for p in machine.prompts() if "Retry change half done." in p["text"]], 30, "the turn"
    )[0]
    text = prompt["text"]
    assert "BACKOFF-CAP-42" in text and "Diff — whole" in text  # the diff, in the CLI's context
    assert "1. cap the backoff" in text and "retry.py" in text
    assert f"`callboard handoff show {sent['task']['id']}` shows it whole" in text  # the mail names the packet
    assert text.index("Diff — whole") < text.index("BEGIN MESSAGE")  # the packet goes ahead of the mail


def test_a_mailbox_reader_gets_a_hand_off_compactly(machine: RunnerMachine) -> None:
    _repository(machine)
    sent = machine.cli.run_json("handoff", "--to", "bob", "--summary", "Over to you.", agent="alice")
    read = machine.cli.run("read", agent="bob")
    assert "Over to you." in read.stdout and "BACKOFF-CAP-42" not in read.stdout, read.stdout
    assert f"callboard handoff show {sent['task']['id']}" in read.stdout
    shown = machine.cli.run("handoff", "show", sent["task"]["id"], "--diff", agent="bob")
    assert "BACKOFF-CAP-42" in shown.stdout and "Diff — whole" in shown.stdout, shown.stdout
    packet = machine.cli.run_json("handoff", "show", sent["task"]["id"], agent="bob")
    assert packet["repository"]["changed"] == ["A  retry.py"] and packet["to_agent"] == "bob"
