"""team init|up|down|status|wake|logs: a team of runners on this machine, described in team.toml.

The face only: parsing is runner/team.py, the example runner/team_init.py, starting and
stopping runner/team_run.py, the table cli/runner_status.py's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, app, open_client
from callboard.cli.render import peer
from callboard.cli.runner import FollowOption, LinesOption, LogJsonOption
from callboard.cli.waiting import saying_after
from callboard.config import Settings
from callboard.runner import team_run
from callboard.runner.team import Role, Team, load_team, team_path

team_app = typer.Typer(help="Teams: run every role of a team.toml as a runner on this machine.", no_args_is_help=True)
app.add_typer(team_app, name="team")

TeamOption = Annotated[
    Optional[Path], typer.Option("--team", metavar="FILE", help="The team.toml, or its folder (default: ./team.toml).")
]
RoleOption = Annotated[Optional[str], typer.Option("--role", help="Only this role (its name or agent).")]


@team_app.command("init")
def init(
    folder: Annotated[Path, typer.Argument(help="Where to write the team (default: here).")] = Path("."),
    as_json: JsonOption = False,
) -> None:
    """Write an example team: team.toml, three roles (product, engineering, qa), procedures/."""
    from callboard.runner.team_init import write_example_team

    written = write_example_team(folder)
    shown = {"folder": str(folder.expanduser().resolve()), "written": [str(p) for p in written]}
    render.emit(shown, as_json, lambda: _print_written(shown))


@team_app.command("up")
def up(team: TeamOption = None, role: RoleOption = None, as_json: JsonOption = False, db: DbOption = None) -> None:
    """Make the team's agents and channels, then start a runner per role (those not running yet)."""
    chosen_team, roles = _team(team, role)
    settings = Settings.load(db=db)
    workspace = settings.workspace_in(os.environ)
    outcomes: list[team_run.Outcome] = []
    with open_client(db) as client:
        team_run.prepare(client, chosen_team, roles)
        started = []
        for one in roles:
            files = team_run.role_files(settings.home, workspace, one)
            pid = files.running_pid()
            if pid is not None:
                outcomes.append(team_run.Outcome(one.name, one.agent, True, pid, f"already running (pid {pid})"))
            else:
                started.append((one, files, team_run.start(one, files, db)))
        names = ", ".join(one.name for one, _, _ in started)
        with saying_after(f"started the runners of {names}; waiting for each to report its CLI up"):
            for one, files, process in started:
                outcomes.append(team_run.seen_reporting(one, process, client.list_runners, files))
    _finish(outcomes, as_json)


@team_app.command("down")
def down(team: TeamOption = None, role: RoleOption = None, as_json: JsonOption = False, db: DbOption = None) -> None:
    """Stop the team's runners on this machine: SIGTERM, then SIGKILL after a grace period."""
    _, roles = _team(team, role)
    settings = Settings.load(db=db)
    workspace = settings.workspace_in(os.environ)
    with saying_after(
        f"stopping the runners of {', '.join(one.name for one in roles)} (SIGTERM; SIGKILL after a grace)"
    ):
        stopped = [team_run.stop(one, team_run.role_files(settings.home, workspace, one)) for one in roles]
    _finish(stopped, as_json)


@team_app.command("status")
def status(team: TeamOption = None, as_json: JsonOption = False, db: DbOption = None) -> None:
    """The team's runners as they report themselves (any machine), and which run on this one."""
    from callboard.cli.runner_status import runner_table

    chosen_team, roles = _team(team, None)
    settings = Settings.load(db=db)
    workspace = settings.workspace_in(os.environ)
    with open_client(db) as client:
        agents = {r.agent for r in roles}
        reports = [r for r in client.list_runners() if r.agent in agents]
    pids = {one.agent: team_run.role_files(settings.home, workspace, one).running_pid() for one in roles}
    rows = [
        {
            "role": one.name,
            "agent": one.agent,
            "cli": one.cli,
            "local_pid": pids[one.agent],
            "reports": [r for r in reports if r.agent == one.agent],
        }
        for one in roles
    ]
    here = {agent: (f"pid {pid}" if pid else "not running") for agent, pid in pids.items()}
    render.emit(rows, as_json, lambda: render.console.print(runner_table(reports, here)))
    silent = [one.name for one in roles if not any(r.agent == one.agent for r in reports)]
    if silent and not as_json:
        render.console.print(f"[dim]never reported: {peer(', '.join(silent))} (team: {peer(chosen_team.name)})[/]")


@team_app.command("wake")
def wake(
    role: Annotated[Optional[str], typer.Argument(help="The role to wake (default: every role).")] = None,
    team: TeamOption = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Wake the team's runners on this machine (SIGUSR1): a turn without mail, after any running one."""
    from callboard.runner.wake import send_wake

    _, roles = _team(team, role)
    settings = Settings.load(db=db)
    workspace = settings.workspace_in(os.environ)
    outcomes = []
    for one in roles:
        pid = team_run.role_files(settings.home, workspace, one).running_pid()
        sent = send_wake(pid)
        words = f"woken (pid {pid})" if sent else "not running on this machine"
        outcomes.append(team_run.Outcome(one.name, one.agent, sent, pid, words))
    _finish(outcomes, as_json)


@team_app.command("logs")
def logs(
    role: Annotated[str, typer.Argument(help="The role whose runner's log to show.")],
    team: TeamOption = None,
    follow: FollowOption = False,
    lines: LinesOption = 50,
    as_json: LogJsonOption = False,
    db: DbOption = None,
) -> None:
    """This machine's log of a role's runner."""
    from callboard.cli.runner import logs as runner_logs

    chosen_team, _ = _team(team, None)
    runner_logs(chosen_team.role(role).agent, follow=follow, lines=lines, as_json=as_json, db=db)


def _team(given: Path | None, role: str | None) -> tuple[Team, tuple[Role, ...]]:
    """The team and the roles chosen; the identity rule's agent defaults to its first role's (a
    person running the team need not be one of its agents)."""
    team = load_team(team_path(given))
    os.environ.setdefault("CALLBOARD_AGENT", team.roles[0].agent)
    return team, team.chosen(role)


def _finish(outcomes: list[team_run.Outcome], as_json: bool) -> None:
    def human() -> None:
        for one in outcomes:
            mark = "[green]ok[/]" if one.ok else "[red]failed[/]"
            render.console.print(f"{mark} {peer(one.role)} ({peer(one.agent)}): {peer(one.message, lines=True)}")

    render.emit(outcomes, as_json, human)
    if not all(one.ok for one in outcomes):
        raise typer.Exit(1)


def _print_written(shown: dict) -> None:
    render.console.print(f"wrote the example team in {peer(shown['folder'])}:")
    for path in shown["written"]:
        render.console.print(f"  {peer(path)}")
    render.console.print("next: edit team.toml (cli per role), then `callboard team up`")
