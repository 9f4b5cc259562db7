"""A real client: Claude Code, installed from npm, run headless (``-p``) against a local mock
model with ``callboard mcp`` configured as alice's stdio server. The mock answers with a call
of our send_message tool; the message must land in bob's mailbox, sent by alice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent_clis_e2e.conftest import TEST_TIMEOUT, Machine, assert_sent_through_our_server, claude_code_env
from tests.support.mock_model import MockModel

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT)]

SERVER = "callboard"
TOOL = f"mcp__{SERVER}__send_message"  # how Claude Code names an MCP server's tool


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_claude_code_sends_a_message_through_our_stdio_server(claude_code: Path, machine: Machine, model: MockModel):
    config = {"mcpServers": {SERVER: {"type": "stdio", **machine.mcp_server("alice")}}}
    proc = machine.run(
        [
            claude_code,
            "-p",
            "Tell bob that alice says hello.",
            "--mcp-config",
            json.dumps(config),
            "--strict-mcp-config",  # only our server, whatever else is configured
            "--allowedTools",
            TOOL,  # allowed without a prompt; as root --dangerously-skip-permissions is refused
            "--output-format",
            "stream-json",
            "--verbose",
            "--no-session-persistence",
        ],
        claude_code_env(machine, model),
    )
    seen = (
        f"\nexit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}\n--- model\n{model.summary()}"
    )
    assert proc.returncode == 0, seen
    stream = events(proc.stdout)
    init = next(e for e in stream if e.get("type") == "system" and e.get("subtype") == "init")
    assert {"name": SERVER, "status": "connected"} in init["mcp_servers"], seen
    result = stream[-1]
    assert result["type"] == "result" and result["subtype"] == "success" and not result["is_error"], seen
    assert result["result"] == model.final_text, seen
    assert result["permission_denials"] == [], seen

    assert_sent_through_our_server(machine, model, "Claude Code", TOOL, seen)
