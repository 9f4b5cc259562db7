"""install / uninstall CLIENT: put the mailbox into an agent CLI's own settings, and take it out.

The plan (which files, which entries) is ``integrations.install_plans``; the merging, backups
and exact removal are ``integrations.installer``. This module only gathers the inputs and
prints the outcome.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from callboard.cli import render
from callboard.cli.app import JsonOption, app
from callboard.cli.mcp_config import server_command
from callboard.config import Settings, home_dir
from callboard.identity import find_git_root
from callboard.integrations import git_guard
from callboard.integrations.install import install_plans
from callboard.integrations.install.installer import Report, install, uninstall

# The CLIs ``install`` puts the mailbox into: every one that takes an MCP server (agent_clis, the one table).
# And the git guard (``integrations/git_guard``): a repository's pre-commit hook asking lease check.
GIT_GUARD = "git-guard"
Client = StrEnum("Client", {name: name for name in [*install_plans.CLIENTS, GIT_GUARD]})  # type: ignore[misc]  # members from the table: mypy cannot list them


class Scope(StrEnum):
    user = "user"
    project = "project"


ClientArgument = Annotated[
    Client,
    typer.Argument(
        case_sensitive=False,
        help=f"The agent CLI: {', '.join(install_plans.CLIENTS)}; or {GIT_GUARD}, this repository's lease check.",
        show_default=False,
    ),
]
ScopeOption = Annotated[
    Scope,
    typer.Option(
        "--scope",
        case_sensitive=False,
        help="user: your own settings, for every project; project: the settings of this git repository (or folder).",
    ),
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print the diff of every file that would change; write nothing.")
]


def _project() -> Path:
    """The folder project scope writes to: the git root of the working folder (the same rule
    that names the agent), else the working folder."""
    cwd = Path.cwd()
    return find_git_root(cwd) or cwd


def _tool_names() -> list[str]:
    """The mailbox's MCP tool names, from the tool set itself (so a new tool is allowed too)."""
    import anyio

    from callboard.mcp.tools import mailbox_server, one_client

    server = mailbox_server(one_client(None))  # type: ignore[arg-type]  # never called: only listed
    return [tool.name for tool in anyio.run(server.list_tools)]


def _secrets() -> list[str]:
    """Tokens that must never end up in another program's settings."""
    found = [Settings.load().token or "", os.environ.get("CALLBOARD_TOKEN", "").strip()]
    return [secret for secret in found if secret]


@app.command("install")
def install_command(
    client: ClientArgument,
    scope: ScopeOption = Scope.user,
    dry_run: DryRunOption = False,
    warn: Annotated[bool, typer.Option("--warn", help="git-guard: warn about leased files, never refuse.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Set up an agent CLI so the mailbox reaches its sessions: MCP server, hooks (and for Claude
    Code the wake-up hook, tool permissions and /inbox; Cursor gets the MCP server only). Merges
    into your settings; undo with 'callboard uninstall CLIENT'. --scope project writes files a team
    can commit: they run 'callboard' from each teammate's PATH. 'install git-guard' adds a
    pre-commit check of the staged files against other agents' leases (an existing hook runs first)."""
    if client.value == GIT_GUARD:
        _guard(git_guard.install(Path.cwd(), server_command()[:-1], warn=warn), as_json)
        return
    # The hooks' shell finds Callboard's home in CALLBOARD_HOME, or else where it is by default.
    folders = install_plans.Folders(home=Path.home(), project=_project(), env=os.environ, callboard_home=home_dir({}))
    callboard = server_command()[:-1]  # the command that runs callboard, without "mcp"
    plan = install_plans.plan(client.value, scope.value, folders, callboard, _tool_names())
    report = install(plan, home_dir(os.environ), dry_run=dry_run, secrets=_secrets())
    _print(report, "install", as_json)


@app.command("uninstall")
def uninstall_command(
    client: ClientArgument,
    scope: ScopeOption = Scope.user,
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
) -> None:
    """Take out what 'callboard install CLIENT' added: a file still as it left it is restored
    byte for byte; in one you changed since, only Callboard's entries are removed."""
    if client.value == GIT_GUARD:
        _guard(git_guard.uninstall(Path.cwd()), as_json)
        return
    project = _project() if scope is Scope.project else None
    report = uninstall(client.value, scope.value, project, home_dir(os.environ), dry_run=dry_run)
    _print(report, "uninstall", as_json)


def _guard(report: git_guard.GuardReport, as_json: bool) -> None:
    document = {
        "client": GIT_GUARD,
        "hook": str(report.hook),
        "action": report.action,
        "chained": str(report.chained) if report.chained else None,
    }
    chained = (
        f" (the hook that was there runs first: {report.chained})"
        if report.chained and report.action != "removed"
        else ""
    )
    render.emit(
        document, as_json, lambda: render.console.print(f"git-guard {report.action}: {_label(report.hook)}{chained}")
    )


def _label(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home) :] if home != os.sep and text.startswith(home + os.sep) else text


def _print(report: Report, command: str, as_json: bool) -> None:
    document = {
        "command": command,
        "client": report.client,
        "scope": report.scope,
        "project": str(report.project) if report.project else None,
        "dry_run": report.dry_run,
        "installed": report.installed,
        "files": [
            {"path": str(change.path), "action": change.action, "changed": change.changed}
            | ({"diff": change.diff(str(change.path))} if report.dry_run else {})
            for change in report.changes
        ],
        "changed": [str(change.path) for change in report.changes if change.changed],
        "notes": report.notes,
    }
    render.emit(document, as_json, lambda: _human(report, command))


def _human(report: Report, command: str) -> None:
    where = f"project {report.project}" if report.project else "user scope"
    out = sys.stdout
    if report.dry_run:
        diffs = [change.diff(_label(change.path)) for change in report.changes if change.changed]
        out.write("".join(diffs))
        count = len(diffs)
        out.write(
            f"dry run: {command} {report.client} ({where}) would change {count} file{'s' * (count != 1)}; nothing written.\n"
        )
    elif report.changes:
        verb = "installed for" if command == "install" else "uninstalled from"
        out.write(f"Callboard {verb} {report.client} ({where}):\n")
        for change in report.changes:
            out.write(f"  {change.action:<10} {_label(change.path)}\n")
    for note in report.notes:
        out.write(f"note: {note}\n")
