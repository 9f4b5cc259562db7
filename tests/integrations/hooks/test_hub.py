"""The hooks on a machine that uses a hub: the same behaviour through HTTP."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from callboard.client.hub import HubClient
from callboard.requests import SendRequest
from tests.hub.conftest import Hub, unique
from tests.integrations.hooks.conftest import AGENT, SENDER, Hooks


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    one = Hub(tmp_path_factory.mktemp("hooks-hub"))
    try:
        yield one.start()
    finally:
        one.close()


def test_hooks_through_a_hub(hub: Hub, hooks: Hooks, tmp_path: Path) -> None:
    workspace = unique("hooks")
    env = {"CALLBOARD_HUB": hub.url, "CALLBOARD_TOKEN": hub.admin_token, "CALLBOARD_WORKSPACE": workspace}
    sender = HubClient(hub.url, hub.admin_token, SENDER, workspace)
    webapp = HubClient(hub.url, hub.admin_token, AGENT, workspace)
    try:
        first = sender.send(SendRequest(to=AGENT, text="via the hub")).message_id
        answer = hooks.context("session-start", env=env)
        assert answer is not None
        assert "-----\nvia the hub\n----- END MESSAGE" in answer["hookSpecificOutput"]["additionalContext"]
        assert webapp.message_status(first).recipients[0].via == "hook"
        sessions = [s for a in webapp.who().agents if a.name == AGENT for s in a.sessions]
        assert [(s.pid, s.runtime) for s in sessions] == [(os.getpid(), "claude-code")]
        assert hooks.context("session-start", env=env) is None  # once

        sender.send(SendRequest(to=AGENT, text="urgent via the hub", urgent=True))
        answer = hooks.context("post-tool", "codex", env=env)
        assert answer is not None and "urgent via the hub" in answer["hookSpecificOutput"]["additionalContext"]

        sender.send(SendRequest(to=AGENT, text="before you stop"))
        answer = hooks.context("stop", "gemini", env=env)
        assert answer is not None and answer["decision"] == "block" and "before you stop" in answer["reason"]

        waiter = hooks.spawn_wake(env=env)
        sender.send(SendRequest(to=AGENT, text="wake up"))
        assert waiter.wait(20) == 2
        assert waiter.stderr is not None and waiter.stderr.read() == ""  # quiet: the prompt hook brings it
        answer = hooks.context("prompt", env=env)
        assert answer is not None and "wake up" in answer["hookSpecificOutput"]["additionalContext"]
    finally:
        sender.close()
        webapp.close()


def test_through_a_hub_an_empty_mailbox_is_answered_without_loading_the_client(hub: Hub, hooks: Hooks) -> None:
    """The hub is asked with the standard library (``hooks.hub_probe``), which marks nothing: an
    empty look loads no httpx, pydantic or service, and mail found next is still surfaced once."""
    workspace = unique("hooks")
    env = {"CALLBOARD_HUB": hub.url, "CALLBOARD_TOKEN": hub.admin_token, "CALLBOARD_WORKSPACE": workspace}
    assert hooks.context("session-start", env=env) is None  # registered: no heartbeat due for a while
    for event in ("prompt", "post-tool", "stop"):
        loaded = hooks.modules_loaded(event, env)
        heavy = {"pydantic", "httpx", "callboard.service", "callboard.client.base", "callboard.model"}
        assert not heavy & loaded, f"{event} loaded {sorted(heavy & loaded)}"
    sender = HubClient(hub.url, hub.admin_token, SENDER, workspace)
    try:
        urgent = sender.send(SendRequest(to=AGENT, text="urgent after the looks", urgent=True)).message_id
        assert sender.message_status(urgent).recipients[0].surfaced_at is None, "a look marks nothing"
        answer = hooks.context("prompt", env=env)
        assert answer is not None and "urgent after the looks" in answer["hookSpecificOutput"]["additionalContext"]
        assert sender.message_status(urgent).recipients[0].via == "hook"
        assert hooks.context("post-tool", env=env) is None, "surfaced once"
    finally:
        sender.close()
