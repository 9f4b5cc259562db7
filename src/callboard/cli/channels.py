"""channel …: create, join, leave, invite, remove, list, members, post."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, app, open_client
from callboard.cli.messaging import emit_sent
from callboard.model import Channel
from callboard.requests import SendRequest

channel_app = typer.Typer(help="Channels: #name with members; a post reaches every member once.", no_args_is_help=True)
app.add_typer(channel_app, name="channel")

ChannelArgument = Annotated[str, typer.Argument(help="The channel, with or without '#'.")]


def _print_channel(channel: Channel, verb: str) -> None:
    render.console.print(f"{verb} #{render.peer(channel.name)}  [dim]{render.counted(channel.members, 'member')}[/]")


@channel_app.command("create")
def channel_create(
    name: ChannelArgument,
    description: Annotated[Optional[str], typer.Option("--description", "-d", help="What the channel is for.")] = None,
    invite_only: Annotated[
        bool,
        typer.Option("--invite-only", help="Members are added by you or a person ('channel invite'), none join."),
    ] = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Create a channel; you are its first member."""
    with open_client(db) as client:
        channel = client.create_channel(name, description, invite_only=invite_only)
    render.emit(channel, as_json, lambda: _print_channel(channel, "created"))


@channel_app.command("join")
def channel_join(name: ChannelArgument, as_json: JsonOption = False, db: DbOption = None) -> None:
    """Join a channel: its posts reach your mailbox from now on."""
    with open_client(db) as client:
        channel = client.join_channel(name)
    render.emit(channel, as_json, lambda: _print_channel(channel, "joined"))


@channel_app.command("leave")
def channel_leave(name: ChannelArgument, as_json: JsonOption = False, db: DbOption = None) -> None:
    """Leave a channel."""
    with open_client(db) as client:
        channel = client.leave_channel(name)
    render.emit(channel, as_json, lambda: _print_channel(channel, "left"))


@channel_app.command("invite")
def channel_invite(
    name: ChannelArgument,
    agents: Annotated[list[str], typer.Argument(help="The agents to add (they must exist).")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Add agents to a channel (the channel's creator, or a person's token); recorded in the audit trail."""
    with open_client(db) as client:
        channel = client.invite_to_channel(name, agents)
    render.emit(channel, as_json, lambda: _print_channel(channel, f"added {render.peer(', '.join(agents))} to"))


@channel_app.command("remove")
def channel_remove(
    name: ChannelArgument,
    agent: Annotated[str, typer.Argument(help="The member to take out.")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Take a member out of a channel (the channel's creator, or a person's token); recorded."""
    with open_client(db) as client:
        channel = client.remove_from_channel(name, agent)
    render.emit(channel, as_json, lambda: _print_channel(channel, f"removed {render.peer(agent)} from"))


@channel_app.command("list")
def channel_list(as_json: JsonOption = False, db: DbOption = None) -> None:
    """Every channel of the workspace, whether you are in it, and whether it is invite-only."""
    with open_client(db) as client:
        channels = client.list_channels()

    def human() -> None:
        grid = render.table("channel", "members", "joined", "access", "description")
        for channel in channels:
            grid.add_row(
                f"#{render.peer(channel.name)}",
                str(channel.members),
                "yes" if channel.joined else "",
                "invite-only" if channel.invite_only else "open",
                render.peer(channel.description or ""),
            )
        render.console.print(grid)

    render.emit(channels, as_json, human)


@channel_app.command("members")
def channel_members(name: ChannelArgument, as_json: JsonOption = False, db: DbOption = None) -> None:
    """Who is in a channel."""
    with open_client(db) as client:
        members = client.channel_members(name)

    def human() -> None:
        grid = render.table("member", "joined")
        for member in members:
            grid.add_row(render.peer(member.agent), render.when(member.joined_at))
        render.console.print(grid)

    render.emit(members, as_json, human)


@channel_app.command("post")
def channel_post(
    name: ChannelArgument,
    message: Annotated[str, typer.Argument(help="The message text.")],
    subject: Annotated[Optional[str], typer.Option("--subject", "-s", help="A short subject line.")] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Post to a channel you are in (the same as 'send #NAME MESSAGE')."""
    with open_client(db) as client:
        result = client.send(SendRequest(to=f"#{name.lstrip('#')}", text=message, subject=subject))
    emit_sent(result, as_json)
