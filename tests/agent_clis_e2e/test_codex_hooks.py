"""A real client's hooks: Codex, installed from npm, run headless (``codex exec``) against the
local mock model, with ``callboard hook session-start`` and ``hook prompt`` configured as its
SessionStart and UserPromptSubmit hooks (as ``callboard install codex`` writes them). Mail
waiting for the agent reaches the model's first request, fenced as another agent's words, once,
and its status says a hook surfaced it."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from callboard.client.local import LocalClient
from callboard.config import Settings
from callboard.model import DeliveryState
from callboard.requests import SendRequest
from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, Machine
from tests.support.codex_config import offline_config
from tests.support.mock_model import MockModel

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]


def hook_command(machine: Machine, event: str) -> str:
    env = f"CALLBOARD_HOME={shlex.quote(str(machine.callboard_home))} CALLBOARD_AGENT=alice"
    return f"{env} {shlex.quote(sys.executable)} -m callboard hook {event} --client codex"


def codex_home_for(machine: Machine, model: MockModel) -> Path:
    home = machine.home / ".codex"
    home.mkdir()
    (home / "config.toml").write_text(offline_config(model))
    hooks = {
        event: [{"hooks": [{"type": "command", "command": hook_command(machine, ours), "timeout": 30}]}]
        for event, ours in (("SessionStart", "session-start"), ("UserPromptSubmit", "prompt"))
    }
    (home / "hooks.json").write_text(json.dumps({"hooks": hooks}, indent=2))
    return home


def client_of(machine: Machine, agent: str) -> LocalClient:
    env = {"CALLBOARD_HOME": str(machine.callboard_home)}
    return LocalClient.open(Settings.load(env), agent=agent, env=env)


def test_codex_gets_waiting_mail_into_its_context_through_its_session_start_hook(
    codex: Path, machine: Machine, model: MockModel
):
    bob = client_of(machine, "bob")
    try:
        sent = bob.send(SendRequest(to="alice", text="codex-hook-check: please rebase on main", subject="heads up"))
        env = machine.env({"CODEX_HOME": str(codex_home_for(machine, model)), "MOCK_MODEL_API_KEY": "mock-key"})
        env.update(model.proxy_env())
        proc = machine.run(
            [codex, "exec", "--json", "--skip-git-repo-check", "--ephemeral", "--dangerously-bypass-hook-trust", "hi"],
            env,
        )
        seen = f"\nexit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        assert proc.returncode == 0, seen
        requests = [json.dumps(r.body) for r in model.model_requests()]
        assert requests, seen
        first = requests[0]
        assert "codex-hook-check: please rebase on main" in first, seen
        assert "from: bob" in first and "BEGIN MESSAGE" in first, "the mail is fenced as bob's words"
        assert sum(r.count("codex-hook-check") for r in requests[:1]) == 1, "put into the context once"
        (status,) = bob.message_status(sent.message_id).recipients
        assert (status.state, status.via) == (DeliveryState.surfaced, "hook")
        assert model.proxied() == [], f"Codex tried to reach another host:{seen}"
    finally:
        bob.service.store.close()
