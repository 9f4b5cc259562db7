"""The typer application, its shared options, and how a command gets its Client."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer

from switchboard.client import Client, LocalClient
from switchboard.config import Settings

app = typer.Typer(
    name="switchboard",
    help="A durable mailbox for AI agents: direct messages, #channels, threads and truthful delivery.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")]
DbOption = Annotated[
    Optional[Path],
    typer.Option(
        "--db",
        envvar="SWITCHBOARD_DB",
        help="The embedded database file (default: switchboard.db in SWITCHBOARD_HOME).",
        show_envvar=True,
    ),
]


@contextmanager
def open_client(db: Path | None) -> Iterator[Client]:
    """The Client for this invocation: the embedded store, acting as the identity rule's agent."""
    client = LocalClient.open(Settings.load(db=db))
    try:
        yield client
    finally:
        client.close()
