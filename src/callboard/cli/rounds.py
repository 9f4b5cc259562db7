"""coordinate, and round list, show, propose, vote, cancel: agents that converge on one answer.

``coordinate`` opens a round as its coordinator and follows it to its decision, printing each
event as it happens (who, what, epoch, phase, elapsed ms); the participants are asked each phase
by a task and answer with ``round propose`` / ``round vote`` (or the same REST routes). A refused
proposal or vote is recorded and said (exit 1), never an error: the round goes on.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, app, open_client
from callboard.cli.tasks import file_artifact
from callboard.coord.rounds import decision_bytes, follow_round, proposal_bytes, write_decision
from callboard.errors import BadRequest
from callboard.fence import one_line
from callboard.model import Part
from callboard.requests import RoundProposal, RoundRequest, RoundVote
from callboard.rounds import PHASE_SECONDS_DEFAULT, Event, RoundActed, RoundInfo, describe_decision

round_app = typer.Typer(
    help="Rounds: a goal put to agents, who propose, vote and converge. list, show, propose, vote, cancel.",
    no_args_is_help=True,
)
app.add_typer(round_app, name="round")

RoundIdArgument = Annotated[str, typer.Argument(help="The round's id ('round list' shows yours).")]
EpochOption = Annotated[
    Optional[int], typer.Option("--epoch", metavar="N", help="The epoch you act in (default: the round's current).")
]


@app.command("coordinate")
def coordinate(
    goal: Annotated[str, typer.Option("--goal", help="What the participants are to decide.")],
    agents: Annotated[str, typer.Option("--agents", metavar="A,B,C", help="The participants, comma-separated.")],
    quorum: Annotated[
        Optional[int], typer.Option("--quorum", metavar="N", help="Endorsements that decide (default: a majority).")
    ] = None,
    max_rounds: Annotated[
        int, typer.Option("--max-rounds", metavar="R", help="Epochs before the decision is forced.")
    ] = 3,
    kind: Annotated[
        str, typer.Option("--kind", help="artifact: propose a file and vote; value: propose a number, the median wins.")
    ] = "artifact",
    phase_timeout: Annotated[
        float, typer.Option("--phase-timeout", metavar="S", help="Seconds each phase waits for the participants.")
    ] = PHASE_SECONDS_DEFAULT,
    channel: Annotated[
        Optional[str], typer.Option("--channel", metavar="C", help="Post the decision to this channel of yours.")
    ] = None,
    out: Annotated[
        Optional[Path], typer.Option("--out", metavar="FILE", help="Write the decision to this file.")
    ] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Put a goal to agents and wait for their decision: proposals, votes, a quorum."""
    if kind not in ("artifact", "value"):
        raise BadRequest(f"--kind is artifact or value, not {kind!r}.")
    names = [name.strip() for name in agents.split(",") if name.strip()]
    request = RoundRequest(
        goal=goal,
        agents=names,
        quorum=quorum,
        max_rounds=max_rounds,
        kind=kind,
        phase_timeout=phase_timeout,
        channel=channel,
    )
    started = time.monotonic()

    def told(event: Event) -> None:
        elapsed = int((time.monotonic() - started) * 1000)
        sys.stderr.write(f"{elapsed:>7} ms  epoch {event.epoch}  {_event_line(event)}\n")

    with open_client(db) as client:
        info = client.open_round(request)
        sys.stderr.write(f"round {info.id}: {len(names)} participants, quorum {info.quorum}\n")
        info = follow_round(client, info, told)
    written = out is not None and write_decision(info, out)
    document = {"round": render.jsonable(info), "round_id": info.id, "decision": render.jsonable(info.decision)}
    if written:
        document["written"] = str(out)
    render.emit(document, as_json, lambda: _decided(info, out if written else None))
    if info.decision is None or (info.decision.choice is None and info.decision.value is None):
        raise typer.Exit(1)


@round_app.command("list")
def round_list(
    every: Annotated[bool, typer.Option("--all", help="Also the rounds that ended.")] = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Rounds you take part in or opened, newest first, with what is yours to do."""
    with open_client(db) as client:
        rounds = client.list_rounds(every=every)

    def human() -> None:
        if not rounds:
            render.console.print("no rounds" + ("" if every else " open (--all shows the ended ones)"))
            return
        grid = render.table("id", "epoch", "phase", "yours", "goal")
        for info in rounds:
            grid.add_row(
                render.peer(info.id), str(info.epoch), info.phase, info.mine or "-", render.peer(info.goal[:60])
            )
        render.console.print(grid)

    render.emit(rounds, as_json, human)


@round_app.command("show")
def round_show(
    round_id: RoundIdArgument,
    out: Annotated[
        Optional[Path], typer.Option("--out", metavar="DIR", help="Write each proposal and the decision into DIR.")
    ] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """One round whole: every proposal, vote, refusal, absence and the decision, by whom and when."""
    with open_client(db) as client:
        info = client.get_round(round_id)
    written = _write_proposals(info, out) if out is not None else []
    document = {**render.jsonable(info), "written": [str(p) for p in written]} if out is not None else info
    render.emit(document, as_json, lambda: _shown(info, written))


@round_app.command("propose")
def round_propose(
    round_id: RoundIdArgument,
    file: Annotated[Optional[Path], typer.Option("--file", metavar="F", help="Propose this file.")] = None,
    value: Annotated[Optional[float], typer.Option("--value", metavar="N", help="Propose this number.")] = None,
    epoch: EpochOption = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Your proposal in a round: a file (an artifact round) or a number (a value round)."""
    if (file is None) == (value is None):
        raise BadRequest("give --file F (an artifact round) or --value N (a value round), one of them.")
    parts = [Part.model_validate(p) for p in file_artifact(file)["parts"]] if file is not None else []
    with open_client(db) as client:
        acted = client.propose(round_id, RoundProposal(epoch=epoch, value=value, parts=parts))
    _said(acted, as_json, "proposed")


@round_app.command("vote")
def round_vote(
    round_id: RoundIdArgument,
    endorse: Annotated[
        str, typer.Option("--for", metavar="AGENT", help="The proposer you endorse (yourself allowed).")
    ],
    reason: Annotated[Optional[str], typer.Option("--reason", metavar="WHY", help="Why, for the record.")] = None,
    epoch: EpochOption = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Your vote in a round: the proposal you endorse, and why."""
    with open_client(db) as client:
        acted = client.vote(round_id, RoundVote(epoch=epoch, endorse=endorse, reason=reason))
    _said(acted, as_json, f"voted for {endorse}")


@round_app.command("cancel")
def round_cancel(round_id: RoundIdArgument, as_json: JsonOption = False, db: DbOption = None) -> None:
    """Cancel a round you opened: it ends undecided, and its participants' tasks are canceled."""
    with open_client(db) as client:
        info = client.cancel_round(round_id)
    render.emit(info, as_json, lambda: render.console.print(f"round {render.peer(info.id)}: {info.phase}"))


# --- what is printed -------------------------------------------------------------------------


def _said(acted: RoundActed, as_json: bool, done: str) -> None:
    """A proposal's or a vote's answer; a refusal exits 1 (it was recorded: the round goes on)."""
    info = acted.round

    def human() -> None:
        if acted.refusal is not None:
            return
        render.console.print(f"{done} in round {render.peer(info.id)}, epoch {info.epoch} ({info.phase} now)")

    render.emit(acted, as_json, human)
    if acted.refusal is not None:
        refusal = acted.refusal
        sys.stderr.write(f"refused: {refusal.code}: {one_line(refusal.reason or '')}\n")
        raise typer.Exit(1)


def _event_line(event: Event) -> str:
    who = one_line(event.agent or "")
    if event.kind == "proposal":
        shown = f"{event.value:g}" if event.value is not None else "an artifact"
        return f"{who} proposed {shown}"
    if event.kind == "vote":
        because = f" ({one_line(event.reason)})" if event.reason else ""
        return f"{who} voted for {one_line(event.choice or '')}{because}"
    if event.kind == "refused":
        return f"{who}'s {event.attempted} refused: {event.code}"
    if event.kind == "absent":
        return f"{who} absent from the {event.phase} phase"
    if event.kind in ("opened", "phase"):
        return f"{event.phase} phase begins"
    if event.kind == "decided":
        return "decided" + (" (forced at the round limit)" if event.forced else "")
    return f"canceled by {who}"


def _decided(info: RoundInfo, written: Path | None) -> None:
    decision = info.decision
    outcome = describe_decision(info, decision) if decision is not None else "canceled"
    render.console.print(f"round {render.peer(info.id)}: {render.peer(outcome)}")
    if written is not None:
        render.console.print(f"wrote {render.peer(written)}")


def _shown(info: RoundInfo, written: list[Path]) -> None:
    render.console.print(
        f"[bold]round {render.peer(info.id)}[/]  {info.phase} (epoch {info.epoch}) · opened by "
        f"{render.peer(info.coordinator)} · quorum {info.quorum} of {len(info.participants)}"
    )
    render.console.print(f"goal: {render.peer(info.goal)}")
    grid = render.table("at", "epoch", "what", keep_whole=())
    for event in info.events:
        grid.add_row(render.when(event.at), str(event.epoch), render.peer(_event_line(event)))
    render.console.print(grid)
    if info.decision is not None:
        render.console.print(f"decision: {render.peer(describe_decision(info, info.decision))}")
    for path in written:
        render.console.print(f"wrote {render.peer(path)}")


def _write_proposals(info: RoundInfo, folder: Path) -> list[Path]:
    """Each proposal as ``epoch<N>-<agent>`` in ``folder`` (agents' names are plain names)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for event in info.events:
        if event.kind == "proposal" and event.agent is not None:
            path = folder / f"epoch{event.epoch}-{event.agent}"
            path.write_bytes(proposal_bytes(event))
            written.append(path)
    decision = decision_bytes(info)
    if decision is not None:
        path = folder / "decision"
        path.write_bytes(decision)
        written.append(path)
    return written
