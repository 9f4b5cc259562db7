"""callboard install / uninstall CLIENT: what each agent CLI gets, and that taking it out
gives the user's files back exactly.

Every test runs on a machine seeded with realistic settings of every client (see conftest):
the user's own hooks, servers and permissions, 4-space and tab indents, inline arrays, CRLF,
JSONC comments, files without a final newline.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from callboard.integrations.install.json_text import JsonText
from callboard.integrations.install.manifest import MANIFEST_FILE
from tests.integrations.install.conftest import CLAUDE_PROJECT_SETTINGS, Machine
from tests.support.cli_runner import CLI

CLIENTS = ("claude", "codex", "copilot", "cursor", "gemini")
SCOPES = ("user", "project")
MATRIX = [(client, scope) for client in CLIENTS for scope in SCOPES]
HOOK_EVENTS = {"session-start", "prompt", "post-tool", "stop"}


def _tool_names() -> list[str]:
    from callboard.cli.install import _tool_names

    return _tool_names()


def _install(machine: Machine, client: str, scope: str, *extra: str) -> dict:
    result = machine.run("install", client, "--scope", scope, "--json", *extra)
    assert result.code == 0, result
    return json.loads(result.out)


def _uninstall(machine: Machine, client: str, scope: str, *extra: str) -> dict:
    result = machine.run("uninstall", client, "--scope", scope, "--json", *extra)
    assert result.code == 0, result
    return json.loads(result.out)


def _value(path: Path) -> object:
    text = path.read_text()
    return tomllib.loads(text) if path.suffix == ".toml" else JsonText(text, comments=True).value


def _runs(program: str, scope: str) -> bool:
    """Whether an entry runs the right program: this install, by its absolute path, from the user's
    own settings (so it runs without this PATH); the bare ``callboard`` (each teammate's PATH) from
    a project's, which a team shares."""
    return program == "callboard" if scope == "project" else os.path.isabs(program) and Path(program).is_file()


def _hook_argv(command: str, scope: str = "user") -> list[str]:
    """The ``hook …`` arguments of a hook's command, once the program it runs is checked."""
    argv = shlex.split(command)
    if argv[:2] == ["/bin/sh", "-c"]:  # Claude Code's per-turn hooks: sh -c CHECK PROGRAM HOME hook …
        program = argv[3]
    else:  # command -v PROGRAM … || exit 0; exec PROGRAM hook …
        assert argv[:3] == ["command", "-v", argv[argv.index("exec") + 1]], argv
        program = argv[argv.index("exec") + 1]
    assert _runs(program, scope), argv
    return argv[argv.index("hook") :]


# --- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize(("client", "scope"), MATRIX)
def test_install_then_uninstall_gives_every_file_back_byte_for_byte(machine: Machine, client: str, scope: str) -> None:
    machine.seed()
    before = machine.snapshot()

    first = _install(machine, client, scope)
    assert first["changed"], first
    after_install = machine.snapshot()
    assert after_install != before

    second = _install(machine, client, scope)
    assert second["changed"] == [] and all(f["action"] == "unchanged" for f in second["files"]), second
    assert machine.snapshot() == after_install  # idempotent: not a byte moved

    removed = _uninstall(machine, client, scope)
    assert set(removed["changed"]) == set(first["changed"])
    for file in removed["files"]:  # from the backup, or deleted when we created it
        assert file["action"] == ("restored" if before.get(file["path"]) else "deleted"), file
    assert machine.snapshot() == before  # contents, modes, and no folder left behind
    assert list((machine.callboard_home / "backups").glob("*")) == []
    manifest = json.loads((machine.callboard_home / MANIFEST_FILE).read_text())
    assert manifest["files"] == {} and manifest["installs"] == {}


@pytest.mark.parametrize(("client", "scope"), MATRIX)
def test_round_trip_on_a_bare_machine_leaves_nothing(machine: Machine, client: str, scope: str) -> None:
    before = machine.snapshot()
    _install(machine, client, scope)
    assert machine.snapshot() != before
    _uninstall(machine, client, scope)
    assert machine.snapshot() == before  # files and folders we created are gone


def test_every_client_and_scope_at_once_then_out_in_any_order(machine: Machine) -> None:
    machine.seed()
    before = machine.snapshot()
    for client, scope in MATRIX:
        _install(machine, client, scope)
    for client, scope in reversed(MATRIX[::2] + MATRIX[1::2]):
        _uninstall(machine, client, scope)
    assert machine.snapshot() == before


# --- what each client gets --------------------------------------------------------------------


@pytest.mark.parametrize("scope", SCOPES)
def test_claude_hooks_permissions_server_and_inbox_command(machine: Machine, scope: str) -> None:
    machine.seed()
    _install(machine, "claude", scope)
    base = machine.project / ".claude" if scope == "project" else machine.home / ".claude"
    settings = json.loads((base / "settings.json").read_text())
    hooks = settings["hooks"]

    def ours(event: str) -> dict:
        groups = [g for g in hooks[event] if any("hook" in shlex.split(h["command"]) for h in g["hooks"])]
        assert len(groups) == 1, hooks[event]
        return groups[0]

    wake = {"asyncRewake": True, "rewakeMessage": "New Callboard mail:", "rewakeSummary": "Callboard mail"}
    for event, name in (("SessionStart", "session-start"), ("Stop", "stop")):
        group = ours(event)
        sync, waiter = group["hooks"]
        assert _hook_argv(sync["command"], scope) == ["hook", name, "--client", "claude"]
        assert sync["type"] == "command" and sync["timeout"] == 10 and "asyncRewake" not in sync
        assert _hook_argv(waiter["command"], scope) == ["hook", "wake", "--client", "claude"]
        assert {k: waiter[k] for k in wake} == wake and waiter["type"] == "command"
        assert waiter["timeout"] >= 24 * 3600, "an idle session must stay wakeable past Claude Code's 600 s default"
    prompt = ours("UserPromptSubmit")
    assert [_hook_argv(h["command"], scope) for h in prompt["hooks"]] == [["hook", "prompt", "--client", "claude"]]
    post = ours("PostToolUse")
    assert post["matcher"] == "*" and _hook_argv(post["hooks"][0]["command"], scope)[1] == "post-tool"
    assert post["hooks"][0]["timeout"] == 10

    allow = settings["permissions"]["allow"]
    tools = _tool_names()
    assert {"send_message", "read_messages", "list_agents", "list_channels", "message_status", "who"} <= set(tools)
    for tool in tools:
        assert allow.count(f"mcp__callboard__{tool}") == 1, allow  # never a duplicate of the user's

    if scope == "project":
        assert settings["enabledMcpjsonServers"] == ["other", "callboard"]
        servers = json.loads((machine.project / ".mcp.json").read_text())["mcpServers"]
        assert list(servers) == ["other", "callboard"]
    else:
        assert "enabledMcpjsonServers" not in settings
        state = json.loads((machine.home / ".claude.json").read_text())
        servers = state["mcpServers"]
        assert list(servers) == ["github", "callboard"]
        assert state["projects"]["/src/webapp"]["mcpServers"] == {}  # only the top-level key
    server = servers["callboard"]
    assert server["type"] == "stdio" and server["args"] == ["mcp"] and _runs(server["command"], scope)

    inbox = (base / "commands" / "inbox.md").read_text()
    assert "read_messages" in inbox and "sender" in inbox and "thread" in inbox
    assert "not the user's" in inbox


def test_claude_project_scope_keeps_the_acceptance_file_shape(machine: Machine) -> None:
    machine.seed()
    _install(machine, "claude", "project")
    text = (machine.project / ".claude" / "settings.json").read_text()
    assert '"echo mine"' in text and '"Bash(make test)"' in text
    assert text.startswith('{\n  "permissions": {"allow": ["Bash(make test)", ')  # inline stays inline
    _uninstall(machine, "claude", "project")
    assert (machine.project / ".claude" / "settings.json").read_text() == CLAUDE_PROJECT_SETTINGS


@pytest.mark.parametrize("scope", SCOPES)
def test_codex_server_block_and_hooks(machine: Machine, scope: str) -> None:
    machine.seed()
    report = _install(machine, "codex", scope)
    config_text = (machine.home / ".codex" / "config.toml").read_text()
    config = tomllib.loads(config_text)
    assert config["mcp_servers"]["other"] == {"command": "other-mcp", "args": ["--flag"], "env": {"KEY": "v"}}
    server = config["mcp_servers"]["callboard"]
    assert server["args"] == ["mcp"] and _runs(server["command"], "user")  # the user's own config.toml
    assert "# >>> callboard (managed by 'callboard install codex'" in config_text
    assert config_text.rstrip().endswith("# <<< callboard")

    hooks_file = (machine.project / ".codex" if scope == "project" else machine.home / ".codex") / "hooks.json"
    hooks = json.loads(hooks_file.read_text())["hooks"]
    expected = {
        "SessionStart": "session-start",
        "UserPromptSubmit": "prompt",
        "PostToolUse": "post-tool",
        "Stop": "stop",
    }
    for event, name in expected.items():
        group = hooks[event][-1]
        (hook,) = group["hooks"]
        assert hook["type"] == "command" and hook["timeout"] == 10
        assert _hook_argv(hook["command"], scope) == ["hook", name, "--client", "codex"]
    assert hooks["PostToolUse"][-1]["matcher"] == "*"
    if scope == "user":
        assert hooks["Stop"][0] == {"hooks": [{"type": "command", "command": "say done"}]}  # the user's, first
    assert any("trust" in note for note in report["notes"])


@pytest.mark.parametrize("scope", SCOPES)
def test_copilot_server_and_hooks(machine: Machine, scope: str) -> None:
    machine.seed()
    report = _install(machine, "copilot", scope)
    if scope == "project":
        mcp_file = machine.project / ".github" / "mcp.json"
        hooks_doc = json.loads((machine.project / ".github" / "hooks" / "callboard.json").read_text())
        assert hooks_doc["version"] == 1
        assert (machine.project / ".github" / "hooks" / "lint.json").read_text() == '{"version": 1, "hooks": {}}\n'
        assert any("trust" in note for note in report["notes"])
    else:
        mcp_file = machine.home / ".copilot" / "mcp-config.json"
        settings_text = (machine.home / ".copilot" / "settings.json").read_text()
        assert "// my settings" in settings_text and "/* audit */" in settings_text  # JSONC comments kept
        hooks_doc = JsonText(settings_text, comments=True).value
        assert hooks_doc["theme"] == "dark"
        assert hooks_doc["hooks"]["userPromptSubmitted"][0]["bash"] == "./log-prompt.sh"
    server = json.loads(mcp_file.read_text())["mcpServers"]["callboard"]
    assert server["type"] == "local" and server["tools"] == ["*"] and server["args"] == ["mcp"]
    assert _runs(server["command"], scope)
    expected = {
        "sessionStart": "session-start",
        "userPromptSubmitted": "prompt",
        "postToolUse": "post-tool",
        "agentStop": "stop",
    }
    for event, name in expected.items():
        hook = hooks_doc["hooks"][event][-1]
        assert set(hook) == {"type", "bash", "timeoutSec"} and hook["type"] == "command" and hook["timeoutSec"] == 10
        assert _hook_argv(hook["bash"], scope) == ["hook", name, "--client", "copilot"]


def test_copilot_honours_copilot_home(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = machine.root / "copilot-home"
    monkeypatch.setenv("COPILOT_HOME", str(elsewhere))
    _install(machine, "copilot", "user")
    assert (elsewhere / "mcp-config.json").is_file() and (elsewhere / "settings.json").is_file()
    assert not (machine.home / ".copilot").exists()
    _uninstall(machine, "copilot", "user")
    assert not elsewhere.exists()


@pytest.mark.parametrize("scope", SCOPES)
def test_gemini_server_and_hooks(machine: Machine, scope: str) -> None:
    machine.seed()
    report = _install(machine, "gemini", scope)
    path = (machine.project if scope == "project" else machine.home) / ".gemini" / "settings.json"
    settings = JsonText(path.read_text(), comments=True).value
    server = settings["mcpServers"]["callboard"]
    assert set(server) == {"command", "args"} and server["args"] == ["mcp"] and _runs(server["command"], scope)
    expected = {
        "SessionStart": "session-start",
        "BeforeAgent": "prompt",
        "AfterTool": "post-tool",
        "AfterAgent": "stop",
    }
    for event, name in expected.items():
        group = settings["hooks"][event][-1]
        assert group["matcher"] == "*"
        (hook,) = group["hooks"]
        assert hook["type"] == "command" and hook["timeout"] == 10_000 and hook["name"] == f"callboard-{name}"
        assert _hook_argv(hook["command"], scope) == ["hook", name, "--client", "gemini"]
    if scope == "user":
        assert settings["mcpServers"]["bus"] == {"command": "bus", "args": ["serve"]}
        assert settings["hooks"]["BeforeAgent"][0]["hooks"][0]["command"] == "echo hi"
        assert "// servers" in path.read_text()
    else:
        assert settings["contextFileName"] == "AGENTS.md"
        assert any("trusted folder" in note for note in report["notes"])


@pytest.mark.parametrize("scope", SCOPES)
def test_cursor_gets_the_mcp_server_only(machine: Machine, scope: str) -> None:
    machine.seed()
    report = _install(machine, "cursor", scope)
    path = (machine.project if scope == "project" else machine.home) / ".cursor" / "mcp.json"
    assert report["changed"] == [str(path)]  # no hooks: Cursor's are not ones Callboard uses
    server = json.loads(path.read_text())["mcpServers"]["callboard"]
    assert set(server) == {"command", "args"} and server["args"] == ["mcp"] and _runs(server["command"], scope)
    assert any("MCP" in note and "no hooks" in note for note in report["notes"])
    _uninstall(machine, "cursor", scope)
    assert not path.exists()


# --- dry run, errors, tokens ------------------------------------------------------------------


@pytest.mark.parametrize(("client", "scope"), MATRIX)
def test_dry_run_prints_diffs_and_writes_nothing(machine: Machine, client: str, scope: str) -> None:
    machine.seed()
    before = machine.snapshot()
    result = machine.run("install", client, "--scope", scope, "--dry-run")
    assert result.code == 0, result
    assert machine.snapshot() == before
    assert not machine.callboard_home.exists() or not (machine.callboard_home / MANIFEST_FILE).exists()
    ours = '+    "callboard": {' if client == "cursor" else f"hook session-start --client {client}"  # Cursor: no hooks
    assert "\n+++ " in result.out and "@@ " in result.out and ours in result.out
    assert "nothing written" in result.out

    document = json.loads(machine.run("install", client, "--scope", scope, "--dry-run", "--json").out)
    assert document["dry_run"] is True and document["changed"]
    assert all("diff" in f for f in document["files"])
    assert machine.snapshot() == before


def test_dry_run_uninstall_writes_nothing(machine: Machine) -> None:
    machine.seed()
    _install(machine, "gemini", "user")
    installed = machine.snapshot()
    result = machine.run("uninstall", "gemini", "--dry-run")
    assert result.code == 0 and '-    "callboard": {' in result.out, result
    assert machine.snapshot() == installed
    _uninstall(machine, "gemini", "user")


INVALID = {
    "claude": (".claude/settings.json", '{\n  "model": "opus",\n  "env": {"A": 1,}\n}\n', 3),
    "codex": (".codex/config.toml", 'model = "o3"\n[mcp_servers.other\ncommand = "x"\n', 2),
    "copilot": (".copilot/mcp-config.json", '{\n  "mcpServers": {\n    "bus": \n  }\n}\n', 4),
    "gemini": (".gemini/settings.json", '{\n  // fine\n  "a": [1, 2\n}\n', 4),
    "cursor": (".cursor/mcp.json", '{\n  "mcpServers": {\n    "x": {"command": "x",}\n  }\n}\n', 3),
}


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("client", CLIENTS)
def test_an_unreadable_settings_file_stops_everything(machine: Machine, client: str, as_json: bool) -> None:
    machine.seed()
    name, text, line = INVALID[client]
    (machine.home / name).parent.mkdir(exist_ok=True)
    (machine.home / name).write_text(text)
    before = machine.snapshot()
    result = machine.run("install", client, *(["--json"] if as_json else []))
    assert result.code == 2
    if as_json:
        message = json.loads(result.out)["error"]["message"]
    else:
        assert result.out == "" and result.err.startswith("error: bad_request: "), result
        message = result.err
    assert str(machine.home / name) in message and f"line {line}" in message, message
    assert machine.snapshot() == before
    assert not (machine.callboard_home / MANIFEST_FILE).exists()


def test_a_settings_file_of_the_wrong_shape_is_refused(machine: Machine) -> None:
    machine.seed()
    (machine.home / ".gemini" / "settings.json").write_text('{"hooks": []}\n')
    before = machine.snapshot()
    result = machine.run("install", "gemini")
    assert result.code == 2 and "hooks is not an object" in result.err, result
    assert machine.snapshot() == before


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_unknown_client_is_a_usage_error_listing_the_clients(machine: Machine, command: str) -> None:
    result = machine.run(command, "vscode")
    assert result.code == 2 and result.err.startswith("error: usage: "), result
    assert all(client in result.err for client in CLIENTS)


def test_no_token_is_written_anywhere(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    secret, env_secret = "cb_config-secret-0123456789", "cb_env-secret-9876543210"
    machine.callboard_home.mkdir()
    (machine.callboard_home / "config.toml").write_text(f'hub = "http://127.0.0.1:9"\ntoken = "{secret}"\n')
    monkeypatch.setenv("CALLBOARD_TOKEN", env_secret)
    machine.seed()
    for client, scope in MATRIX:
        _install(machine, client, scope)
    written = [p for p in machine.snapshot().values() if isinstance(p, tuple)]
    written += [
        (p.read_bytes(), 0) for p in machine.callboard_home.rglob("*") if p.is_file() and p.name != "config.toml"
    ]
    assert written
    for data, _ in written:
        assert secret.encode() not in data and env_secret.encode() not in data


# --- the user's edits, the user's entries, backups ---------------------------------------------


def _edit_like_a_user(path: Path) -> object:
    """Change a file the way a person (or the agent CLI) would; returns the key they added."""
    if path.suffix == ".toml":
        path.write_text(path.read_text() + '\n[profiles.fast]\nmodel = "o4"\n')
    elif path.suffix == ".md":
        path.write_text(path.read_text() + "\nAlso check #reviews.\n")
    else:
        path.write_text(JsonText(path.read_text(), comments=True).set_member(("userEdit",), [1, 2]).text)
    return path


@pytest.mark.parametrize(("client", "scope"), MATRIX)
def test_the_users_edits_after_install_survive_uninstall(machine: Machine, client: str, scope: str) -> None:
    machine.seed()
    originals = {p: (p.read_bytes() if p.exists() else None) for p in map(Path, machine.snapshot()) if p.is_file()}
    changed = [Path(p) for p in _install(machine, client, scope)["changed"]]
    for path in changed:
        _edit_like_a_user(path)
    report = _uninstall(machine, client, scope)
    assert any("changed since install" in note for note in report["notes"]), report
    for path in changed:
        original = originals.get(path)
        if path.suffix == ".md":
            assert "Also check #reviews." in path.read_text()  # theirs now: kept
            continue
        got = _value(path)
        if path.suffix == ".toml":
            want = tomllib.loads(original.decode()) | {"profiles": {"fast": {"model": "o4"}}}
        else:
            want = (JsonText(original.decode(), comments=True).value if original else {}) | {"userEdit": [1, 2]}
        assert got == want, path
        assert f"--client {client}" not in path.read_text()


def test_a_reformatted_file_keeps_the_users_entries_and_loses_only_ours(machine: Machine) -> None:
    machine.seed()
    settings = machine.home / ".claude" / "settings.json"
    _install(machine, "claude", "user")
    document = json.loads(settings.read_text())
    document["permissions"]["allow"].insert(0, "Bash(ls)")
    settings.write_text(json.dumps(document, indent=2))  # an editor rewrote it whole
    _uninstall(machine, "claude", "user")
    got = json.loads(settings.read_text())
    assert got["permissions"]["allow"] == ["Bash(ls)", "Bash(git status)", "mcp__callboard__who"]  # theirs stays
    assert got["hooks"] == {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}
    assert set(got) == {"model", "env", "permissions", "hooks", "statusLine"}


def test_the_users_own_server_named_callboard_comes_back(machine: Machine) -> None:
    machine.seed()
    state = machine.home / ".claude.json"
    mine = {"type": "stdio", "command": "callboard", "args": ["mcp"], "env": {}}
    assert json.loads(state.read_text())["mcpServers"]["callboard"] == mine
    _install(machine, "claude", "user")
    assert json.loads(state.read_text())["mcpServers"]["callboard"]["command"] != "callboard"
    state.write_text(JsonText(state.read_text()).set_member(("numStartups",), 43).text)  # Claude Code wrote to it
    _uninstall(machine, "claude", "user")
    got = json.loads(state.read_text())
    assert got["mcpServers"]["callboard"] == mine and got["numStartups"] == 43


def test_a_codex_server_table_of_the_users_is_left_alone(machine: Machine) -> None:
    machine.seed()
    config = machine.home / ".codex" / "config.toml"
    config.write_text(config.read_text() + '\n[mcp_servers.callboard]\ncommand = "callboard"\nargs = ["mcp"]\n')
    before = config.read_bytes()
    report = _install(machine, "codex", "user")
    assert config.read_bytes() == before
    assert any("already defined" in note for note in report["notes"])
    assert (machine.home / ".codex" / "hooks.json").read_text().count("--client codex") == 4


def test_user_and_project_installs_share_the_codex_server(machine: Machine) -> None:
    machine.seed()
    config = machine.home / ".codex" / "config.toml"
    original = config.read_bytes()
    _install(machine, "codex", "user")
    _install(machine, "codex", "project")
    assert config.read_text().count("[mcp_servers.callboard]") == 1
    report = _uninstall(machine, "codex", "user")
    assert "[mcp_servers.callboard]" in config.read_text()  # the project install still needs it
    assert any("another install" in note for note in report["notes"])
    _uninstall(machine, "codex", "project")
    assert config.read_bytes() == original


def test_a_second_install_keeps_the_first_backup(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    machine.seed()
    settings = machine.home / ".gemini" / "settings.json"
    original = settings.read_bytes()
    _install(machine, "gemini", "user")
    first = {p.name: p.read_bytes() for p in (machine.callboard_home / "backups").iterdir()}
    assert original in first.values()

    # callboard moved (a new virtualenv): the second install rewrites our entries
    moved = machine.root / "venv2" / "bin" / "callboard"
    moved.parent.mkdir(parents=True)
    moved.write_text("#!/bin/sh\n")
    moved.chmod(0o755)
    monkeypatch.setattr("callboard.cli.install.server_command", lambda: [str(moved), "mcp"])
    report = _install(machine, "gemini", "user")
    assert report["changed"] == [str(settings)]
    text = settings.read_text()
    assert str(moved) in text and text.count("hook session-start") == 1  # replaced, not added twice

    assert {p.name: p.read_bytes() for p in (machine.callboard_home / "backups").iterdir()} == first
    _uninstall(machine, "gemini", "user")
    assert settings.read_bytes() == original


def test_edits_between_two_installs_are_never_rolled_back(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    machine.seed()
    settings = machine.home / ".gemini" / "settings.json"
    _install(machine, "gemini", "user")
    _edit_like_a_user(settings)
    monkeypatch.setattr("callboard.cli.install.server_command", lambda: ["/opt/sb/bin/callboard", "mcp"])
    _install(machine, "gemini", "user")  # writes again, over the user's edit
    _uninstall(machine, "gemini", "user")
    assert JsonText(settings.read_text(), comments=True).value["userEdit"] == [1, 2]


def test_uninstall_with_nothing_installed_says_so(machine: Machine) -> None:
    machine.seed()
    before = machine.snapshot()
    result = machine.run("uninstall", "claude")
    assert result.code == 0 and "not installed" in result.out, result
    document = json.loads(machine.run("uninstall", "codex", "--scope", "project", "--json").out)
    assert document["installed"] is False and document["files"] == [] and document["notes"]
    assert machine.snapshot() == before


def test_modes_are_kept_and_symlinks_written_through(machine: Machine) -> None:
    machine.seed()
    state = machine.home / ".claude.json"
    real = machine.root / "dotfiles" / "claude-settings.json"
    real.parent.mkdir()
    link = machine.home / ".claude" / "settings.json"
    real.write_bytes(link.read_bytes())
    real.chmod(0o640)
    link.unlink()
    link.symlink_to(real)
    original = real.read_bytes()
    _install(machine, "claude", "user")
    assert link.is_symlink() and "hook stop" in real.read_text()
    assert state.stat().st_mode & 0o777 == 0o600 and real.stat().st_mode & 0o777 == 0o640
    _uninstall(machine, "claude", "user")
    assert link.is_symlink() and real.read_bytes() == original and real.stat().st_mode & 0o777 == 0o640


def test_the_manifest_and_backups_are_private(machine: Machine) -> None:
    machine.seed()
    _install(machine, "claude", "user")
    manifest = machine.callboard_home / MANIFEST_FILE
    assert manifest.stat().st_mode & 0o777 == 0o600
    body = json.loads(manifest.read_text())
    for record in body["files"].values():
        assert {"existed", "backup", "sha256", "entries"} <= set(record)
        if record["existed"]:
            assert Path(record["backup"]).stat().st_mode & 0o777 == 0o600
    assert body["installs"]["claude:user"]["files"]


def test_human_output_names_each_file_and_what_happened(machine: Machine) -> None:
    machine.seed()
    result = machine.run("install", "codex", "--scope", "project")
    assert result.code == 0 and result.err == "", result
    assert "updated    ~/.codex/config.toml" in result.out
    assert f"created    {machine.project}/.codex/hooks.json" in result.out
    assert "note: Codex skips hooks it does not trust" in result.out
    result = machine.run("uninstall", "codex", "--scope", "project")
    assert "restored   ~/.codex/config.toml" in result.out and "deleted" in result.out


# --- the real command line --------------------------------------------------------------------


@pytest.mark.e2e
def test_e2e_the_acceptance_round_trip(tmp_path: Path) -> None:
    cli = CLI(tmp_path)
    project = cli.workdir / "webapp"
    (project / ".git").mkdir(parents=True)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(CLAUDE_PROJECT_SETTINGS)
    proc = cli.run("install", "claude", "--scope", "project", cwd=project)
    assert proc.returncode == 0, proc.stderr
    text = (project / ".claude" / "settings.json").read_text()
    command = json.loads(text)["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert _hook_argv(command, "project") == ["hook", "session-start", "--client", "claude"]
    script = shutil.which("callboard", path=str(Path(sys.executable).parent))  # the install this test runs
    assert script is not None
    ran = subprocess.run([script, "--help"], capture_output=True, text=True, env=cli.env(), timeout=30)
    assert ran.returncode == 0 and "install" in ran.stdout, ran.stderr
    assert cli.run("install", "claude", "--scope", "project", cwd=project).returncode == 0
    assert (project / ".claude" / "settings.json").read_text() == text
    proc = cli.run("uninstall", "claude", "--scope", "project", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / ".claude" / "settings.json").read_text() == CLAUDE_PROJECT_SETTINGS
    assert not (project / ".mcp.json").exists() and not (project / ".claude" / "commands").exists()
