"""A throwaway machine for install tests: its own HOME, CALLBOARD_HOME and a git project,
seeded with realistic settings files of every agent CLI (the user's own hooks, servers,
permissions and other keys, in odd formatting), and the CLI run in-process against it.

``machine.run(*args)`` runs ``callboard`` through its real entry point (errors reported the
way a user sees them) and returns the exit code and the output.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from callboard.cli.main import main

# --- the user's own files, as people really leave them -----------------------------------------

CLAUDE_USER_SETTINGS = """{
    "model": "opus",
    "env": {"FOO": "1"},
    "permissions": {
        "allow": ["Bash(git status)", "mcp__callboard__who"],
        "deny": ["Read(./.env)"]
    },
    "hooks": {
        "Stop": [
            {"hooks": [{"type": "command", "command": "notify-send done"}]}
        ]
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"}
}"""  # 4-space indent, inline arrays, no final newline; already allows one of our tools

CLAUDE_STATE = """{
  "numStartups": 42,
  "hasCompletedOnboarding": true,
  "projects": {
    "/src/webapp": {
      "allowedTools": [],
      "mcpServers": {}
    }
  },
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "gh-mcp",
      "args": []
    },
    "callboard": {"type": "stdio", "command": "callboard", "args": ["mcp"], "env": {}}
  },
  "userID": "abc"
}
"""  # the user ran `claude mcp add callboard` once: install replaces it, uninstall puts it back

CLAUDE_PROJECT_SETTINGS = """{
  "permissions": {"allow": ["Bash(make test)"]},
  "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "echo mine"}]}]},
  "enabledMcpjsonServers": ["other"]
}
"""

PROJECT_MCP_JSON = '{\r\n\t"mcpServers": {\r\n\t\t"other": {"command": "other-mcp"}\r\n\t}\r\n}\r\n'  # tabs, CRLF

CODEX_CONFIG = """# my codex config
model = "o3"
approval_policy = "on-request"

[mcp_servers.other]
command = "other-mcp"
args = ["--flag"]

[mcp_servers.other.env]
KEY = "v"
""".rstrip("\n")  # no final newline

CODEX_HOOKS = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}\n'

COPILOT_MCP = """{
  "mcpServers": {
    "bus": {"type": "local", "command": "bus", "args": [], "tools": ["*"]}
  }
}
"""

COPILOT_SETTINGS = """{
  // my settings
  "theme": "dark",
  "hooks": {
    "userPromptSubmitted": [
      {"type": "command", "bash": "./log-prompt.sh", "timeoutSec": 5} /* audit */
    ]
  },
  "trusted_folders": ["/src"]
}
"""

GEMINI_SETTINGS = """{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  // servers
  "mcpServers": {
    "bus": {"command": "bus", "args": ["serve"]}
  },
  "hooks": {
    "BeforeAgent": [
      {"matcher": "*", "hooks": [{"type": "command", "command": "echo hi", "timeout": 5000}]}
    ]
  }
}
"""

GEMINI_PROJECT_SETTINGS = '{"contextFileName": "AGENTS.md"}'


@dataclass
class Result:
    code: int
    out: str
    err: str


@dataclass
class Machine:
    root: Path
    home: Path
    callboard_home: Path
    project: Path
    capsys: pytest.CaptureFixture[str]

    def run(self, *args: object) -> Result:
        self.capsys.readouterr()
        try:
            main([str(arg) for arg in args])
            code = 0
        except SystemExit as done:
            code = int(done.code or 0)
        captured = self.capsys.readouterr()
        return Result(code, captured.out, captured.err)

    def seed(self) -> None:
        """The user's own settings for every client, in both scopes."""
        files = {
            self.home / ".claude" / "settings.json": CLAUDE_USER_SETTINGS,
            self.home / ".claude.json": CLAUDE_STATE,
            self.home / ".claude" / "commands" / "review.md": "Review the diff.\n",
            self.project / ".claude" / "settings.json": CLAUDE_PROJECT_SETTINGS,
            self.project / ".mcp.json": PROJECT_MCP_JSON,
            self.home / ".codex" / "config.toml": CODEX_CONFIG,
            self.home / ".codex" / "hooks.json": CODEX_HOOKS,
            self.home / ".copilot" / "mcp-config.json": COPILOT_MCP,
            self.home / ".copilot" / "settings.json": COPILOT_SETTINGS,
            self.project / ".github" / "hooks" / "lint.json": '{"version": 1, "hooks": {}}\n',
            self.home / ".gemini" / "settings.json": GEMINI_SETTINGS,
            self.project / ".gemini" / "settings.json": GEMINI_PROJECT_SETTINGS,
        }
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode())
        (self.home / ".claude.json").chmod(0o600)

    def snapshot(self) -> dict[str, object]:
        """Every file (bytes and mode) and folder under HOME and the project, but .git."""
        found: dict[str, object] = {}
        for top in (self.home, self.project):
            for folder, dirs, names in os.walk(top):
                dirs[:] = [d for d in dirs if d != ".git"]
                found[folder] = "dir"
                for name in names:
                    path = Path(folder) / name
                    found[str(path)] = (path.read_bytes(), path.stat().st_mode & 0o7777)
        return found


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Machine:
    home, callboard_home, project = tmp_path / "home", tmp_path / "callboard-home", tmp_path / "webapp"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    for name in list(os.environ):
        if name.startswith(("CALLBOARD_", "XDG_")) or name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CALLBOARD_HOME", str(callboard_home))
    monkeypatch.chdir(project / "src")  # project scope finds the git root above
    return Machine(tmp_path, home, callboard_home, project, capsys)
