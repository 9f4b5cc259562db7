"""mcp: the mailbox as MCP tools on stdin/stdout, for the one agent session that started it."""

from __future__ import annotations

import gc
import os
from importlib.util import find_spec
from pathlib import Path

from callboard.cli.app import DbOption, app, open_client
from callboard.client.base import Client
from callboard.client.session_keeper import SessionKeeper
from callboard.handoff import Packet
from callboard.identity import terminal_of
from callboard.integrations.agent_clis import runtime_of
from callboard.integrations.claude_code.socket_delivery import SocketInjector
from callboard.integrations.claude_code.transcript_watch import TranscriptWatcher
from callboard.mcp.ending import Ending
from callboard.model import utcnow
from callboard.runner.env import RUNNER_ENV


@app.command("mcp")
def mcp_command(db: DbOption = None) -> None:
    """Serve the mailbox as MCP tools over stdio (register it with your agent CLI).

    While it runs, the agent CLI that started it is a live session of the agent; when that is
    a Claude Code session with a messaging socket, new mail is written into it as it comes."""
    import anyio

    from callboard.mcp.stdio import serve_stdio
    from callboard.mcp.tools import mailbox_server, one_client  # the MCP SDK loads only for this command

    # Before any thread starts (the store's among them): the threads made after it leave the
    # ending signals to the one that waits for them.
    ending = Ending()
    ending.take_signals(parent=os.getppid())
    with open_client(db) as client:
        client.whoami()  # a bad identity or an unreachable hub fails here, on stderr, before any protocol
        # On the embedded store no hub sends mail to outside A2A agents: this process does.
        ending.then(client.run_background())
        # open_client's: a send injects into local sessions; a hand-off reads this session's folder
        server = mailbox_server(one_client(client), packet_of=_packet_here)
        # Under a runner the runner's session is ours (CALLBOARD_SESSION) and the runner feeds
        # the mail as turns: a session, a injector or a watcher of our own would race it.
        if not os.environ.get(RUNNER_ENV):
            _keep_session(client, ending)
        settle_collector()
        try:
            # uvloop where it is installed (as for the hub): a tool call costs a third less.
            anyio.run(
                serve_stdio,
                server,
                lambda: ending.begin("stdin closed"),
                backend_options={"use_uvloop": find_spec("uvloop") is not None},
            )
        finally:
            ending.end_here()


def _keep_session(client: Client, ending: Ending) -> None:
    """Register the agent CLI that started us as a session, and deliver into it while it lives."""
    # The agent CLI that started us is the session; when it dies, so do we.
    # Claude Code gave us its session's messaging socket: inject new mail into the session.
    injector = SocketInjector.for_this_process(client)
    # Mail handed to the session (socket frames, waiter wakes) is surfaced once its
    # transcript shows the turn that carried it to the model.
    watcher = TranscriptWatcher.for_this_process(client)
    keeper = SessionKeeper(
        client,
        on_parent_gone=lambda: ending.begin("parent gone"),
        terminal=terminal_of(os.environ, os.getppid()),
        delivery_problem=(lambda: injector.problem) if injector is not None else None,
    )
    # The session's end first: Claude Code sends SIGINT, then SIGTERM 0.1 s later, then
    # SIGKILL; stopping the injector may wait out its current wait. But before it, the injector
    # takes no more mail: what the session's end gives back is the agent's next session's.
    if injector is not None:
        ending.then(injector.halt)
    if watcher is not None:  # its last look before the session ends: mail the last turn
        ending.then(watcher.stop)  # carried is surfaced, not returned to the mailbox
    ending.then(keeper.stop)
    if injector is not None:
        ending.then(injector.stop)
    keeper.start(runtime_of(keeper.parent))  # the agent CLI that started us, by its command line
    if injector is not None:
        injector.start()
    if watcher is not None:
        watcher.start()


def settle_collector() -> None:
    """Move what start-up made (the MCP SDK, pydantic's schemas, httpx: some 400,000 objects)
    out of the collector's sight, as the hub does. Without it, the first full collection came
    at about the 13th-16th tool call of every session (it follows the count of allocations, so
    of calls) and walked them all: 86-98 ms for that one call, hundreds when sessions started
    together reached it together. Collections still happen; they walk only what came later."""
    gc.collect()
    gc.freeze()


def _packet_here(from_agent: str, to_agent: str, summary: str) -> Packet:
    """A hand-off's packet of the work in this server's folder (its session's project)."""
    from callboard.coord.handoff_packet import build_packet

    return build_packet(from_agent, to_agent, summary, [], Path.cwd(), utcnow())
