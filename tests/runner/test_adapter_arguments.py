"""What the Claude Code and Codex adapters put on their CLI's command line and make of its usage
reports, without a CLI (the real-CLI tests are in tests/agent_clis_e2e/test_*_adapter.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from callboard.runner.adapters.base import CliUnavailable, Launch
from callboard.runner.adapters.claude import ClaudeAdapter, project_slug
from callboard.runner.adapters.codex import CodexAdapter, overrides

SERVER = {
    "command": sys.executable,
    "args": ["-m", "callboard", "mcp"],
    "env": {"CALLBOARD_AGENT": "alice", "CALLBOARD_RUNNER": "alice", "CALLBOARD_HOME": "/tmp/sb home"},
}


def launch(**changes: object) -> Launch:
    fields: dict[str, object] = {
        "agent": "alice",
        "cwd": Path("/tmp"),
        "env": {"PATH": "/nonexistent"},
        "mcp_server": SERVER,
    }
    return Launch(**{**fields, **changes})  # type: ignore[arg-type]


def test_claude_code_gets_our_server_on_its_command_line_only():
    args = ClaudeAdapter()._arguments(launch(role_prompt="You review."))
    config = json.loads(args[args.index("--mcp-config") + 1])
    assert config == {"mcpServers": {"callboard": {"type": "stdio", **SERVER}}}
    assert "--strict-mcp-config" in args and args[args.index("--append-system-prompt") + 1] == "You review."
    assert "mcp__callboard" in args[args.index("--allowedTools") + 1].split(",")


@pytest.mark.parametrize("adapter", [ClaudeAdapter(), CodexAdapter()])
def test_a_cli_that_is_not_installed_is_said_plainly(adapter):
    with pytest.raises(CliUnavailable, match="not on PATH"):
        adapter.start(launch())


def test_claude_code_turn_cost_is_the_growth_of_the_session_total():
    adapter = ClaudeAdapter()
    first = adapter._usage_of({"usage": {"input_tokens": 10, "output_tokens": 5}, "total_cost_usd": 0.25})
    second = adapter._usage_of({"usage": {"input_tokens": 7, "cache_read_input_tokens": 3}, "total_cost_usd": 0.75})
    assert (first.cost_usd, second.cost_usd) == (0.25, 0.5)
    assert (second.input_tokens, second.cache_read_tokens) == (7, 3)
    restarted = adapter._usage_of({"usage": {}, "total_cost_usd": 0.1})  # a new process's total starts again
    assert restarted.cost_usd == pytest.approx(0.1)


def test_the_transcript_folder_is_the_working_folder_with_every_other_character_a_dash():
    assert project_slug(Path("/x/my proj.v2")) == "-x-my-proj-v2"


def test_codex_gets_our_server_by_overrides_and_the_store_writable():
    args = overrides(launch())
    values = [args[i + 1] for i in range(0, len(args), 2)]
    assert all(args[i] == "-c" for i in range(0, len(args), 2))
    assert f"mcp_servers.callboard.command={json.dumps(sys.executable)}" in values
    assert 'mcp_servers.callboard.args=["-m", "callboard", "mcp"]' in values
    env = next(v for v in values if v.startswith("mcp_servers.callboard.env="))
    assert 'CALLBOARD_HOME = "/tmp/sb home"' in env
    assert 'sandbox_workspace_write.writable_roots=["/tmp/sb home"]' in values
    assert 'approval_policy="never"' in values


def test_codex_turn_usage_is_the_growth_of_the_thread_total():
    adapter = CodexAdapter()
    adapter._thread_id = "t"
    first = adapter._turn_usage({"input_tokens": 20, "cached_input_tokens": 5, "output_tokens": 10})
    second = adapter._turn_usage({"input_tokens": 30, "cached_input_tokens": 5, "output_tokens": 15})
    assert (first.input_tokens, first.cache_read_tokens, first.output_tokens) == (15, 5, 10)
    assert (second.input_tokens, second.cache_read_tokens, second.output_tokens) == (10, 0, 5)
