"""The typer application, its shared options, and how a command gets its Client."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Optional

import typer

from callboard.client.base import Client
from callboard.client.opening import admin_client
from callboard.client.opening import open_client as client_for
from callboard.config import Settings
from callboard.tasks import OutsideCard

app = typer.Typer(
    name="callboard",
    help="A durable mailbox for AI agents: direct messages, #channels, threads and truthful delivery.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")]
DbOption = Annotated[
    Optional[str],  # a path, or a postgresql:// URL (a Path would fold its '//')
    typer.Option(
        "--db",
        envvar="CALLBOARD_DB",
        help="The database: the embedded file (default: callboard.db in CALLBOARD_HOME), "
        "or a postgresql://user@host/db URL.",
        show_envvar=True,
        metavar="<path or url>",
    ),
]


AsAdminOption = Annotated[
    bool,
    typer.Option(
        "--as-admin",
        help="Use the hub's admin token that the first 'callboard up' kept on this machine (every "
        "workspace), not this machine's login.",
    ),
]


@contextmanager
def open_client(db: str | None, *, as_admin: bool = False) -> Iterator[Client]:
    """The Client for this invocation: the hub this machine is logged in to, or the embedded
    store (always, when a database is named), acting as the identity rule's agent; with
    ``as_admin``, the hub's admin token this machine keeps (``client.admin_client``).

    An agent's client pushes what it sends into this machine's Claude Code sessions that no
    Callboard process serves (``PushingClient``): handed in here, once, for every command."""
    settings = Settings.load(db=db)
    if as_admin:
        client: Client = admin_client(settings)
    else:
        from callboard.integrations.claude_code.pushing import PushingClient  # what only a send needs

        client = PushingClient(client_for(settings, card_source=_card_source), settings=settings)
    try:
        yield client
    finally:
        client.close()


def _card_source(url: str, token: str | None) -> OutsideCard:
    """Fetch an outside A2A agent's card (the A2A SDK is loaded only when one is fetched)."""
    from callboard.a2a.remote_card import card_source

    return card_source(url, token)
