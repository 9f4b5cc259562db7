"""The typer application, its shared options, and how a command gets its Client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Optional

import typer
import typer.core

from callboard.cli.waiting import note
from callboard.client.background import RemotePumping
from callboard.client.base import Client
from callboard.client.opening import admin_client
from callboard.client.opening import open_client as client_for
from callboard.config import Settings
from callboard.remotes import OutsideCard
from callboard.service.door import Service

app = typer.Typer(
    name="callboard",
    help="A durable mailbox for AI agents: direct messages, #channels, threads and truthful delivery.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command and group inherits it
)


def version_line() -> str:
    """What ``callboard --version`` prints."""
    from callboard import __version__

    return f"callboard {__version__}"


def _print_version(asked: bool) -> None:
    if asked:
        print(version_line())
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the version and exit.", is_eager=True, callback=_print_version),
    ] = False,
) -> None:
    # ``callboard --version`` alone is answered before typer loads (cli/main.py); this option is
    # what ``--help`` lists, and what answers it after other options.
    """A durable mailbox for AI agents: direct messages, #channels, threads and truthful delivery."""


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

    An agent's client injects what it sends into this machine's Claude Code sessions that no
    Callboard process serves (``ClaudeCodeInjector``, its step after each send): handed in here,
    once, for every command."""
    settings = Settings.load(db=db)
    if as_admin:
        client: Client = admin_client(settings)
    else:
        from callboard.integrations.claude_code.injecting import ClaudeCodeInjector  # what only a send needs

        client = client_for(settings, card_source=_card_source, on_wait=note, remote_pumping=REMOTE_PUMPING)
        client.after_send = ClaudeCodeInjector(settings=settings)
    try:
        yield client
    finally:
        client.close()


class _NamedArgument(typer.core.TyperArgument):
    """An argument as help shows it: its name (``TO``), and its choices when it has them, never its
    Python type; ``[NAME]`` when it may be left out."""

    def display_type_rich(self, ctx: typer.Context) -> str | None:  # type: ignore[override]  # typer's parameter names its private click's Context; typer.Context is what comes
        return super().display_type_rich(ctx) if self.type_descriptor.is_choice else None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


def plain_metavars(command: Any) -> Any:
    """Name every value in ``command``'s help (a group: every command in it) by what it is, never
    by its Python type (typer writes ``<str>``, ``<int>``, ``<float>``, ``<path>``): an option with
    no metavar of its own is named after itself (``--port PORT``) unless it shows its choices; an
    argument by its name. tests/cli/test_help.py reads every command's help for a type name."""
    for sub in getattr(command, "commands", {}).values():
        plain_metavars(sub)
    for param in getattr(command, "params", ()):
        if isinstance(param, typer.core.TyperArgument):
            param.metavar = param.metavar or (param.name or "value").upper()
            param.__class__ = _NamedArgument
        elif isinstance(param, typer.core.TyperOption) and param.metavar is None and not param.is_flag:
            if not param.type_descriptor.is_choice:
                param.metavar = (param.name or "value").upper()
    return command


def _start_pump(service: Service) -> Callable[[float], None]:
    from callboard.a2a.remote.pump import start_thread  # the A2A SDK loads only once a row is sent

    return start_thread(service)


def _send_now(service: Service, workspace: str, message_id: str, seconds: float) -> None:
    from callboard.a2a.remote.pump import send_now

    send_now(service, workspace, message_id, seconds)


# How a client on the embedded store sends mail to outside A2A agents (client/background.py).
REMOTE_PUMPING = RemotePumping(start=_start_pump, send_now=_send_now)


def _card_source(url: str, token: str | None) -> OutsideCard:
    """Fetch an outside A2A agent's card (the A2A SDK is loaded only when one is fetched)."""
    from callboard.a2a.remote.card import card_source

    return card_source(url, token)
