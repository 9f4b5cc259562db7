"""handoff: give an in-progress session's context to another agent (a task carrying a packet),
and ``handoff show``: a received packet whole.

The packet (``handoff.py``) is built here, where the work is: the summary the handing agent
writes (``--summary``; with ``--from`` a runner and no summary, asked of that runner and waited
for), the next steps, the repository of the working folder, a bounded diff, and the end of the
session's transcript where its CLI keeps one (this command's own Claude Code session, with
``--from`` a runner on this machine that runner's, or
``--transcript FILE``). ``--save FILE`` keeps the packet instead of sending it; ``--from-file``
sends one kept. What a command is given is checked before anything is sent.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Optional

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, app, open_client
from callboard.coord.handoff_packet import asked_summary, build_packet, runner_transcript
from callboard.errors import BadRequest
from callboard.handoff import Packet, full, handoff_request, packet_in
from callboard.identity import machine_name

handoff_app = typer.Typer(
    help="Hand an in-progress session to another agent: its summary, repository, diff and next steps.",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(handoff_app, name="handoff")

SUMMARY_TIMEOUT_DEFAULT = 300.0


@handoff_app.callback()
def handoff(
    ctx: typer.Context,
    to: Annotated[Optional[str], typer.Option("--to", metavar="AGENT", help="The agent that takes over.")] = None,
    from_agent: Annotated[
        Optional[str],
        typer.Option(
            "--from", metavar="AGENT", help="The agent handing over (default: you); a runner is asked for its summary."
        ),
    ] = None,
    summary: Annotated[
        Optional[str],
        typer.Option("--summary", metavar="SUMMARY", help="Where things stand, in your words; '-' reads stdin."),
    ] = None,
    next_steps: Annotated[
        list[str], typer.Option("--next", metavar="STEP", help="A next step for the receiver (repeatable).")
    ] = [],  # noqa: B006
    transcript: Annotated[
        Optional[Path], typer.Option("--transcript", metavar="FILE", help="The session's transcript to excerpt.")
    ] = None,
    save: Annotated[
        Optional[Path], typer.Option("--save", metavar="FILE", help="Write the packet to FILE instead of sending it.")
    ] = None,
    from_file: Annotated[
        Optional[Path], typer.Option("--from-file", metavar="FILE", help="Send a packet written by --save.")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", metavar="S", help="With --from a runner: how long to wait for its summary.")
    ] = SUMMARY_TIMEOUT_DEFAULT,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Hand your session (or --from a runner's) to another agent, as a task carrying a packet."""
    if ctx.invoked_subcommand is not None:
        return
    if to is None:
        raise BadRequest("give --to AGENT: the agent that takes over.")
    if save is not None and from_file is not None:
        raise BadRequest("--save keeps a packet and --from-file sends one: give one of them.")
    words = sys.stdin.read() if summary == "-" else summary
    kept = _load(from_file) if from_file is not None else None
    with open_client(db) as client:
        me = client.whoami().agent or ""
        giver = from_agent or (kept.from_agent if kept is not None else me)
        if kept is not None:
            packet = kept.model_copy(update={"to_agent": to, **({"summary": words} if words else {})})
        else:
            if not (words and words.strip()) and from_agent is None:
                raise BadRequest("say where things stand: --summary TEXT (or '-' to read it from standard input).")
            if not (words and words.strip()):
                words = asked_summary(client, giver, to, timeout, lambda line: sys.stderr.write(line + "\n"))
            packet = build_packet(
                giver,
                to,
                words or "",
                list(next_steps),
                Path.cwd(),
                datetime.now(UTC),
                transcript=transcript
                or (_own_transcript() if giver == me else runner_transcript(client, giver, machine_name(os.environ))),
            )
            if transcript is not None and packet.transcript is None:
                raise BadRequest(f"cannot read the transcript {transcript}; give a file you can read.")
        if save is not None:
            _save(packet, save)
            render.emit(
                {"saved": str(save), "packet": render.jsonable(packet)},
                as_json,
                lambda: render.console.print(f"packet for {render.peer(to)} kept in {render.peer(save)} (not sent)"),
            )
            return
        sent = client.open_task(handoff_request(packet))
    document = {**render.jsonable(sent), "packet": render.jsonable(packet)}
    render.emit(document, as_json, lambda: render.console.print(render.peer(sent.task.id)))


@handoff_app.command("show")
def handoff_show(
    task_id: Annotated[str, typer.Argument(help="The hand-off's task id (the mail names it).")],
    diff: Annotated[bool, typer.Option("--diff", help="Also the diff.")] = False,
    transcript: Annotated[bool, typer.Option("--transcript", help="Also the transcript's excerpt.")] = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """A hand-off you received (or gave), whole: summary, next steps, repository, and what you ask for."""
    with open_client(db) as client:
        task = client.get_task(task_id, history_length=50)
    first = next((m for m in task.history if packet_in(m.parts) is not None), None)
    packet = packet_in(first.parts) if first is not None else None
    if packet is None:
        raise BadRequest(f"task {task_id} carries no hand-off packet; `callboard task show {task_id}` shows it.")
    shown = packet.model_copy(
        update={"diff": packet.diff if diff else None, "transcript": packet.transcript if transcript else None}
    )
    render.emit(packet, as_json, lambda: render.console.print(render.peer(full(shown), lines=True)))


def _own_transcript() -> Path | None:
    """The transcript of the Claude Code session this command runs in, if it runs in one."""
    from callboard.integrations.claude_code.sessions import session_of
    from callboard.integrations.claude_code.transcript_watch import transcript_of
    from callboard.procs import has_proc, parent_of

    if not has_proc():
        return None
    pid = os.getpid()
    for _ in range(16):  # a shell or two between the session and this command
        pid = parent_of(pid)
        if pid <= 1:
            return None
        session = session_of(pid)
        if session is not None:
            return transcript_of(session.session_id)
    return None


def _load(path: Path) -> Packet:
    try:
        return Packet.model_validate_json(path.read_bytes())
    except OSError as error:
        raise BadRequest(f"cannot read {path}: {error.strerror or error}; give a packet --save wrote.") from None
    except ValueError:
        raise BadRequest(f"{path} is not a hand-off packet (`callboard handoff --save` writes one).") from None


def _save(packet: Packet, path: Path) -> None:
    try:
        path.write_text(json.dumps(packet.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")
    except OSError as error:
        raise BadRequest(f"cannot write {path}: {error.strerror or error}; give a file you can write.") from None
