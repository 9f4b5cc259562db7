"""audit: the workspace's record of actions with large effects, for the persons who run it."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, app, open_client
from callboard.model import AuditEntry


@app.command()
def audit(
    limit: Annotated[int, typer.Option("--limit", metavar="N", help="How many records, newest first.")] = 50,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Who deleted agents, created invite-only channels, and added or removed members, newest
    first (a person's credential: an agent token is refused)."""
    with open_client(db) as client:
        entries = client.audit_trail(limit=limit)

    def human() -> None:
        grid = render.table("when", "who", "credential", "action", "target", "detail")
        for entry in entries:
            grid.add_row(
                render.when(entry.at),
                render.peer(entry.actor),
                render.peer(_credential(entry)),
                render.peer(entry.action),
                render.peer(entry.target),
                render.peer(json.dumps(entry.detail, separators=(", ", ": ")) if entry.detail else ""),
            )
        render.console.print(grid)

    render.emit(entries, as_json, human)


def _credential(entry: AuditEntry) -> str:
    if entry.token_kind is None:
        return "local store"
    return f"{entry.token_kind} token {entry.token_id}" if entry.token_id else f"{entry.token_kind} token"
