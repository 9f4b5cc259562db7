"""``callboard mcp`` as a real stdio subprocess, driven by the official ``mcp`` client in both
protocol eras: two sessions exchanging mail on the embedded store, and a server that cannot name
its agent failing on stderr with nothing on stdout (which belongs to the protocol)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.support.cli_runner import CLI, EXIT_USER_ERROR
from tests.support.tool_results import TOOLS, ok, text_of, words

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture
def machine(tmp_path: Path) -> CLI:
    return CLI(tmp_path)


def server(machine: CLI, agent: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "callboard", "mcp"], env=machine.env(agent), cwd=str(machine.workdir)
    )


async def test_two_stdio_sessions_exchange_mail_through_their_tools(machine: CLI, era: str):
    async with Client(server(machine, "alice"), mode=era) as alice, Client(server(machine, "bob"), mode=era) as bob:
        assert {tool.name for tool in (await alice.list_tools()).tools} == TOOLS
        await bob.call_tool("who", {})
        sent = ok(await alice.call_tool("send_message", {"to": "bob", "message": "over stdio"}))
        got = await bob.call_tool("read_messages", {})
        assert [(m["sender"], words(m)) for m in ok(got)["messages"]] == [("alice", "over stdio")]
        assert f"id: {sent['message_id']}" in text_of(got)
        status = ok(await alice.call_tool("message_status", {"message_id": sent["message_id"]}))
        assert status["read_by"] == ["bob"]
    # The same store the CLI uses: the message is there for it too.
    assert machine.run_json("status", sent["message_id"], agent="alice")["recipients"][0]["state"] == "read"


async def test_a_model_hands_off_its_work_with_its_repositorys_diff(machine: CLI, era: str):
    """send_message with handoff: the packet is built where the session works (its folder's
    repository and diff) and reaches the receiver as a task, named in its mail."""
    folder = machine.workdir
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "plan.md").write_text("STEP-MARKER: cap the retries\n")
    subprocess.run(["git", "-C", str(folder), "add", "plan.md"], check=True)
    async with Client(server(machine, "alice"), mode=era) as alice:
        sent = ok(
            await alice.call_tool("send_message", {"to": "bob", "message": "Half done; see plan.md.", "handoff": True})
        )
    packet = machine.run_json("handoff", "show", sent["task_id"], "--json", agent="bob")
    assert packet["summary"] == "Half done; see plan.md." and packet["from_agent"] == "alice"
    assert "STEP-MARKER" in packet["diff"]["text"] and packet["repository"]["changed"] == ["A  plan.md"]
    mail = machine.run("read", agent="bob").stdout
    assert "Half done; see plan.md." in mail and "STEP-MARKER" not in mail  # named, not dumped


def test_a_server_that_cannot_name_its_agent_fails_on_stderr_and_writes_nothing_to_stdout(machine: CLI):
    assert machine.outside_any_project()
    proc = machine.run("mcp", input="")
    assert proc.returncode == EXIT_USER_ERROR, proc
    assert proc.stdout == ""
    assert proc.stderr.startswith("error: no_identity: "), proc.stderr


def test_while_serving_stray_output_goes_to_stderr_and_only_the_protocol_reaches_stdout():
    code = (
        "import os, sys\n"
        "from callboard.mcp.stdio import _take_standard_fds\n"
        "protocol_in, protocol_out = _take_standard_fds()\n"
        "print('a stray print'); sys.stdout.flush(); os.write(1, b'a stray write\\n')\n"
        "assert sys.stdin.read() == ''  # fd 0 reads nothing now\n"
        "os.write(protocol_out, b'protocol\\n')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], input="not for the library", capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "protocol\n"
    assert "a stray print" in proc.stderr and "a stray write" in proc.stderr
