"""mcp-config CLIENT: the exact command or snippet that registers the MCP server with an agent CLI."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from callboard.address import parse_name
from callboard.cli import render
from callboard.cli.app import JsonOption, app
from callboard.config import Settings
from callboard.errors import BadRequest, NoIdentity
from callboard.identity import resolve_agent
from callboard.integrations.agent_clis import MCP_CLIENTS
from callboard.integrations.mcp_registration import (
    Snippet,
    client_name,
    http_snippet,
    mcp_url,
    stdio_snippet,
)

SCRIPT = "callboard"


def server_command() -> list[str]:
    """How an agent CLI starts ``callboard mcp`` without this environment's PATH: the absolute
    path of the installed script (the one running, or the one beside this Python), else this
    Python with ``-m callboard``."""
    running = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if running is not None and running.name in (SCRIPT, f"{SCRIPT}.exe") and running.is_file():
        return [os.path.abspath(running), "mcp"]
    beside = shutil.which(SCRIPT, path=str(Path(sys.executable).parent))
    found = beside or shutil.which(SCRIPT)
    if found:
        return [os.path.abspath(found), "mcp"]
    return [os.path.abspath(sys.executable), "-m", "callboard", "mcp"]


def _http_agent(agent: str | None, settings: Settings) -> tuple[str | None, str | None]:
    """The agent the HTTP form names in its header, and a note on why (or why none)."""
    if agent is not None:
        return agent, None
    try:
        identity = resolve_agent(os.environ, Path.cwd(), settings.agent)
    except NoIdentity:
        return None, (
            "no agent header: fine with an agent token; a workspace user token needs one, so add --agent NAME."
        )
    return identity.name, (
        f"acts as agent {identity.name} (named by {identity.source}); --agent NAME names another, "
        "and with an agent token it must be that token's agent."
    )


@app.command("mcp-config")
def mcp_config(
    client: Annotated[str, typer.Argument(help=f"The agent CLI: {', '.join(MCP_CLIENTS)}.", show_default=False)],
    http: Annotated[
        bool, typer.Option("--http", help="Use the hub's /mcp endpoint over HTTP instead of a stdio child.")
    ] = False,
    url: Annotated[
        Optional[str],
        typer.Option("--url", help="The hub for --http (implies it; default: the hub this machine is logged in to)."),
    ] = None,
    agent: Annotated[
        Optional[str],
        typer.Option(
            "--agent",
            help="The agent to act as (stdio: pinned in the server's environment; http: the "
            "X-Callboard-Agent header). Default: the identity rule (stdio: where the server runs; http: here).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print the command to run, or the snippet to paste, to register Callboard's MCP server."""
    name = client_name(client)
    if agent is not None:
        agent = parse_name(agent, "agent name")
    notes: list[str] = []
    if http or url is not None:
        settings = Settings.load()
        # Logged in to several replicas: the agent CLI is pointed at the first (it takes one URL).
        hub = url if url is not None else next(iter(settings.hub_urls), None)
        if not hub:
            raise BadRequest(
                "--http needs a hub and this machine is not logged in to one: "
                "run 'callboard login URL' (it asks for the token), or pass --url URL."
            )
        header_agent, why = _http_agent(agent, settings)
        snippet: Snippet = http_snippet(name, mcp_url(hub), header_agent)
        notes += [why] if why else []
    else:
        snippet = stdio_snippet(name, server_command(), agent)
    if as_json:
        render.emit(snippet.to_dict(), as_json, lambda: None)
        return
    sys.stdout.write(snippet.text)  # plain: the text is pasted or piped as it is
    sys.stdout.flush()
    for line in (snippet.where, *snippet.notes, *notes):
        sys.stderr.write(f"# {line}\n")
