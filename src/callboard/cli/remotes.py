"""agent add-remote / remove-remote: outside A2A agents, and a command's wait for its mail to them.

On the embedded store no hub sends mail to outside agents: the client that opened the store does
(``client/background.py``). A CLI ``send`` to one has it sent before it exits (until the remote's
first answer, or a few seconds), and ``status`` of such a message moves it on a moment before it
answers; ``callboard mcp`` keeps sending all the time. Through a hub, the hub does it.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, open_client
from callboard.cli.directory import agent_app
from callboard.cli.waiting import saying_after
from callboard.client.base import Client
from callboard.remotes import RemoteAgent

SEND_WAIT_SECONDS = 5.0  # a send waits this long at most for the remote's first answer
STATUS_WAIT_SECONDS = 2.0


@agent_app.command("add-remote")
def add_remote(
    name: Annotated[str, typer.Argument(help="The name to address it by (send NAME …).")],
    url: Annotated[str, typer.Argument(help="Its URL: where its card is (or the card's own .json URL).")],
    token: Annotated[
        Optional[str], typer.Option("--token", help="A bearer token to send it (kept, never shown again).")
    ] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Register an outside A2A agent by its card: then send, send_message and every face reach
    it by NAME; each message becomes an A2A task, its answers mail from NAME in your thread."""
    with open_client(db) as client, saying_after(f"fetching the agent card at {url} (Ctrl-C stops)"):
        remote = client.add_remote(name, url, token=token)
    render.emit(remote, as_json, lambda: _print_remote(remote))


@agent_app.command("remove-remote")
def remove_remote(
    name: Annotated[str, typer.Argument(help="The outside agent's name.")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Forget an outside A2A agent and its mailbox; what was not yet sent to it fails."""
    with open_client(db) as client:
        remote = client.remove_remote(name)
    render.emit(
        remote, as_json, lambda: render.console.print(f"removed outside agent [bold]{render.peer(remote.name)}[/]")
    )


def _print_remote(remote: RemoteAgent) -> None:
    how = "streams" if remote.streaming else "polled"
    token = ", with a token" if remote.has_token else ""
    render.console.print(f"[bold]{render.peer(remote.name)}[/] → {render.peer(remote.url)}  [dim]({how}{token})[/]")
    if remote.description:  # what its card says of it: the outside agent's own words
        render.console.print(render.peer(remote.description, lines=True))
    render.console.print(f'[dim]send {render.peer(remote.name)} "…": each message becomes an A2A task[/]')


def send_inline(client: Client, message_id: str, seconds: float) -> None:
    """On the embedded store, send mail to outside agents now (this message first) for up to
    ``seconds``; through a hub, nothing (the hub does it)."""
    with saying_after(f"waiting up to {seconds:g} s for the outside agent to take message {message_id}"):
        client.send_to_outside_agents(message_id, seconds)
