"""callboard mcp-config CLIENT: the command or snippet that registers the MCP server.

Each snippet is read back the way its client would read it (shlex for a command line, json for
mcp.json, tomllib for config.toml) into what the client would register, so one set of
assertions covers every client and form. The end-to-end calls run the real CLI in a subprocess
with a logged-in config whose token must never appear in what it prints.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from callboard.cli import mcp_config
from callboard.client import hub as client_module
from callboard.errors import BadRequest
from callboard.integrations.agent_clis import MCP_CLIENTS
from callboard.integrations.mcp_registration import (
    AGENT_HEADER,
    CODEX_FORWARDED_ENV,
    Snippet,
    client_name,
    http_snippet,
    mcp_url,
    stdio_snippet,
)

COMMAND = ["/opt/callboard/bin/callboard", "mcp"]
URL = "https://hub.example:8465/mcp"
TOKEN_ENV = "CALLBOARD_TOKEN"
FORMS = ("stdio", "http")

# Keys each client's file format accepts (Codex rejects unknown keys in an [mcp_servers.x] table).
CODEX_KEYS = {"command", "args", "env", "env_vars", "cwd", "url", "bearer_token_env_var", "http_headers"} | {
    # what `codex exec` needs to wait for the server and to let its tools run (tests/agent_clis_e2e/test_codex.py)
    "required",
    "startup_timeout_sec",
    "default_tools_approval_mode",
}
CURSOR_KEYS = {"command", "args", "env", "url", "headers"}


@dataclass
class Registered:
    """What a client would store for the server, whatever its syntax."""

    scope: str  # "user" (every project) or "project"
    command: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # not counting the token
    token_env: str | None = None  # the variable the client takes the bearer token from
    transport: str | None = None


def _bearer_env(value: str, opening: str) -> str:
    """The variable named by 'Bearer ${VAR}' (or Cursor's 'Bearer ${env:VAR}')."""
    assert value.startswith(f"Bearer {opening}") and value.endswith("}"), value
    return value[len(f"Bearer {opening}") : -1]


def _split_headers(raw: list[str], opening: str = "${") -> tuple[dict[str, str], str | None]:
    headers = dict(h.split(": ", 1) for h in raw)
    token = headers.pop("Authorization", None)
    return headers, _bearer_env(token, opening) if token is not None else None


def _options(argv: list[str], with_value: set[str]) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """Options (each a list of values), positionals, and what follows '--'."""
    options: dict[str, list[str]] = {}
    positionals: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            rest = argv[i + 1 :]
            break
        if word in with_value:
            options.setdefault(word, []).append(argv[i + 1])
            i += 2
            continue
        assert not word.startswith("-"), f"unexpected option {word} in {argv}"
        positionals.append(word)
        i += 1
    return options, positionals, rest


def _env(pairs: list[str]) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in pairs)


def registered(snippet: Snippet) -> Registered:
    """Read a snippet as its client would; fail on anything not in the client's documented shape."""
    text = snippet.text
    assert text.endswith("\n") and text.strip(), text
    if snippet.client == "claude":
        argv = shlex.split(text)
        assert len(text.strip().splitlines()) == 1 and argv[:3] == ["claude", "mcp", "add"], argv
        options, positionals, rest = _options(argv[3:], {"--scope", "--transport", "-e", "--header"})
        scope = {"user": "user", "local": "project"}[options["--scope"][0]]
        if snippet.form == "stdio":
            assert positionals == ["callboard"] and "--transport" not in options, argv
            return Registered(scope, command=rest, env=_env(options.get("-e", [])))
        assert options["--transport"] == ["http"] and len(positionals) == 2 and not rest, argv
        headers, token = _split_headers(options["--header"])
        return Registered(scope, url=positionals[1], headers=headers, token_env=token, transport="http")
    if snippet.client == "copilot":
        argv = shlex.split(text)
        assert len(text.strip().splitlines()) == 1 and argv[:3] == ["copilot", "mcp", "add"], argv
        options, positionals, rest = _options(argv[3:], {"--transport", "--env", "--header"})
        if snippet.form == "stdio":
            assert positionals == ["callboard"] and "--transport" not in options, argv
            return Registered("user", command=rest, env=_env(options.get("--env", [])))
        assert options["--transport"] == ["http"] and len(positionals) == 2 and not rest, argv
        headers, token = _split_headers(options["--header"])
        return Registered("user", url=positionals[1], headers=headers, token_env=token, transport="http")
    if snippet.client == "gemini":
        argv = shlex.split(text)
        assert len(text.strip().splitlines()) == 1 and argv[:3] == ["gemini", "mcp", "add"], argv
        options, positionals, rest = _options(argv[3:], {"--scope", "--transport", "-e", "--header"})
        scope = options["--scope"][0]
        assert scope in ("user", "project"), argv
        if snippet.form == "stdio":
            assert positionals[0] == "callboard" and "--transport" not in options, argv
            return Registered(scope, command=positionals[1:] + rest, env=_env(options.get("-e", [])))
        assert options["--transport"] == ["http"] and len(positionals) == 2 and not rest, argv
        headers, token = _split_headers(options["--header"])
        return Registered(scope, url=positionals[1], headers=headers, token_env=token, transport="http")
    if snippet.client == "codex":
        document = tomllib.loads(text)
        assert list(document) == ["mcp_servers"] and list(document["mcp_servers"]) == ["callboard"], document
        server = document["mcp_servers"]["callboard"]
        assert set(server) <= CODEX_KEYS, server
        scope = {"~/.codex/config.toml": "user", ".codex/config.toml": "project"}[snippet.path]
        if snippet.form == "stdio":
            assert "url" not in server and set(server["env_vars"]) <= set(CODEX_FORWARDED_ENV), server
            return Registered(scope, command=[server["command"], *server["args"]], env=server.get("env", {}))
        assert "command" not in server, server
        headers = server.get("http_headers", {})
        return Registered(scope, url=server["url"], headers=headers, token_env=server["bearer_token_env_var"])
    if snippet.client == "cursor":
        document = json.loads(text)
        assert list(document) == ["mcpServers"] and list(document["mcpServers"]) == ["callboard"], document
        server = document["mcpServers"]["callboard"]
        assert set(server) <= CURSOR_KEYS, server
        scope = {"~/.cursor/mcp.json": "user", ".cursor/mcp.json": "project"}[snippet.path]
        if snippet.form == "stdio":
            assert "url" not in server, server
            return Registered(scope, command=[server["command"], *server["args"]], env=server.get("env", {}))
        headers = dict(server["headers"])
        token = _bearer_env(headers.pop("Authorization"), "${env:")
        return Registered(scope, url=server["url"], headers=headers, token_env=token)
    raise AssertionError(f"no reader for {snippet.client}")


def _snippet(client: str, form: str, agent: str | None = None, command: list[str] = COMMAND) -> Snippet:
    return stdio_snippet(client, command, agent) if form == "stdio" else http_snippet(client, URL, agent)


# --- the pure module ----------------------------------------------------------------------------


@pytest.mark.parametrize("client", MCP_CLIENTS)
def test_stdio_registers_callboard_mcp_with_no_environment(client: str) -> None:
    snippet = _snippet(client, "stdio")
    assert (snippet.client, snippet.form) == (client, "stdio")
    got = registered(snippet)
    assert got.command == COMMAND
    assert got.env == {}
    assert got.scope == "user"  # one registration serves every project, each acting as its own agent


@pytest.mark.parametrize("client", MCP_CLIENTS)
def test_stdio_with_an_agent_pins_it_in_the_servers_environment(client: str) -> None:
    got = registered(_snippet(client, "stdio", agent="alice"))
    assert got.command == COMMAND
    assert got.env == {"CALLBOARD_AGENT": "alice"}
    assert got.scope == ("user" if client == "copilot" else "project")


@pytest.mark.parametrize("client", MCP_CLIENTS)
def test_http_points_at_the_mcp_endpoint_with_the_token_from_the_environment(client: str) -> None:
    snippet = _snippet(client, "http")
    assert snippet.form == "http"
    got = registered(snippet)
    assert got.url == URL
    assert got.command is None
    assert got.token_env == TOKEN_ENV
    assert got.headers == {}  # no agent: an agent token needs no header
    assert got.scope == "user"
    assert TOKEN_ENV in " ".join(snippet.notes)


@pytest.mark.parametrize("client", MCP_CLIENTS)
def test_http_with_an_agent_sends_the_agent_header(client: str) -> None:
    got = registered(_snippet(client, "http", agent="alice"))
    assert got.headers == {AGENT_HEADER: "alice"}
    assert got.token_env == TOKEN_ENV
    assert got.scope == ("user" if client == "copilot" else "project")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("client", MCP_CLIENTS)
def test_kind_and_path_agree(client: str, form: str) -> None:
    snippet = _snippet(client, form)
    if snippet.kind == "command":
        assert snippet.path is None
        assert snippet.where.startswith("run this")
    else:
        assert snippet.kind == "file" and snippet.path
        assert snippet.path in snippet.where
    assert set(snippet.to_dict()) == {"client", "form", "kind", "path", "text"}


def test_kinds_per_client() -> None:
    kinds = {(c, f): _snippet(c, f).kind for c in MCP_CLIENTS for f in FORMS}
    assert kinds == {
        ("claude", "stdio"): "command",
        ("claude", "http"): "command",
        ("codex", "stdio"): "file",
        ("codex", "http"): "file",
        ("copilot", "stdio"): "command",
        ("copilot", "http"): "command",
        ("cursor", "stdio"): "file",
        ("cursor", "http"): "file",
        ("gemini", "stdio"): "command",
        ("gemini", "http"): "command",
    }


@pytest.mark.parametrize("client", MCP_CLIENTS)
def test_a_command_with_spaces_and_options_survives_quoting(client: str) -> None:
    command = ["/Users/me/My Tools/python3", "-m", "callboard", "mcp"]
    assert registered(stdio_snippet(client, command)).command == command


def test_gemini_passes_dash_arguments_after_a_separator() -> None:
    argv = shlex.split(stdio_snippet("gemini", ["/usr/bin/python3", "-m", "callboard", "mcp"]).text)
    assert argv[argv.index("/usr/bin/python3") + 1] == "--"


def test_codex_stdio_forwards_the_variables_callboard_reads() -> None:
    # Codex gives a stdio server only HOME, PATH, … unless env_vars names more.
    server = tomllib.loads(stdio_snippet("codex", COMMAND).text)["mcp_servers"]["callboard"]
    assert {"CALLBOARD_AGENT", "CALLBOARD_HOME", "CALLBOARD_HUB", "CALLBOARD_TOKEN"} <= set(server["env_vars"])
    pinned = tomllib.loads(stdio_snippet("codex", COMMAND, "alice").text)["mcp_servers"]["callboard"]
    assert "CALLBOARD_AGENT" not in pinned["env_vars"] and pinned["env"] == {"CALLBOARD_AGENT": "alice"}


def test_the_agent_header_is_the_one_the_hub_client_sends() -> None:
    assert AGENT_HEADER == client_module.AGENT_HEADER


@pytest.mark.parametrize(
    ("hub", "expected"),
    [
        ("http://127.0.0.1:8465", "http://127.0.0.1:8465/mcp"),
        ("http://127.0.0.1:8465/", "http://127.0.0.1:8465/mcp"),
        ("https://hub.example/mcp", "https://hub.example/mcp"),
        ("https://hub.example/base/", "https://hub.example/base/mcp"),
    ],
)
def test_mcp_url(hub: str, expected: str) -> None:
    assert mcp_url(hub) == expected


@pytest.mark.parametrize("hub", ["hub.example:8465", "ftp://hub.example", "http://", ""])
def test_mcp_url_refuses_what_is_not_a_hub_address(hub: str) -> None:
    with pytest.raises(BadRequest, match="not a hub address"):
        mcp_url(hub)


def test_client_names() -> None:
    assert client_name(" Claude ") == "claude"
    with pytest.raises(BadRequest) as caught:
        client_name("vscode")
    assert "vscode" in caught.value.message
    assert all(name in caught.value.message for name in MCP_CLIENTS)


# --- which command the snippet runs ------------------------------------------------------------


def _script(folder: Path, name: str = "callboard") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX script names")
def test_server_command_prefers_the_running_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script(tmp_path / "bin")
    monkeypatch.setattr(sys, "argv", [str(script), "mcp-config", "claude"])
    assert mcp_config.server_command() == [str(script), "mcp"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX script names")
def test_server_command_then_the_script_beside_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script(tmp_path / "venv" / "bin")
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "callboard" / "__main__.py")])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert mcp_config.server_command() == [str(script), "mcp"]


def test_server_command_else_this_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "callboard" / "__main__.py")])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python" / "bin" / "python3"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert mcp_config.server_command() == [str(tmp_path / "python" / "bin" / "python3"), "-m", "callboard", "mcp"]


# --- end to end ---------------------------------------------------------------------------------

SECRET = "cb_do-not-print-this-secret-0123456789"
ENV_SECRET = "cb_nor-this-one-from-the-environment-42"


def _log_in(cli, hub: str = "http://127.0.0.1:8465") -> None:
    cli.callboard_home.mkdir(parents=True, exist_ok=True)
    cli.config_path.write_text(f'hub = "{hub}"\ntoken = "{SECRET}"\n')


def _read_back(client: str, form: str, document: dict) -> Registered:
    assert set(document) == {"client", "form", "kind", "path", "text"}
    assert (document["client"], document["form"]) == (client, form)
    return registered(Snippet(client, form, document["kind"], document["path"], document["text"], ""))


@pytest.mark.parametrize("client", MCP_CLIENTS)
def test_e2e_every_client_and_form_never_prints_the_token(cli, client: str) -> None:
    _log_in(cli)
    for form in FORMS:
        args = ["mcp-config", client] + (["--http"] if form == "http" else [])
        for as_json in (False, True):
            proc = cli.run(*args, *(["--json"] if as_json else []), env={TOKEN_ENV: ENV_SECRET}, agent="alice")
            assert proc.returncode == 0, proc.stderr
            assert SECRET not in proc.stdout + proc.stderr
            assert ENV_SECRET not in proc.stdout + proc.stderr
            if as_json:
                got = _read_back(client, form, json.loads(proc.stdout))
            else:
                kind = "command" if client in ("claude", "copilot", "gemini") else "file"
                path = None
                if kind == "file":
                    path = proc.stderr.split("add this to " if client == "codex" else "merge this into ")[1].split()[0]
                got = registered(Snippet(client, form, kind, path, proc.stdout, ""))
                assert proc.stderr.startswith("# "), proc.stderr  # where it goes, for people
            if form == "http":
                assert got.url == "http://127.0.0.1:8465/mcp"
                assert got.token_env == TOKEN_ENV
                assert got.headers == {AGENT_HEADER: "alice"}  # the identity rule's agent
            else:
                assert got.command is not None and got.command[-1] == "mcp"
                assert got.env == {}  # the server works out its agent itself, where it runs


def test_e2e_the_stdio_command_runs_callboard(cli) -> None:
    document = cli.run_json("mcp-config", "claude")
    command = registered(_as_snippet(document)).command
    assert command is not None and os.path.isabs(command[0])
    proc = subprocess.run([*command, "--help"], capture_output=True, text=True, env=cli.env(), timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "stdio" in proc.stdout  # the 'callboard mcp' command's own help


def _as_snippet(document: dict) -> Snippet:
    return Snippet(document["client"], document["form"], document["kind"], document["path"], document["text"], "")


def test_e2e_url_implies_http_and_needs_no_login(cli) -> None:
    document = cli.run_json("mcp-config", "codex", "--url", "https://hub.example:9000/", "--agent", "Bob")
    got = registered(_as_snippet(document))
    assert document["form"] == "http"
    assert got.url == "https://hub.example:9000/mcp"
    assert got.headers == {AGENT_HEADER: "bob"}
    assert document["path"] == ".codex/config.toml"


def test_e2e_logged_in_to_replicas_the_agent_cli_gets_the_first(cli) -> None:
    _log_in(cli, "http://10.0.0.1:8465/, http://10.0.0.2:8465")
    document = cli.run_json("mcp-config", "cursor", "--http", agent="alice")
    assert registered(_as_snippet(document)).url == "http://10.0.0.1:8465/mcp"


def test_e2e_without_an_identity_there_is_no_agent_header(cli) -> None:
    if not cli.outside_any_project():
        pytest.skip("the test folder is inside a project, so the identity rule names an agent")
    _log_in(cli)
    proc = cli.run("mcp-config", "cursor", "--http")
    assert proc.returncode == 0, proc.stderr
    server = json.loads(proc.stdout)["mcpServers"]["callboard"]
    assert set(server["headers"]) == {"Authorization"}
    assert "--agent" in proc.stderr  # says a user token needs one


@pytest.mark.parametrize("as_json", [False, True])
def test_e2e_unknown_client(cli, expect_error, as_json: bool) -> None:
    proc = cli.run("mcp-config", "vscode", *(["--json"] if as_json else []))
    error = expect_error(proc, "bad_request", as_json=as_json)
    message = error["message"] if as_json else error
    assert "vscode" in message and all(name in message for name in MCP_CLIENTS)


@pytest.mark.parametrize("as_json", [False, True])
def test_e2e_http_without_a_hub(cli, expect_error, as_json: bool) -> None:
    proc = cli.run("mcp-config", "claude", "--http", *(["--json"] if as_json else []), agent="alice")
    error = expect_error(proc, "bad_request", as_json=as_json)
    message = error["message"] if as_json else error
    assert "callboard login" in message and "--url" in message


def test_e2e_bad_url_and_bad_agent(cli, expect_error) -> None:
    expect_error(cli.run("mcp-config", "gemini", "--url", "hub.example:8465"), "bad_request", as_json=False)
    expect_error(cli.run("mcp-config", "gemini", "--agent", "Not A Name!"), "bad_name", as_json=False)
