"""whoami, who, agent …, session …, workspace …: who is out there."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Optional

import typer

from callboard.cli import render
from callboard.cli.app import AsAdminOption, DbOption, JsonOption, app, open_client
from callboard.client.session_keeper import HEARTBEAT_SECONDS, SessionKeeper
from callboard.config import Settings
from callboard.errors import BadRequest
from callboard.identity import acting_parent, terminal_of
from callboard.integrations.claude_code import sessions as claude_sessions
from callboard.model import Agent

agent_app = typer.Typer(help="Create, list, describe and delete agents.", no_args_is_help=True)
session_app = typer.Typer(
    help="Register this process (or another) as a live session of your agent.", no_args_is_help=True
)
workspace_app = typer.Typer(help="List workspaces (set CALLBOARD_WORKSPACE to act in another).", no_args_is_help=True)
app.add_typer(agent_app, name="agent")
app.add_typer(session_app, name="session")
app.add_typer(workspace_app, name="workspace")


@app.command()
def whoami(as_json: JsonOption = False, db: DbOption = None) -> None:
    """Which agent you act as, and why (the identity rule that named it)."""
    with open_client(db) as client:
        me = client.whoami()
    note = Settings.load(db=db).login_note  # the login's hub was this machine's 'up', now gone

    def human() -> None:
        render.console.print(
            f"[bold]{render.peer(me.agent)}[/] in workspace {render.peer(me.workspace)} on {render.peer(me.machine)}\n"
            f"[dim]named by {render.peer(me.source)} · store {render.peer(me.store)}[/]"
        )
        if note:
            render.console.print(f"[dim]{render.peer(note)}[/]")

    render.emit(me, as_json, human)


@app.command()
def who(
    address: Annotated[
        Optional[str],
        typer.Argument(
            help="An agent address (name, name@machine, name@machine#pid): can it be reached now, and if not, why."
        ),
    ] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Agents, their sessions (live or not) and machines (up or down); and this machine's live
    Claude Code sessions, whether or not they run callboard. With an ADDRESS: whether it can
    be reached now, or plainly why not (unknown agent, no live session, machine down since …,
    delivery path broken)."""
    if address is not None:
        with open_client(db) as client:
            found = client.reach(address)
        render.emit(found, as_json, lambda: render.reach(found))
        return
    with open_client(db) as client:
        report = client.who()
    claude = claude_sessions.live_sessions()

    def human() -> None:
        grid = render.table("agent", "live", "unread", "sessions")
        for agent in report.agents:
            sessions = ", ".join(render.session_line(s) for s in agent.sessions)
            unread = str(agent.unread) + (f" [magenta]({len(agent.held)} held)[/]" if agent.held else "")
            live = "[cyan]remote[/]" if agent.remote else "[green]yes[/]" if agent.live else "[dim]no[/]"
            where = f"[dim]A2A {render.peer(agent.remote)}[/]" if agent.remote else sessions or "[dim]-[/]"
            grid.add_row(render.peer(agent.name), live, unread, where)
        render.console.print(grid)
        for agent in report.agents:
            for held in agent.held:
                render.console.print(render.held_line(f"{agent.name} ← {held.sender} ({held.message_id})", held))
        for agent in report.agents:
            for lease in agent.leases:
                render.console.print(f"{render.peer(agent.name)} [yellow]leases[/] {render.peer(lease)}")
        if report.machines:
            render.console.print()
            machines = render.table("machine", "state", "last seen")
            for machine in report.machines:
                machines.add_row(
                    render.peer(machine.name),
                    "[green]up[/]" if machine.up else "[red]down[/]",
                    render.when(machine.last_seen),
                )
            render.console.print(machines)
        if claude:
            render.console.print()
            render.claude_sessions(claude)
        if report.replica:
            render.console.print(f"[dim]answered by hub replica {render.peer(report.replica)}[/]")

    render.emit({**render.jsonable(report), "claude_code_sessions": render.jsonable(claude)}, as_json, human)


class ExportFormat(StrEnum):
    oasf = "oasf"


def _print_agent(agent: Agent) -> None:
    render.console.print(
        f"[bold]{render.peer(agent.name)}[/]  "
        f"[dim]workspace {render.peer(agent.workspace)}, since {render.when(agent.created_at)}[/]"
    )
    if agent.description:  # the agent's own words about itself: its lines kept, nothing more
        render.console.print(render.peer(agent.description, lines=True))
    if agent.skills:
        render.console.print("skills: " + ", ".join(render.peer(s) for s in agent.skills))


TerminalOption = Annotated[
    Optional[str],
    typer.Option(
        "--terminal",
        metavar="LABEL",
        help="The terminal window or pane it runs in (default: told from the environment).",
    ),
]
DescriptionOption = Annotated[Optional[str], typer.Option("--description", "-d", help="What this agent does.")]
SkillOption = Annotated[list[str], typer.Option("--skill", help="A skill it offers (repeatable).")]


@agent_app.command("list")
def agent_list(
    skill: Annotated[
        Optional[str], typer.Option("--skill", help="Only agents offering this skill (its whole name, case aside).")
    ] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """All agents of the workspace, or those offering a skill."""
    with open_client(db) as client:
        agents = client.list_agents(skill=skill)

    def human() -> None:
        grid = render.table("agent", "description", "skills")
        for agent in agents:
            name = render.peer(agent.name) + (" [cyan](remote)[/]" if agent.remote else "")
            grid.add_row(name, render.peer(agent.description or ""), ", ".join(render.peer(s) for s in agent.skills))
        render.console.print(grid)

    render.emit(agents, as_json, human)


@agent_app.command("export")
def agent_export(
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", metavar="FILE", help="Write the document to this file (default: print it)."),
    ] = None,
    export_format: Annotated[
        ExportFormat, typer.Option("--format", help="The records' format: oasf (the AGNTCY directory's).")
    ] = ExportFormat.oasf,
    base_url: Annotated[
        Optional[str],
        typer.Option(
            "--base-url",
            metavar="URL",
            help="The hub's public address for the agents' A2A cards (default: as the hub this machine uses serves "
            "them).",
        ),
    ] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Write this workspace's agents as OASF records (one JSON document) that another directory
    can import: name, description, skills, and each agent's A2A card and where it is. The document
    goes to standard output (it is JSON, --json or not) or to --output FILE."""
    from callboard.a2a.server.cards import build_card, card_document  # the A2A SDK loads only for this command
    from callboard.cli import oasf
    from callboard.cli.cards import DEFAULT_HUB_URL, card_of

    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise BadRequest(f"--base-url {base_url!r} is not a hub address: use http://HOST:PORT or https://HOST.")
    notes: set[str] = set()
    with open_client(db) as client:
        agents = client.list_agents()
        cards = {}
        for agent in agents:
            if base_url is not None:
                cards[agent.name] = card_document(build_card(agent, base_url))
                continue
            cards[agent.name], note = card_of(client, agent.name)  # as the hub serves it
            notes.update([note] if note else [])
    # The hub's address as its cards name it (its --public-url, or the address this machine uses).
    base = base_url or next((c["provider"]["url"] for c in cards.values() if c.get("provider")), DEFAULT_HUB_URL)
    document = oasf.export_document(agents, cards, base_url=base)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if output is not None:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as error:
            raise BadRequest(
                f"cannot write {output}: {error.strerror or error}; name a file in a folder you can write."
            ) from None
    for note in notes:  # once the document is out: a failure is then its one line alone
        render.err_console.print(render.peer(note))
    if output is None:
        sys.stdout.write(text)
        return
    written = {"output": str(output), "format": export_format.value, "records": len(agents)}
    render.emit(
        written,
        as_json,
        lambda: render.console.print(
            f"wrote {len(agents)} record{'s' if len(agents) != 1 else ''} to {render.peer(output)}"
        ),
    )


@agent_app.command("create")
def agent_create(
    name: Annotated[str, typer.Argument(help="The new agent's name.")],
    description: DescriptionOption = None,
    skill: SkillOption = [],  # noqa: B006
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Create an agent (agents are also created when they first act or are first messaged)."""
    with open_client(db) as client:
        agent = client.create_agent(name, description, skill)
    render.emit(agent, as_json, lambda: _print_agent(agent))


@agent_app.command("describe")
def agent_describe(
    name: Annotated[str, typer.Argument(help="The agent to show (or change).")],
    description: DescriptionOption = None,
    skill: Annotated[Optional[list[str]], typer.Option("--skill", help="Replace its skills (repeatable).")] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Show an agent; with --description or --skill, change its card first."""
    with open_client(db) as client:
        if description is not None or skill:
            agent = client.update_agent(name, description, skill)
        else:
            agent = client.describe_agent(name)
    render.emit(agent, as_json, lambda: _print_agent(agent))


@agent_app.command("delete")
def agent_delete(
    name: Annotated[str, typer.Argument(help="The agent to delete, with its mailbox.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Delete it even while its mailbox holds unread mail (that mail is lost).")
    ] = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Delete an agent, its mailbox, memberships and sessions (messages it sent stay); refused
    while it has unread mail unless --force. Recorded in the audit trail ('callboard audit')."""
    with open_client(db) as client:
        if not yes:
            client.describe_agent(name)  # no such agent: unknown_agent, not a mailbox to confirm erasing
            if not sys.stdin.isatty():
                raise BadRequest(f"deleting {name} erases its mailbox: pass --yes to confirm.")
            typer.confirm(f"Delete agent {name} and its mailbox?", abort=True)
        deleted = client.delete_agent(name, force=force)
    dropped = f" (dropped {deleted.unread_dropped} unread)" if deleted.unread_dropped else ""
    render.emit(
        deleted, as_json, lambda: render.console.print(f"deleted agent {render.peer(deleted.deleted)}{dropped}")
    )


@session_app.command("start")
def session_start(
    runtime: Annotated[
        str, typer.Option("--runtime", help="What runs the session (claude-code, codex, script…).")
    ] = "script",
    pid: Annotated[
        Optional[int],
        typer.Option("--pid", help="The session's process id (default: the process that ran this command)."),
    ] = None,
    terminal: TerminalOption = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Register a live session; it stays live while its process runs and it reports in."""
    pid = acting_parent() if pid is None else pid  # the shell or CLI that ran it (also when served warm)
    with open_client(db) as client:
        session = client.register_session(runtime=runtime, pid=pid, terminal=terminal or terminal_of(os.environ, pid))
    render.emit(
        session,
        as_json,
        lambda: render.console.print(
            f"{render.peer(session.id)}  {render.peer(session.address)} ({render.peer(session.runtime)})"
        ),
    )


@session_app.command("keep")
def session_keep(
    pid: Annotated[int, typer.Option("--pid", help="The process whose session this is: kept while it runs.")],
    runtime: Annotated[str, typer.Option("--runtime", help="What runs the session (codex, script…).")] = "script",
    every: Annotated[
        float,
        typer.Option(
            "--every", metavar="SECONDS", help="Report every SECONDS (keep it well inside the hub's liveness window)."
        ),
    ] = HEARTBEAT_SECONDS,
    terminal: TerminalOption = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Register a session for a running process and keep it live while that process runs: report
    every --every seconds (riding out a hub that is away for a while), end it when the process
    exits or this command is stopped. Prints the session (one JSON line with --json) once registered."""
    if every <= 0:
        raise BadRequest("--every must be more than 0 seconds.")
    with open_client(db) as client:
        keeper = SessionKeeper(
            client, lambda: None, parent=pid, every=every, terminal=terminal or terminal_of(os.environ, pid)
        )
        keeper.start(runtime=runtime)
        if keeper.session is None:
            raise BadRequest(f"process {pid} is not running, or its session could not be registered; see above.")
        session = keeper.session
        if as_json:  # one line, so that a program reading it need not wait for the command to end
            print(session.model_dump_json(), flush=True)
        else:
            render.console.print(f"{render.peer(session.id)}  {render.peer(session.address)} (kept while {pid} runs)")
            sys.stdout.flush()
        stopped = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stopped.set())
        while not stopped.wait(0.2) and keeper.running:
            pass
        keeper.stop()


@session_app.command("heartbeat")
def session_heartbeat(
    session_id: Annotated[str, typer.Argument(help="The id 'session start' printed.")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Report that a session is still there."""
    with open_client(db) as client:
        session = client.heartbeat(session_id)
    render.emit(
        session,
        as_json,
        lambda: render.console.print(f"{render.peer(session.address)} {'live' if session.live else 'not live'}"),
    )


@session_app.command("end")
def session_end(
    session_id: Annotated[str, typer.Argument(help="The id 'session start' printed.")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """End a session: it is no longer live."""
    with open_client(db) as client:
        session = client.end_session(session_id)
    render.emit(session, as_json, lambda: render.console.print(f"ended {render.peer(session.address)}"))


@workspace_app.command("list")
def workspace_list(as_json: JsonOption = False, as_admin: AsAdminOption = False, db: DbOption = None) -> None:
    """The workspaces you may see: the store's, or through a hub your token's (every one --as-admin)."""
    with open_client(db, as_admin=as_admin) as client:
        workspaces = client.list_workspaces()

    def human() -> None:
        for workspace in workspaces:
            render.console.print(render.peer(workspace.name))

    render.emit(workspaces, as_json, human)


@agent_app.command("card")
def agent_card(
    name: Annotated[str, typer.Argument(help="The agent whose A2A card to print.")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """The agent's A2A card, as the hub serves it to outside A2A clients."""
    from callboard.cli.cards import card_of, print_card  # the A2A SDK loads only for this command

    with open_client(db) as client:
        document, note = card_of(client, name)
    if note:
        render.err_console.print(render.peer(note))
    render.emit(document, as_json, lambda: print_card(document))
