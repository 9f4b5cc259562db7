"""The waiter at every point of its life cycle, as real processes: armed (waiting), firing (mail
arrives, it wakes), re-arming (the next waiter after one fired; rapid mail: none swallowed, none
twice), held mail (a guard's hold ends and the waiting waiter wakes without another send), and
the session ending (the waiter leaves, and the mail stays unread for the next session)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from callboard import guards as guard
from callboard.client.local import LocalClient
from callboard.identity import DEFAULT_WORKSPACE
from callboard.model import Caller
from callboard.requests import SendRequest
from callboard.service.door import Service
from callboard.store.sqlite.store import SQLiteStore
from tests.integrations.hooks.conftest import AGENT, SENDER, Hooks
from tests.support.processes import process_gone
from tests.support.waiter_agent_cli import WAKE_TIMEOUT, registered, start_agent_cli
from tests.support.waiting import scaled, wait_until


def woken_with(hooks: Hooks, waiter: subprocess.Popen[str], timeout: float = WAKE_TIMEOUT) -> list[str]:
    """The texts of the messages the turn a waiter woke takes: the waiter exits 2 printing
    nothing (quiet), and the woken turn's prompt hook brings the mail."""
    assert waiter.wait(timeout) == 2
    assert waiter.stderr is not None and waiter.stderr.read() == ""  # no mail in the client's log
    context = hooks.context("prompt")
    text = context["hookSpecificOutput"]["additionalContext"] if context else ""
    return re.findall(r"----- BEGIN MESSAGE \S+ -----\n(.*?)\n----- END MESSAGE", text, re.S)


def test_armed_it_waits_then_fires_on_mail(hooks: Hooks) -> None:
    waiter = hooks.spawn_wake()
    wait_until(lambda: registered(hooks, os.getpid()), what="the waiter to be armed (session registered)")
    assert waiter.poll() is None  # armed: no mail, no exit
    hooks.send("first")
    assert woken_with(hooks, waiter) == ["first"]


def test_re_arming_after_a_wake_misses_nothing_sent_in_between_or_in_a_rush(hooks: Hooks) -> None:
    """Claude Code starts the next waiter (its Stop hook) after the turn the last one started:
    whatever came meanwhile, or in a rush of sends, reaches a waiter, each message once."""
    sent = [f"mail {i}" for i in range(8)]
    first = hooks.spawn_wake()
    wait_until(lambda: registered(hooks, os.getpid()), what="the first waiter to be armed")
    for text in sent:  # rapid successive mail while one waiter fires and the next starts
        hooks.send(text)
    seen = woken_with(hooks, first)
    while len(seen) < len(sent):  # re-arm: a new waiter for the next turn, as the Stop hook does
        seen += woken_with(hooks, hooks.spawn_wake())
    assert seen == sent  # each once, in order
    again = hooks.spawn_wake()  # and the next waiter is armed, with nothing left to take
    wait_until(lambda: registered(hooks, os.getpid()), what="the next waiter to be armed")
    assert again.poll() is None
    hooks.send("after the rush")
    assert woken_with(hooks, again) == ["after the rush"]


# The flood window of the held-mail test: the mail stays held while the test looks at it through
# four commands and a first waiter's wake (about 20 s on a loaded machine), then is let through.
FLOOD_WINDOW = scaled(45.0)


@contextmanager
def sender_service(hooks: Hooks, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalClient]:
    """The sender's mailbox in this process, with a flood of two messages in ``FLOOD_WINDOW``
    (the waiter process keeps the real numbers: it only obeys the hold stored with the delivery)."""
    monkeypatch.setattr(guard, "FLOOD_MESSAGES", 1)
    monkeypatch.setattr(guard, "FLOOD_WINDOW_SECONDS", FLOOD_WINDOW)
    service = Service(SQLiteStore(hooks.cli.default_db), machine="testhost")
    try:
        yield LocalClient(service, Caller(workspace=DEFAULT_WORKSPACE, agent=SENDER))
    finally:
        service.store.close()


def test_held_mail_wakes_the_waiter_when_its_hold_ends_without_another_send(
    hooks: Hooks, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sender_service(hooks, monkeypatch) as sender:
        # Two sends at once: the window starts with the first, however slow the machine.
        sender.send(SendRequest(to=AGENT, text="before the flood"))
        sent = sender.send(SendRequest(to=AGENT, text="held back"))
    (outcome,) = sent.recipients
    assert outcome.held is not None and outcome.held.reason == "flood"
    status = hooks.status(sent.message_id)
    assert (status["state"], status["held"]["reason"]) == ("held", "flood")
    assert status["held"]["until"] and "flood" in status["held"]["why"]
    held = hooks.cli.run_json("who", agent=SENDER)
    (webapp,) = [a for a in held["agents"] if a["name"] == AGENT]
    assert [h["message_id"] for h in webapp["held"]] == [sent.message_id]
    assert woken_with(hooks, hooks.spawn_wake()) == ["before the flood"]  # the held one is not taken
    waiter = hooks.spawn_wake()  # armed while the mail is held: it does not fire before its time …
    assert woken_with(hooks, waiter, FLOOD_WINDOW + WAKE_TIMEOUT) == [
        "held back"
    ]  # … and fires then, with no other send
    after = hooks.status(sent.message_id)
    # surfaced by the woken turn's prompt hook, not before the hold's end
    assert (after["state"], after["via"], after["held"]["reason"]) == ("surfaced", "hook", "flood")
    assert after["surfaced_at"] >= after["held"]["until"]


def test_when_the_session_ends_the_waiter_leaves_and_the_mail_waits_for_the_next(hooks: Hooks) -> None:
    agent_cli = start_agent_cli(hooks)
    try:
        assert agent_cli.stdout is not None
        waiter_pid = int(agent_cli.stdout.readline())
        wait_until(lambda: registered(hooks, agent_cli.pid), what="the waiter to be armed for the agent CLI")
        agent_cli.kill()  # the session ends (the agent CLI is gone) while its waiter is armed
        agent_cli.wait()
        wait_until(lambda: process_gone(waiter_pid), what="the waiter to leave with its session")
    finally:
        if agent_cli.poll() is None:
            agent_cli.kill()
            agent_cli.wait()
        if agent_cli.stdout is not None:
            agent_cli.stdout.close()
    message = hooks.send("for the next session")
    status = hooks.status(message)
    assert (status["state"], status["surfaced_at"], status["read_at"]) in {
        ("queued", None, None),
        ("delivered", None, None),
    }  # nobody took it: the ended session's waiter is gone
    context = hooks.context("session-start", session="sess-next")  # the next session gets it
    assert context is not None and "for the next session" in str(context)
