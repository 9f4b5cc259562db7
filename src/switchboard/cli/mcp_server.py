"""mcp: the mailbox as MCP tools on stdin/stdout, for the one agent session that started it."""

from __future__ import annotations

from importlib.util import find_spec

from switchboard.cli.app import DbOption, app, open_client


@app.command("mcp")
def mcp_command(db: DbOption = None) -> None:
    """Serve the mailbox as MCP tools over stdio (register it with your agent CLI)."""
    import anyio

    from switchboard.mcp import mailbox_server, one_client  # the MCP SDK loads only for this command

    with open_client(db) as client:
        client.whoami()  # a bad identity or an unreachable hub fails here, on stderr, before any protocol
        server = mailbox_server(one_client(client))
        # uvloop where it is installed (as for the hub): a tool call costs a third less.
        anyio.run(server.run_stdio_async, backend_options={"use_uvloop": find_spec("uvloop") is not None})
