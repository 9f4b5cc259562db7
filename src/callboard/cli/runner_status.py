"""runner status: each runner of the workspace as it last reported itself, from any machine.

Registered on the ``runner`` group of ``cli/runner.py`` (which imports this module). The table
and its words are also what ``team status`` prints (``runner_table``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, open_client
from callboard.cli.render import peer
from callboard.cli.runner import runner_app
from callboard.runners import RunnerReport

if TYPE_CHECKING:
    from rich.table import Table

STATE_STYLE = {
    "starting": "yellow",
    "idle": "green",
    "working": "cyan",
    "sleeping": "blue",
    "crashed": "red",
    "stopping": "yellow",
    "stopped": "dim",
}


@runner_app.command("status")
def status(
    name: Annotated[Optional[str], typer.Argument(help="Only this agent's runners.")] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Runners of the workspace (any machine): state, what each does, its CLI session, turns, tokens, cost."""
    with open_client(db) as client:
        reports = client.list_runners(name)
    render.emit(reports, as_json, lambda: render.console.print(runner_table(reports)))


def runner_table(reports: Sequence[RunnerReport], local: Mapping[str, str] | None = None) -> str | Table:
    """The reports as a table (or a line saying there are none); ``local``: a column of what this
    machine knows of each agent's process (team status)."""
    if not reports:
        return "[dim]no runners have reported in this workspace[/]"
    columns = ["agent", "machine", "state", "doing", "cli", "usage", "restarts", "updated"]
    grid = render.table(*columns, *(["here"] if local is not None else []), keep_whole=())
    for column in grid.columns:  # short facts stay whole; what it does and its CLI wrap instead
        column.no_wrap = column.header in ("agent", "state", "restarts", "updated")
    for report in reports:
        row = [
            peer(report.agent),
            peer(report.machine),
            state_words(report),
            peer(doing(report)),
            peer(report.cli + (f" ({report.cli_session_id})" if report.cli_session_id else "")),
            usage(report),
            str(report.restarts),
            render.when(report.updated_at),
        ]
        grid.add_row(*row, *([peer(local.get(report.agent, "-"))] if local is not None else []))
    return grid


def usage(report: RunnerReport) -> str:
    """Turns, tokens in/out and cost, as the CLI reported them."""
    cost = "" if report.cost_usd is None else f", ${report.cost_usd:.4f}"
    turns = "1 turn" if report.turns == 1 else f"{report.turns} turns"
    return f"{turns}, {report.input_tokens:,}/{report.output_tokens:,} tokens{cost}"


def state_words(report: RunnerReport) -> str:
    if not report.live:  # its runner stopped writing without a last word: killed, or its machine is down
        return f"[red]gone[/] [dim](was {peer(report.state)})[/]"
    return f"[{STATE_STYLE.get(report.state, '')}]{peer(report.state)}[/]"


def doing(report: RunnerReport) -> str:
    """What the runner does, in a few words: on what it works, until when it sleeps, why it crashed."""
    detail = report.detail or ""
    if report.state == "sleeping" and report.sleeping_until is not None:
        until = f"until {render.when(report.sleeping_until)}"
        return f"{until}: {detail}" if detail else until
    if not report.live:
        return f"silent since {render.when(report.updated_at)}" + (f"; {detail}" if detail else "")
    return detail or "-"
