"""import-inbox PATH: bring a folder-per-agent mailbox tree into Callboard, each message once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, app
from callboard.config import Settings
from callboard.integrations.inbox_tree import AgentClients, Imported, ImportReport, Plan, Skipped, import_plan, scan

EXIT_SKIPPED = 2


@app.command("import-inbox")
def import_inbox(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="FOLDER",
            help="The folder holding one subfolder per agent, each with one JSON file per message "
            "(read ones in its .read/).",
            show_default=False,
        ),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be imported; write nothing, contact no mailbox.")
    ] = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Import a folder-per-agent mailbox: each file a message from its sender, stored once however
    often you run it; .read/ ones are marked read. Exits 2 when some files were skipped."""
    planned = scan(path)
    if dry_run:
        render.emit(planned.to_dict(), as_json, lambda: _show_plan(planned))
        skipped = planned.skipped
    else:
        with AgentClients(Settings.load(db=db)) as clients:
            report = import_plan(planned, clients)
        render.emit(report.to_dict(), as_json, lambda: _show_report(report))
        skipped = report.skipped
    if skipped:
        raise typer.Exit(EXIT_SKIPPED)


def _show_plan(planned: Plan) -> None:
    if planned.messages:
        grid = render.table("file", "from", "to", "timestamp", "subject", "", keep_whole=("file",))
        for message in planned.messages:
            grid.add_row(
                render.peer(message.file),
                render.peer(message.sender),
                render.peer(message.recipient),
                render.peer(message.timestamp),
                render.peer(message.subject or ""),
                "[dim]read[/]" if message.read else "",
            )
        render.console.print(grid)
    render.console.print(
        f"dry run: would import {render.counted(len(planned.messages), 'message')}; nothing was written"
        + (f"; {render.counted(len(planned.skipped), 'file')} skipped" if planned.skipped else "")
    )
    _show_skipped(planned.skipped)


def _show_report(report: ImportReport) -> None:
    rows = [(i, "imported") for i in report.imported] + [(i, "already imported") for i in report.already_imported]
    if rows:
        marked = {id(i) for i in report.marked_read}
        grid = render.table("file", "from", "to", "outcome", "id", keep_whole=("file", "id"))
        for item, outcome in sorted(rows, key=lambda row: _order(row[0])):
            read = ", marked read" if id(item) in marked else ""
            grid.add_row(
                render.peer(item.message.file),
                render.peer(item.message.sender),
                render.peer(item.message.recipient),
                f"{outcome}{read}",
                render.peer(item.message_id),
            )
        render.console.print(grid)
    render.console.print(
        f"imported {len(report.imported)}, already imported {len(report.already_imported)}, "
        f"marked read {len(report.marked_read)}, skipped {len(report.skipped)}"
    )
    _show_skipped(report.skipped)


def _order(item: Imported) -> tuple:
    return (item.message.at, Path(item.message.file).name, item.message.file)


def _show_skipped(skipped: list[Skipped]) -> None:
    for one in skipped:
        render.err_console.print(f"skipped {render.peer(one.file)}: {render.peer(one.reason)}")
