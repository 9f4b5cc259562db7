"""demo: a short, self-contained scene that shows the mailbox working."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from callboard.cli import render
from callboard.cli.app import REMOTE_PUMPING, _card_source, app
from callboard.client.local import LocalClient
from callboard.errors import BadRequest
from callboard.identity import machine_name
from callboard.model import Caller
from callboard.requests import SendRequest
from callboard.service.door import Service
from callboard.store.sqlite.store import SQLiteStore


def _step(text: str) -> None:
    render.console.print(f"\n[bold magenta]▸ {text}[/]")


SCENARIOS = ("mailbox", "a2a", "handoff", "delegate", "coordinate")


@app.command()
def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the demo's database and print where it is.")] = False,
    scenario: Annotated[
        str,
        typer.Option(
            "--scenario",
            help="mailbox: three agents, DMs, a thread and a channel. a2a: a task with a question back and an "
            "artifact, through an outside A2A agent. handoff: a session's work handed to another agent. delegate: "
            "a task given and waited for. coordinate: "
            "three agents propose, vote and converge.",
        ),
    ] = "mailbox",
) -> None:
    """A short scene in a throwaway store: the mailbox (three agents: a DM, a reply, a channel post and a
    status check), or --scenario a2a (two agents and an outside A2A agent working a task)."""
    if scenario not in SCENARIOS:
        raise BadRequest(f"no demo scenario {scenario!r}; one of: {', '.join(SCENARIOS)}.")
    folder = Path(tempfile.mkdtemp(prefix="callboard-demo-"))
    store = SQLiteStore(folder / "demo.db")
    service = Service(store, machine=machine_name(os.environ), card_source=_card_source)
    try:
        if scenario == "a2a":
            from callboard.cli import demo_a2a  # the A2A SDK's server parts load only for this scene

            render.console.print(f"[bold]Callboard demo: A2A tasks[/] — embedded store {store.location}")
            # lead's client opened the store: the background work is its (it sends to the translator).
            lead = LocalClient(service, Caller(workspace="demo", agent="lead"), remote_pumping=REMOTE_PUMPING)
            demo_a2a.run(lead, lead.as_agent("writer"), _step)
            render.console.print(
                "\n[bold green]done.[/] Agents on a hub are A2A agents too: see `callboard agent card`."
            )
        elif scenario in ("handoff", "delegate", "coordinate"):
            from callboard.cli import demo_together

            render.console.print(f"[bold]Callboard demo: {scenario}[/] — embedded store {store.location}")
            lead = LocalClient(service, Caller(workspace="demo", agent="lead"))
            if scenario == "handoff":
                demo_together.handoff_scene(lead.as_agent("claude-dev"), lead.as_agent("codex-dev"), _step)
            elif scenario == "delegate":
                demo_together.delegate_scene(lead, lead.as_agent("writer"), _step)
            else:
                members = {name: lead.as_agent(name) for name in ("ana", "ben", "cai")}
                demo_together.coordinate_scene(lead, members, _step)
            render.console.print("\n[bold green]done.[/] See README: Hand-off, Delegation that waits, Rounds.")
        else:
            _mailbox_scene(service, store.location)
    finally:
        store.close()
        if keep:
            render.console.print(f"[dim]demo database kept at {folder / 'demo.db'}[/]")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def _mailbox_scene(service: Service, location: str) -> None:
    backend = LocalClient(service, Caller(workspace="demo", agent="backend"))
    frontend, reviewer = backend.as_agent("frontend"), backend.as_agent("reviewer")
    render.console.print(f"[bold]Callboard demo[/] — embedded store {location}")

    _step("reviewer is running: it registers a live session (this process)")
    session = reviewer.register_session(runtime="demo")
    render.console.print(f"session {session.address} is live")

    _step("backend asks reviewer for a review (a DM) — delivered, because reviewer has a live session")
    ask = backend.send(
        SendRequest(to="reviewer", text="Can you review the new /v1/orders endpoint?", subject="review request")
    )
    render.send_result(ask)

    _step("backend tells frontend about the change — queued: frontend has never run")
    render.send_result(backend.send(SendRequest(to="frontend", text="Heads up: orders now carry a currency field.")))

    _step("reviewer reads its mail (read once: a second read finds nothing) and replies in the thread")
    for item in reviewer.read().items:
        render.mail_item(item)
    render.console.print(f"[dim]reading again: {len(reviewer.read().items)} new messages[/]")
    reply = reviewer.send(
        SendRequest(to="backend", text="Looks good; one nit on error codes.", reply_to=ask.message_id)
    )
    render.console.print(f"reply {reply.message_id} joins thread {reply.thread_id}")

    _step("backend reads the reply")
    for item in backend.read().items:
        render.mail_item(item)

    _step("backend opens #release; frontend and reviewer join; backend posts once, each member gets it once")
    backend.create_channel("release", "release coordination")
    frontend.join_channel("release")
    reviewer.join_channel("release")
    render.send_result(
        backend.send(SendRequest(to="#release", text="Shipping 1.4 at 17:00 — shout if anything blocks."))
    )

    _step("frontend starts and reads everything waiting for it")
    for item in frontend.read().items:
        render.mail_item(item)

    _step("backend checks where its review request is")
    status = backend.message_status(ask.message_id)
    for row in status.recipients:
        render.console.print(
            f"{row.agent}: {render.state(row.state)} — queued {render.when(row.queued_at)}, "
            f"delivered {render.when(row.delivered_at)}, read {render.when(row.read_at)}"
        )

    _step("who is around")
    for agent in backend.who().agents:
        live = "live" if agent.live else "no live session"
        render.console.print(f"{agent.name}: {live}, {agent.unread} unread")
    reviewer.end_session(session.id)
    render.console.print("\n[bold green]done.[/] Try it yourself: CALLBOARD_AGENT=alice callboard send bob hello")
