"""A real client: Codex, installed from npm, run headless (``codex exec``) against a local mock
model (a custom provider speaking the Responses API) with ``callboard mcp`` configured as
alice's stdio server. The mock answers with a call of our send_message tool; the message must
land in bob's mailbox, sent by alice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, Machine, assert_sent_through_our_server
from tests.support.codex_config import offline_config, toml_string
from tests.support.mock_model import MockModel

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]

SERVER = "callboard"
TOOL = f"mcp__{SERVER}__send_message"  # Codex offers it as send_message in the namespace mcp__callboard


def codex_config(machine: Machine, model: MockModel) -> str:
    server = machine.mcp_server("alice")
    server_env = "\n".join(f"{key} = {toml_string(value)}" for key, value in server["env"].items())
    return (
        offline_config(model)
        + f"""
[mcp_servers.{SERVER}]
command = {toml_string(server["command"])}
args = {json.dumps(server["args"])}
# Start the server before the first model request (otherwise exec sends it without our tools),
# and run its tools without asking (exec never asks: an unapproved call fails).
required = true
startup_timeout_sec = 60
tool_timeout_sec = 60
default_tools_approval_mode = "approve"

[mcp_servers.{SERVER}.env]
{server_env}
"""
    )


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_codex_sends_a_message_through_our_stdio_server(codex: Path, machine: Machine, model: MockModel):
    codex_home = machine.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(codex_config(machine, model))
    env = machine.env({"CODEX_HOME": str(codex_home), "MOCK_MODEL_API_KEY": "mock-key", **model.proxy_env()})
    proc = machine.run(
        [codex, "exec", "--json", "--skip-git-repo-check", "--ephemeral", "Tell bob that alice says hello."], env
    )
    seen = (
        f"\nexit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}\n--- model\n{model.summary()}"
    )
    assert proc.returncode == 0, seen
    stream = events(proc.stdout)
    calls = [e["item"] for e in stream if e["type"] == "item.completed" and e["item"]["type"] == "mcp_tool_call"]
    assert [(c["server"], c["tool"], c["status"], c["error"]) for c in calls] == [
        (SERVER, "send_message", "completed", None)
    ], seen
    assert calls[0]["arguments"] == model.tool_input, seen
    messages = [
        e["item"]["text"] for e in stream if e["type"] == "item.completed" and e["item"]["type"] == "agent_message"
    ]
    assert messages == [model.final_text], seen
    assert stream[-1]["type"] == "turn.completed", seen

    assert_sent_through_our_server(machine, model, "Codex", TOOL, seen)
