"""The table of coding CLIs (integrations/agent_clis.py) holds together, and the places that
used to keep their own lists read it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from callboard.integrations import agent_clis
from callboard.integrations.agent_clis import AGENT_CLIS, BY_NAME, HOOK_CLIENTS, MCP_CLIENTS, runtime_of
from callboard.integrations.hooks import output
from callboard.integrations.install import install_plans
from callboard.integrations.mcp_registration import client_name
from tests.support.waiting import wait_until

HOOK_EVENTS = {"session-start", "prompt", "post-tool", "stop"}


def test_names_runtimes_and_executables_are_each_one_cli_s() -> None:
    for column in ("name", "runtime", "title"):
        values = [getattr(cli, column) for cli in AGENT_CLIS]
        assert len(set(values)) == len(values), column
    names = [name for cli in AGENT_CLIS for name in cli.executables]
    assert len(set(names)) == len(names)
    assert agent_clis.UNKNOWN_RUNTIME not in {cli.runtime for cli in AGENT_CLIS}


def test_a_cli_with_hooks_has_all_of_ours_and_reads_context_from_some() -> None:
    assert HOOK_CLIENTS == ("claude", "codex", "copilot", "gemini")
    for name in HOOK_CLIENTS:
        cli = BY_NAME[name]
        assert set(cli.hook_events) == HOOK_EVENTS
        assert cli.context_events and cli.context_events <= HOOK_EVENTS - {"stop"}
    assert not BY_NAME["cursor"].has_hooks


def test_every_cli_takes_an_mcp_server_and_the_installer_every_one_a_cli_without_hooks_its_server_alone() -> None:
    assert MCP_CLIENTS == ("claude", "codex", "copilot", "cursor", "gemini")
    assert [client_name(name.upper()) for name in MCP_CLIENTS] == list(MCP_CLIENTS)
    cursor = install_plans.plan("cursor", "user", install_plans.Folders(Path("/h"), Path("/p"), {}), ["cb"], [])
    [only] = cursor.files
    assert only.path == Path("/h/.cursor/mcp.json") and [e.path for e in only.entries] == [("mcpServers", "callboard")]


@pytest.mark.parametrize("name", HOOK_CLIENTS)
def test_context_goes_back_under_the_cli_s_own_event_name(name: str) -> None:
    cli = BY_NAME[name]
    for event in HOOK_EVENTS:
        assert output.takes_context(name, event) == (event in cli.context_events)
    shaped = output.context(name, "prompt", "mail")
    if cli.context_at_top:
        assert shaped == {"additionalContext": "mail"}
    else:
        assert shaped["hookSpecificOutput"]["hookEventName"] == cli.hook_events["prompt"]


@pytest.mark.parametrize("cli", AGENT_CLIS, ids=lambda cli: cli.name)
def test_a_process_is_recognised_by_any_of_its_names(tmp_path: Path, cli: agent_clis.AgentCli) -> None:
    for name in cli.executables:
        script = tmp_path / f"{name}.js"  # a node script names the CLI in an argument
        script.write_text("import time\ntime.sleep(30)\n")
        proc = subprocess.Popen([sys.executable, str(script)])
        try:
            assert wait_until(lambda pid=proc.pid: runtime_of(pid) != agent_clis.UNKNOWN_RUNTIME, timeout=10)
            assert runtime_of(proc.pid) == cli.runtime
        finally:
            proc.kill()
            proc.wait()
