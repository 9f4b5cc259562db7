"""run, runner wake|logs|clear: a warm coding CLI per agent, woken by its mail.

``runner status`` is registered on the same group by ``cli/runner_status.py`` (loaded below
when present).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, app, open_client
from callboard.cli.waiting import SAY_AFTER_SECONDS, note
from callboard.config import Settings
from callboard.errors import BadRequest
from callboard.fence import visible
from callboard.limits import RUNNER_START_LIMIT_SECONDS
from callboard.runner.env import RUNNER_ENV

if TYPE_CHECKING:
    from callboard.runner.files import RunnerFiles

runner_app = typer.Typer(
    help="Runners: see, wake, read and clear the agents that `callboard run` keeps.", no_args_is_help=True
)
app.add_typer(runner_app, name="runner")

CLI_HELP = "claude, codex, copilot, gemini, cursor, or generic:CMD (a program speaking docs/runner-protocol.md)."


@app.command("run")
def run(
    cli: Annotated[str, typer.Option("--cli", help=CLI_HELP)],
    agent: Annotated[
        Optional[str], typer.Option("--agent", help="The agent to run (default: the identity rule's).")
    ] = None,
    cwd: Annotated[
        Optional[Path], typer.Option("--cwd", metavar="FOLDER", help="The CLI's working folder (default: here).")
    ] = None,
    prompt_file: Annotated[
        Optional[Path],
        typer.Option("--prompt-file", metavar="FILE", help="Who the agent is and how it works (its role prompt)."),
    ] = None,
    every: Annotated[
        Optional[float],
        typer.Option("--every", metavar="SECONDS", help="Also tick after this many idle seconds (default: never)."),
    ] = None,
    idle_step: Annotated[
        float, typer.Option("--idle-step", metavar="SECONDS", help="Seconds added per idle tick.")
    ] = 60.0,
    max_sleep: Annotated[
        float, typer.Option("--max-sleep", metavar="SECONDS", help="The longest wait between ticks.")
    ] = 3600.0,
    turn_limit: Annotated[
        float, typer.Option("--turn-limit", metavar="SECONDS", help="A turn longer than this is stopped.")
    ] = 600.0,
    clear_min_gap: Annotated[
        float, typer.Option("--clear-min-gap", metavar="SECONDS", help="Seconds between context clears.")
    ] = 600.0,
    grace: Annotated[
        float, typer.Option("--grace", metavar="SECONDS", help="Seconds the CLI has to exit before it is killed.")
    ] = 10.0,
    start_limit: Annotated[
        float,
        typer.Option(
            "--start-limit", metavar="SECONDS", help="A CLI not ready to take a prompt by then failed to start."
        ),
    ] = RUNNER_START_LIMIT_SECONDS,
    respawn_base: Annotated[float, typer.Option("--respawn-base", hidden=True)] = 1.0,  # tests: a fast crash loop
    db: DbOption = None,
) -> None:
    """Keep a coding CLI working as an agent: it takes each batch of new mail as one turn."""
    from callboard.identity import machine_name
    from callboard.runner.adapters import adapter_for
    from callboard.runner.files import RunnerFiles
    from callboard.runner.loop import Runner, RunnerOptions

    _check_numbers(
        every=every,
        idle_step=idle_step,
        max_sleep=max_sleep,
        turn_limit=turn_limit,
        grace=grace,
        start_limit=start_limit,
        respawn_base=respawn_base,
    )
    folder = (cwd or Path.cwd()).expanduser().resolve()
    if not folder.is_dir():
        raise BadRequest(f"--cwd {folder} is not a folder.")
    role = _read_prompt(prompt_file)
    adapter = adapter_for(cli)
    if agent:
        os.environ["CALLBOARD_AGENT"] = agent  # the identity rule's first word, for us and the CLI
    os.environ.pop("CALLBOARD_SESSION", None)  # the runner's session is its own, not a caller's
    settings = Settings.load(db=db)
    with open_client(db) as client:
        me = client.whoami()
        options = RunnerOptions(
            agent=me.agent,
            cli=cli,
            cwd=folder,
            role_prompt=role,
            every=every,
            idle_step=idle_step,
            max_sleep=max_sleep,
            turn_limit=turn_limit,
            clear_min_gap=clear_min_gap,
            grace=grace,
            start_limit=start_limit,
            respawn_base=respawn_base,
        )
        files = RunnerFiles(settings.home, me.workspace, me.agent)

        starting = threading.Timer(SAY_AFTER_SECONDS, note, (f"starting {cli} as {me.agent}…",))
        starting.daemon = True

        def ready(address: str) -> None:
            starting.cancel()
            print(f"running {me.agent} as {address} with --cli {cli}", flush=True)

        runner = Runner(client, adapter, options, files, machine=machine_name(os.environ), on_ready=ready)
        starting.start()
        try:
            code = runner.run()
        finally:
            starting.cancel()
    if code:
        raise typer.Exit(code)


@runner_app.command("wake")
def wake(
    name: Annotated[str, typer.Argument(help="The agent whose runner to wake.")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Wake this machine's runner of an agent (SIGUSR1): a turn without mail, after any running one."""
    from callboard.runner.wake import send_wake

    files = _files(name, db)
    pid = files.running_pid()
    sent = send_wake(pid)
    message = f"woke {name}'s runner (pid {pid})" if sent else f"no runner of {name} is running on this machine"
    render.emit(
        {"sent": sent, "pid": pid, "message": message}, as_json, lambda: render.console.print(render.peer(message))
    )


FollowOption = Annotated[bool, typer.Option("--follow", "-f", help="Keep printing what is added.")]
LinesOption = Annotated[int, typer.Option("-n", "--lines", metavar="N", help="How many of the last lines.")]
LogJsonOption = Annotated[
    bool,
    typer.Option(
        "--json", help="Print one JSON document: the lines, each {at, text} (with --follow, a JSON line each)."
    ),
]


@runner_app.command("logs")
def logs(
    name: Annotated[str, typer.Argument(help="The agent whose runner's log to show.")],
    follow: FollowOption = False,
    lines: LinesOption = 50,
    as_json: LogJsonOption = False,
    db: DbOption = None,
) -> None:
    """This machine's log of an agent's runner."""
    from callboard.runner.files import UnknownRunner

    files = _files(name, db)
    if not files.log_path.exists():
        raise UnknownRunner(
            f"no runner of {name} has run on this machine (no log at {files.log_path}); "
            "'callboard runner status' shows the runners there are."
        )
    tail = files.tail(lines)
    if as_json and not follow:
        document = {"agent": name, "log": str(files.log_path), "lines": [_log_entry(line) for line in tail]}
        render.emit(document, as_json, lambda: None)
        return
    for line in tail:
        # The log holds what the CLI printed, and so what mail asked of it: shown, never obeyed.
        print(json.dumps(_log_entry(line), ensure_ascii=False) if as_json else visible(line))
    if follow:
        _follow(files.log_path, as_json)


def _log_entry(line: str) -> dict[str, str | None]:
    """A log line as data: its UTC time stamp and the rest (files.log writes ``<stamp> <text>``)."""
    stamp, _, text = line.partition(" ")
    if len(stamp) == 20 and stamp.endswith("Z") and "T" in stamp:
        return {"at": stamp, "text": text}
    return {"at": None, "text": line}  # a line someone else wrote (the runner's own output)


@runner_app.command("clear")
def clear(as_json: JsonOption = False, db: DbOption = None) -> None:
    """Ask the runner this CLI runs under to start a fresh context after the current turn."""
    agent = os.environ.get(RUNNER_ENV, "").strip()
    if not agent:
        raise BadRequest("runner clear is for a CLI under a runner (CALLBOARD_RUNNER is not set).")
    files = _files(agent, db)
    files.request_clear()
    message = f"{agent}'s runner clears the context after this turn"
    render.emit(
        {"asked": True, "agent": agent, "message": message}, as_json, lambda: render.console.print(render.peer(message))
    )


def _files(agent: str, db: str | None) -> RunnerFiles:
    from callboard.runner.files import RunnerFiles

    settings = Settings.load(db=db)
    return RunnerFiles(settings.home, settings.workspace_in(os.environ), agent)


def _follow(path: Path, as_json: bool = False) -> None:
    with path.open(encoding="utf-8", errors="replace", newline="\n") as log:  # a lone CR is no line's end
        log.seek(0, os.SEEK_END)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                line = log.readline()
                if line:
                    sys.stdout.write(
                        json.dumps(_log_entry(line.rstrip("\n")), ensure_ascii=False) + "\n"
                        if as_json
                        else visible(line)
                    )
                    sys.stdout.flush()
                else:
                    time.sleep(0.2)  # a log file has no change signal worth more than this


def _read_prompt(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise BadRequest(f"--prompt-file {path}: {exc.strerror or exc}.") from None


def _check_numbers(**values: float | None) -> None:
    for name, value in values.items():
        if value is not None and not value > 0:
            raise BadRequest(f"--{name.replace('_', '-')} must be more than 0, not {value:g}.")


with contextlib.suppress(ImportError):  # the status helper's `runner status`, once merged
    importlib.import_module("callboard.cli.runner_status")
