"""How to register the Callboard MCP server with each agent CLI: the exact command to run or
snippet to paste, built from plain inputs (pure: no I/O, nothing read from the machine).

Two forms. **stdio** runs ``callboard mcp`` as a child of the agent CLI; it acts as the agent
the identity rule names in the project folder, on the embedded store or the hub this machine is
logged in to, so the registration needs no environment at all. **http** points the agent CLI at
a hub's ``/mcp`` endpoint with ``Authorization: Bearer`` and, when an agent is named, the
``X-Callboard-Agent`` header (a workspace user token needs it; an agent token does not).

A token is never written into a snippet: every client reads it from ``$CALLBOARD_TOKEN`` in
its own syntax (``${VAR}``, ``${env:VAR}``, ``bearer_token_env_var``).

A snippet that names an agent (``--agent``, or the header) registers the server for one
project; otherwise for every project of the user (Copilot's command always registers user-wide).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from callboard.errors import BadRequest
from callboard.headers import AGENT_HEADER
from callboard.integrations.agent_clis import BY_NAME, MCP_CLIENTS

SERVER_NAME = "callboard"
TOKEN_ENV = "CALLBOARD_TOKEN"
AGENT_ENV = "CALLBOARD_AGENT"
MCP_PATH = "/mcp"

# Codex starts a stdio server with only HOME, PATH, USER, LANG, … of its environment; these are
# the variables `callboard mcp` reads (identity, store, hub login), forwarded by name only.
CODEX_FORWARDED_ENV = (
    "CALLBOARD_AGENT",
    "CALLBOARD_DB",
    "CALLBOARD_HOME",
    "CALLBOARD_HUB",
    "CALLBOARD_TOKEN",
    "CALLBOARD_WORKSPACE",
    "XDG_DATA_HOME",
)

Form = Literal["stdio", "http"]
Kind = Literal["command", "file"]


@dataclass(frozen=True, slots=True)
class Snippet:
    """What to do for one client: run ``text`` (kind "command") or merge it into ``path``."""

    client: str
    form: Form
    kind: Kind
    path: str | None  # the file a "file" snippet goes in (None for a command)
    text: str
    where: str  # one line for people: where it goes, or "run this"
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, str | None]:
        return {"client": self.client, "form": self.form, "kind": self.kind, "path": self.path, "text": self.text}


def client_name(raw: str) -> str:
    """The supported client ``raw`` names, or a BadRequest listing them."""
    name = raw.strip().lower()
    if name not in MCP_CLIENTS:
        raise BadRequest(f"unknown client {raw!r}: choose one of {', '.join(MCP_CLIENTS)}.")
    return name


def mcp_url(hub: str) -> str:
    """The hub's MCP endpoint: ``<hub>/mcp`` (a URL already ending in /mcp is kept)."""
    url = hub.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadRequest(f"{hub!r} is not a hub address: use http://HOST:PORT.")
    return url if url.endswith(MCP_PATH) else url + MCP_PATH


def stdio_snippet(client: str, command: Sequence[str], agent: str | None = None, name: str = SERVER_NAME) -> Snippet:
    """Register ``command`` (e.g. ``["/venv/bin/callboard", "mcp"]``) as a stdio server.

    ``agent`` pins the agent (``CALLBOARD_AGENT`` in the server's environment) and makes the
    registration project-wide instead of user-wide."""
    if not command:
        raise ValueError("the server command is empty")
    env = {AGENT_ENV: agent} if agent else {}
    build = _STDIO[client_name(client)]
    return build(name, list(command), env)


def stdio_entry(client: str, command: Sequence[str], env: Mapping[str, str] | None = None) -> dict[str, object]:
    """The server object a client's JSON config file holds under ``mcpServers.<name>`` for
    ``command`` as a stdio server, in the shape the client's own ``mcp add`` writes. (Codex's
    config is TOML: its table is ``stdio_snippet("codex", command).text``.)"""
    name = client_name(client)
    if name == "codex":
        raise ValueError("Codex is configured in TOML: use stdio_snippet('codex', command).text")
    if not command:
        raise ValueError("the server command is empty")
    stdio_type = BY_NAME[name].mcp.stdio_type
    entry: dict[str, object] = {"type": stdio_type} if stdio_type else {}
    entry.update(command=command[0], args=list(command[1:]))
    if env:
        entry["env"] = dict(env)
    if name == "copilot":
        entry["tools"] = ["*"]  # which tools Copilot may use: all, as `copilot mcp add` writes
    return entry


def http_snippet(client: str, url: str, agent: str | None = None, name: str = SERVER_NAME) -> Snippet:
    """Register the hub endpoint ``url`` (see mcp_url) as a Streamable HTTP server.

    The token comes from ``$CALLBOARD_TOKEN``; ``agent`` adds the X-Callboard-Agent header
    (needed with a workspace user token) and makes the registration project-wide."""
    headers = {AGENT_HEADER: agent} if agent else {}
    build = _HTTP[client_name(client)]
    return build(name, url, headers)


# --- the clients ------------------------------------------------------------------------------


def _snippet(client: str, form: Form, path: str | None, text: str, where: str, notes: tuple[str, ...] = ()) -> Snippet:
    """A snippet of the kind the client registers servers by (its table row: a command or a file)."""
    return Snippet(client, form, BY_NAME[client].mcp.kind, path, text, where, notes)


def _command(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def _json(document: object) -> str:
    return json.dumps(document, indent=2) + "\n"


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _toml_inline(table: Mapping[str, str]) -> str:
    return "{ " + ", ".join(f"{_toml_string(k)} = {_toml_string(v)}" for k, v in table.items()) + " }"


def _toml_array(values: Sequence[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def _bearer(client: str) -> str:
    """The Authorization header's value, naming $CALLBOARD_TOKEN in the client's own syntax."""
    return f"Bearer {BY_NAME[client].mcp.token_ref}"


def _token_note(client: str, how: str) -> str:
    return f"set {TOKEN_ENV} to your hub token where {client} starts: it reads it from there ({how})."


def _claude_stdio(name: str, command: list[str], env: dict[str, str]) -> Snippet:
    scope = "local" if env else "user"
    argv = ["claude", "mcp", "add", name, "--scope", scope]
    for key, value in env.items():
        argv += ["-e", f"{key}={value}"]
    argv += ["--", *command]
    where = _claude_where(scope)
    return _snippet("claude", "stdio", None, _command(argv) + "\n", where)


def _claude_http(name: str, url: str, headers: dict[str, str]) -> Snippet:
    scope = "local" if headers else "user"
    argv = ["claude", "mcp", "add", "--transport", "http", "--scope", scope, name, url]
    for key, value in {"Authorization": _bearer("claude"), **headers}.items():
        argv += ["--header", f"{key}: {value}"]
    notes = (_token_note("claude", "${" + TOKEN_ENV + "} in the header"),)
    return _snippet("claude", "http", None, _command(argv) + "\n", _claude_where(scope), notes)


def _claude_where(scope: str) -> str:
    if scope == "user":
        return "run this: it registers the server for every project (in ~/.claude.json)."
    return "run this in the project folder: it registers the server for that project only (in ~/.claude.json)."


def _codex_path(project: bool) -> str:
    return ".codex/config.toml" if project else "~/.codex/config.toml"


def _codex_where(project: bool) -> str:
    if project:
        return "add this to .codex/config.toml in the project (Codex reads it in trusted projects)."
    return "add this to ~/.codex/config.toml (every project)."


# Without these, `codex exec` sends its first request before the server is up (so without our
# tools) and refuses every call of ours ("requires approval, but approval policy is never"):
# the mailbox tools only move mail, so they are approved for this server alone.
_CODEX_SERVING = (
    "required = true",
    "startup_timeout_sec = 60",
    'default_tools_approval_mode = "approve"',
)


def _codex_stdio(name: str, command: list[str], env: dict[str, str]) -> Snippet:
    forwarded = [var for var in CODEX_FORWARDED_ENV if var not in env]
    lines = [
        f"[mcp_servers.{name}]",
        f"command = {_toml_string(command[0])}",
        f"args = {_toml_array(command[1:])}",
        f"env_vars = {_toml_array(forwarded)}",
        *_CODEX_SERVING,
    ]
    if env:
        lines.append(f"env = {_toml_inline(env)}")
    project = bool(env)
    text = "\n".join(lines) + "\n"
    return _snippet("codex", "stdio", _codex_path(project), text, _codex_where(project))


def _codex_http(name: str, url: str, headers: dict[str, str]) -> Snippet:
    lines = [
        f"[mcp_servers.{name}]",
        f"url = {_toml_string(url)}",
        f"bearer_token_env_var = {_toml_string(TOKEN_ENV)}",
        *_CODEX_SERVING,
    ]
    if headers:
        lines.append(f"http_headers = {_toml_inline(headers)}")
    project = bool(headers)
    notes = (_token_note("codex", "bearer_token_env_var"),)
    text = "\n".join(lines) + "\n"
    return _snippet("codex", "http", _codex_path(project), text, _codex_where(project), notes)


_COPILOT_WHERE = "run this: it registers the server for every project (in ~/.copilot/mcp-config.json)."


def _copilot_pinned(agent: str | None) -> tuple[str, ...]:
    if agent is None:
        return ()
    return (f"copilot mcp add registers it for every project: each Copilot session acts as {agent}.",)


def _copilot_stdio(name: str, command: list[str], env: dict[str, str]) -> Snippet:
    argv = ["copilot", "mcp", "add", name]
    for key, value in env.items():
        argv += ["--env", f"{key}={value}"]
    argv += ["--", *command]
    notes = _copilot_pinned(env.get(AGENT_ENV))
    return _snippet("copilot", "stdio", None, _command(argv) + "\n", _COPILOT_WHERE, notes)


def _copilot_http(name: str, url: str, headers: dict[str, str]) -> Snippet:
    argv = ["copilot", "mcp", "add", "--transport", "http", name, url]
    for key, value in {"Authorization": _bearer("copilot"), **headers}.items():
        argv += ["--header", f"{key}: {value}"]
    notes = (_token_note("copilot", "${" + TOKEN_ENV + "} in the header"), *_copilot_pinned(headers.get(AGENT_HEADER)))
    return _snippet("copilot", "http", None, _command(argv) + "\n", _COPILOT_WHERE, notes)


def _cursor_path(project: bool) -> str:
    return ".cursor/mcp.json" if project else "~/.cursor/mcp.json"


def _cursor_where(project: bool) -> str:
    if project:
        return "merge this into .cursor/mcp.json in the project."
    return "merge this into ~/.cursor/mcp.json (every project)."


def _cursor_stdio(name: str, command: list[str], env: dict[str, str]) -> Snippet:
    server = stdio_entry("cursor", command, env)
    project = bool(env)
    text = _json({"mcpServers": {name: server}})
    return _snippet("cursor", "stdio", _cursor_path(project), text, _cursor_where(project))


def _cursor_http(name: str, url: str, headers: dict[str, str]) -> Snippet:
    server = {"url": url, "headers": {"Authorization": _bearer("cursor"), **headers}}
    project = bool(headers)
    notes = (_token_note("cursor", "${env:" + TOKEN_ENV + "} in the header"),)
    text = _json({"mcpServers": {name: server}})
    return _snippet("cursor", "http", _cursor_path(project), text, _cursor_where(project), notes)


def _gemini_where(scope: str) -> str:
    if scope == "user":
        return "run this: it registers the server for every project (in ~/.gemini/settings.json)."
    return "run this in the project folder: it registers the server there (in .gemini/settings.json)."


def _gemini_stdio(name: str, command: list[str], env: dict[str, str]) -> Snippet:
    scope = "project" if env else "user"
    argv = ["gemini", "mcp", "add", "--scope", scope]
    for key, value in env.items():
        argv += ["-e", f"{key}={value}"]
    argv += [name, command[0]]
    args = command[1:]
    if any(arg.startswith("-") for arg in args):
        argv.append("--")  # so that `gemini mcp add` passes `-m …` to the server, not to itself
    argv += args
    return _snippet("gemini", "stdio", None, _command(argv) + "\n", _gemini_where(scope))


def _gemini_http(name: str, url: str, headers: dict[str, str]) -> Snippet:
    scope = "project" if headers else "user"
    argv = ["gemini", "mcp", "add", "--scope", scope, "--transport", "http"]
    for key, value in {"Authorization": _bearer("gemini"), **headers}.items():
        argv += ["--header", f"{key}: {value}"]
    argv += [name, url]
    notes = (_token_note("gemini", "${" + TOKEN_ENV + "} in settings.json"),)
    return _snippet("gemini", "http", None, _command(argv) + "\n", _gemini_where(scope), notes)


_STDIO = {
    "claude": _claude_stdio,
    "codex": _codex_stdio,
    "copilot": _copilot_stdio,
    "cursor": _cursor_stdio,
    "gemini": _gemini_stdio,
}
_HTTP = {
    "claude": _claude_http,
    "codex": _codex_http,
    "copilot": _copilot_http,
    "cursor": _cursor_http,
    "gemini": _gemini_http,
}
