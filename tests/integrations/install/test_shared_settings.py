"""``install --scope project`` writes files a team can commit: they name no path of this user's
home or virtualenv, and run ``callboard`` from each teammate's PATH. A teammate whose PATH holds an
install gets working hooks and a working MCP server from them; one without gets hooks that exit 0
without a word (a hook never breaks its host).

Every call is the real ``callboard`` command: the installing user's from this machine's
virtualenv, the teammate's found on nothing but PATH.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from callboard.integrations.install.install_plans import fast_hook_command, hook_command
from callboard.integrations.install.json_text import JsonText
from tests.support.cli_runner import CLI, describe
from tests.support.hook_stdin import stdin_for
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

CLIENTS = ("claude", "codex", "copilot", "cursor", "gemini")
INSTALL_BIN = Path(sys.executable).parent  # this virtualenv's bin: where its `callboard` script is
SYSTEM_PATH = "/usr/bin:/bin"  # a shell's own tools, and no callboard


# Each client's project file that holds its hook for a prompt, and how to find the command in it.
def _prompt_hooks(project: Path) -> dict[str, str]:
    def read(path: Path) -> dict:
        return JsonText(path.read_text(), comments=True).value

    claude = read(project / ".claude" / "settings.json")["hooks"]["UserPromptSubmit"][-1]["hooks"][0]["command"]
    codex = read(project / ".codex" / "hooks.json")["hooks"]["UserPromptSubmit"][-1]["hooks"][0]["command"]
    copilot = read(project / ".github" / "hooks" / "callboard.json")["hooks"]["userPromptSubmitted"][-1]["bash"]
    gemini = read(project / ".gemini" / "settings.json")["hooks"]["BeforeAgent"][-1]["hooks"][0]["command"]
    return {"claude": claude, "codex": codex, "copilot": copilot, "gemini": gemini}


def _servers(project: Path) -> dict[str, dict]:
    def server(path: Path) -> dict:
        return JsonText(path.read_text(), comments=True).value["mcpServers"]["callboard"]

    return {
        "claude": server(project / ".mcp.json"),
        "copilot": server(project / ".github" / "mcp.json"),
        "cursor": server(project / ".cursor" / "mcp.json"),
        "gemini": server(project / ".gemini" / "settings.json"),
    }


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """A git repository with every client installed in project scope by this machine's user."""
    cli = CLI(tmp_path / "me")
    project = tmp_path / "repo" / "webapp"
    (project / ".git").mkdir(parents=True)
    for client in CLIENTS:
        proc = cli.run("install", client, "--scope", "project", cwd=project)
        assert proc.returncode == 0, describe(proc)
    written = sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())
    assert written == [
        ".claude/commands/inbox.md",
        ".claude/settings.json",
        ".codex/hooks.json",
        ".cursor/mcp.json",
        ".gemini/settings.json",
        ".github/hooks/callboard.json",
        ".github/mcp.json",
        ".mcp.json",
    ]
    return project


def test_project_files_name_no_path_of_this_users_home_or_virtualenv(installed: Path, tmp_path: Path):
    mine = {
        "home": str(tmp_path / "me" / "home"),
        "callboard home": str(tmp_path / "me" / "callboard-home"),
        "virtualenv": sys.prefix,
        "the callboard script": str(shutil.which("callboard", path=str(INSTALL_BIN))),
        "this python": sys.executable,
    }
    for path in installed.rglob("*"):
        if path.is_file():
            text = path.read_text()
            found = {what: where for what, where in mine.items() if where in text}
            assert not found, f"{path.relative_to(installed)} names {found}"


def _teammate(tmp_path: Path, path: str) -> dict[str, str]:
    """The environment of a teammate's agent CLI: a home of their own, and PATH alone to find things."""
    home = tmp_path / "t"  # short: the warm server's socket path must fit in 100 bytes
    home.mkdir(exist_ok=True)
    return {"PATH": path, "HOME": str(home), "CALLBOARD_HOME": str(home / "cb"), "LANG": "C.UTF-8"}


def _run_hook(command: str, client: str, project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a hook's command as its agent CLI does (a shell), fed the prompt hook's JSON."""
    payload = json.dumps(stdin_for(client, "prompt", project, "sess-1"))
    return subprocess.run(
        ["/bin/sh", "-c", command], input=payload, env=env, cwd=project, capture_output=True, text=True, timeout=60
    )


def _warm(env: dict[str, str]) -> None:
    """Wait until the teammate's warm server (started by their first command) serves: a hook then
    answers well inside its deadline, even on a loaded machine."""

    where = Path(env["CALLBOARD_HOME"]) / "warm.sock"
    assert len(str(where)) <= 100, f"{where} is too long for the warm server's socket"

    def serving() -> bool:
        with socket.socket(socket.AF_UNIX) as conn:
            try:
                conn.connect(str(where))
            except OSError:
                return False
            return True

    wait_until(serving, timeout=60, what="the teammate's warm server")


def test_a_teammate_with_callboard_on_path_gets_the_mail_from_every_shared_hook(installed: Path, tmp_path: Path):
    env = _teammate(tmp_path, f"{INSTALL_BIN}:{SYSTEM_PATH}")
    for n, (client, command) in enumerate(_prompt_hooks(installed).items()):
        sent = subprocess.run(
            ["callboard", "send", "webapp", f"mail for {client}"],
            env={**env, "CALLBOARD_AGENT": "reviewer"},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert sent.returncode == 0, describe(sent)
        if n == 0:
            _warm(env)
        ran = _run_hook(command, client, installed, env)
        assert ran.returncode == 0, (client, describe(ran))
        assert f"mail for {client}" in ran.stdout, (client, describe(ran))  # the agent is the project's: webapp


@pytest.mark.anyio
async def test_a_teammate_with_callboard_on_path_gets_the_tools_from_every_shared_server(
    installed: Path, tmp_path: Path
):
    env = _teammate(tmp_path, f"{INSTALL_BIN}:{SYSTEM_PATH}")
    for client, server in _servers(installed).items():
        assert server["command"] == "callboard", (client, server)
        params = StdioServerParameters(command=server["command"], args=server["args"], env=env, cwd=str(installed))
        async with Client(params) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
        assert {"send_message", "read_messages"} <= tools, (client, tools)


def test_without_callboard_on_path_every_shared_hook_exits_0_without_a_word(installed: Path, tmp_path: Path):
    env = _teammate(tmp_path, SYSTEM_PATH)
    assert shutil.which("callboard", path=SYSTEM_PATH) is None
    claude = JsonText((installed / ".claude" / "settings.json").read_text()).value["hooks"]
    every_claude_hook = [hook["command"] for groups in claude.values() for group in groups for hook in group["hooks"]]
    commands = [("claude", c) for c in every_claude_hook] + list(_prompt_hooks(installed).items())
    for client, command in commands:
        ran = _run_hook(command, client, installed, env)
        assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", ""), (client, command, describe(ran))


def test_a_users_own_hook_whose_install_is_gone_exits_0_without_a_word(tmp_path: Path):
    """The user's own settings name an absolute path: a removed virtualenv leaves it pointing at nothing."""
    gone = [str(tmp_path / "removed-venv" / "bin" / "callboard")]
    env = _teammate(tmp_path, f"{INSTALL_BIN}:{SYSTEM_PATH}")
    for command in (
        hook_command(gone, "prompt", "codex"),
        fast_hook_command(gone, "prompt", "claude", tmp_path / "home"),
        fast_hook_command(gone, "stop", "claude", None),
    ):
        ran = _run_hook(command, "claude", tmp_path, env)
        assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", ""), (command, describe(ran))


def test_the_shared_fast_hook_finds_the_teammates_default_home(tmp_path: Path):
    """Claude Code's per-turn hooks look for the session's delivery claim in Callboard's home; in a
    project's settings that is the teammate's default home, worked out where the hook runs."""
    env = _teammate(tmp_path, f"{INSTALL_BIN}:{SYSTEM_PATH}")
    del env["CALLBOARD_HOME"]
    where = "import os; from callboard.config import home_dir; print(home_dir(os.environ))"
    asked = subprocess.run([sys.executable, "-c", where], env=env, capture_output=True, text=True, timeout=60)
    default = asked.stdout.strip()
    assert default.startswith(env["HOME"] + "/"), describe(asked)  # the teammate's own, under their HOME
    probe = fast_hook_command(["/bin/echo"], "prompt", "claude", None).replace(
        "for f in", 'echo "$h"; exit 0; for f in', 1
    )
    env["CLAUDE_CODE_MESSAGING_SOCKET"] = "/tmp/cc-socks/4242.sock"
    ran = subprocess.run(["/bin/sh", "-c", probe], env=env, capture_output=True, text=True, timeout=30)
    assert ran.stdout.strip() == default, describe(ran)
