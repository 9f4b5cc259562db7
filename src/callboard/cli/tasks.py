"""task list, show, update, cancel, send, and delegate: tasks (mail with an A2A lifecycle) for people and scripts.

A task is asked of an agent (``task send``, or an A2A client through the hub); its worker moves
it (``task update``: working, input-required, completed … with a message and artifacts), its
requester may cancel it. Every move is also mail in the task's thread. What a command is given is
read and checked before anything is sent, so bad input writes nothing.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, app, open_client
from callboard.coord.artifacts import write_artifacts
from callboard.coord.delegation import check_timeout, follow_task
from callboard.errors import BadRequest, TooLarge
from callboard.fence import one_line
from callboard.limits import MESSAGE_BYTES
from callboard.model import Part, SendResult
from callboard.requests import TaskListQuery, TaskRequest
from callboard.tasks import WAITING_ON_REQUESTER, Task, TaskState

task_app = typer.Typer(
    help="Tasks asked of agents: list, show, send one, update one you work on, cancel one you asked.",
    no_args_is_help=True,
)
app.add_typer(task_app, name="task")

TaskIdArgument = Annotated[str, typer.Argument(help="The task's id ('task list' shows them).")]


@task_app.command("list")
def task_list(
    state: Annotated[
        Optional[str], typer.Option("--state", help="Only tasks in this state (working, input-required, …).")
    ] = None,
    context: Annotated[
        Optional[str], typer.Option("--context", metavar="ID", help="Only tasks of this context (thread) id.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", metavar="N", help="At most this many (1-100).")] = 50,
    page_token: Annotated[
        Optional[str], typer.Option("--page-token", metavar="TOKEN", help="Go on from where a previous list stopped.")
    ] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Tasks you asked or were asked, newest updated first."""
    with open_client(db) as client:
        page = client.list_tasks(TaskListQuery(context_id=context, state=state, page_size=limit, page_token=page_token))
    render.emit(page, as_json, lambda: render.task_page(page))


@task_app.command("show")
def task_show(
    task_id: TaskIdArgument,
    history: Annotated[int, typer.Option("--history", metavar="N", help="Also show its newest N messages.")] = 0,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """One task: who asked whom, its state, latest status message and artifacts."""
    with open_client(db) as client:
        task = client.get_task(task_id, history_length=history or None)
    render.emit(task, as_json, lambda: render.task_detail(task))


WaitOption = Annotated[
    bool,
    typer.Option(
        "--wait",
        help="Follow the task to its end: exit 0 completed, 1 failed, rejected or canceled, 2 timed out (then canceled).",
    ),
]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", metavar="S", help="With --wait: cancel the task past this many seconds.")
]
OutOption = Annotated[
    Optional[Path], typer.Option("--out", metavar="DIR", help="With --wait: write the task's artifacts into DIR.")
]
WAIT_TIMEOUT_DEFAULT = 600.0


@task_app.command("send")
def task_send(
    agent: Annotated[str, typer.Argument(help="The agent to ask (name, or name@machine#pid).")],
    text: Annotated[str, typer.Argument(metavar="MESSAGE", help="What you ask of it.")],
    subject: Annotated[Optional[str], typer.Option("--subject", "-s", help="A short subject line.")] = None,
    context: Annotated[
        Optional[str],
        typer.Option("--context", metavar="ID", help="Open it in this context (thread) id; default: a new one."),
    ] = None,
    answer: Annotated[
        Optional[str],
        typer.Option(
            "--answer",
            metavar="TASK_ID",
            help="Answer this task of yours that asked you for input, instead of a new one.",
        ),
    ] = None,
    message_id: Annotated[
        Optional[str],
        typer.Option(
            "--message-id",
            metavar="ID",
            help="Your id for this message: sending again with it never opens a second task.",
        ),
    ] = None,
    wait: WaitOption = False,
    timeout: TimeoutOption = WAIT_TIMEOUT_DEFAULT,
    out: OutOption = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Ask an agent to do something: a task, mailed to it. Prints the task's id (with --wait, its end)."""
    request = TaskRequest(
        to=agent, text=text, task_id=answer, context_id=context, subject=subject, message_id=message_id
    )
    _ask(request, wait, timeout, out, as_json, db)


@app.command("delegate")
def delegate(
    agent: Annotated[str, typer.Argument(help="The agent to ask (name, or name@machine#pid).")],
    text: Annotated[
        str, typer.Argument(metavar="MESSAGE", help="What you ask of it; '-' reads it from standard input.")
    ],
    subject: Annotated[Optional[str], typer.Option("--subject", "-s", help="A short subject line.")] = None,
    wait: WaitOption = False,
    timeout: TimeoutOption = WAIT_TIMEOUT_DEFAULT,
    out: OutOption = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Hand a piece of work to an agent (a task): with --wait, wait for its result and write its files."""
    words = sys.stdin.read() if text == "-" else text
    _ask(TaskRequest(to=agent, text=words, subject=subject), wait, timeout, out, as_json, db)


def _ask(request: TaskRequest, wait: bool, timeout: float, out: Path | None, as_json: bool, db: str | None) -> None:
    """Open (or answer) the task; with ``wait``, follow it to its end (``follow_task``)."""
    if not wait and out is not None:
        raise BadRequest("--out writes the task's artifacts when it ends: give --wait too.")
    check_timeout(timeout)
    with open_client(db) as client:
        sent = client.open_task(request)
        _said(sent.send)
        if not wait:
            document = {**render.jsonable(sent), render.INJECTED_KEY: render.jsonable(sent.send.injected)}
            render.emit(document, as_json, lambda: render.console.print(render.peer(sent.task.id)))
            return
        sys.stderr.write(f"task {sent.task.id}: asked {one_line(sent.task.worker)}; waiting up to {timeout:g} s\n")
        task = follow_task(client, sent.task, timeout, _told)
    written, urls = write_artifacts(task, out) if out is not None else ([], [])
    document = {
        **render.jsonable(sent),
        "task": render.jsonable(task),
        "written": [str(path) for path in written],
        "urls": urls,
    }
    render.emit(document, as_json, lambda: _ended(task, written, urls))
    if task.state is not TaskState.COMPLETED:
        raise typer.Exit(1)


def _said(mail: SendResult) -> None:
    """What a send did besides storing (a name nobody had used, an injection): to stderr, so
    the id stays stdout's only line and scripts take it with $(…)."""
    for outcome in mail.recipients:  # a name nobody had used (a typo?): said, as send says it
        if outcome.new_agent and outcome.reason:
            sys.stderr.write(f"note: {one_line(outcome.reason)}\n")
    if mail.inject_problem:
        sys.stderr.write(f"warning: {one_line(mail.inject_problem)}\n")
    for into in mail.injected:
        name = f" ({into.name})" if into.name else ""
        sys.stderr.write(one_line(f"injected into Claude Code session {into.pid}{name} for {into.agent}") + "\n")


def _told(task: Task) -> None:
    """A move of a followed task, as a line on stderr."""
    words = one_line(" ".join(p.text for p in task.status_parts if p.text))[:200]
    line = f"task {task.id}: {task.state}" + (f" — {task.worker}: {words}" if words else "")
    if task.state in WAITING_ON_REQUESTER:
        line += f" (answer it: callboard task send {task.worker} ANSWER --answer {task.id} --wait)"
    sys.stderr.write(line + "\n")


def _ended(task: Task, written: list[Path], urls: list[str]) -> None:
    render.task_detail(task)
    for path in written:
        render.console.print(f"wrote {render.peer(path)}")
    for url in urls:
        render.console.print(f"handed over a link (not fetched): {render.peer(url)}")


@task_app.command("update")
def task_update(
    task_id: TaskIdArgument,
    state: Annotated[
        Optional[str],
        typer.Option(
            "--state", help="working, input-required, completed, failed or rejected (default: the state stays)."
        ),
    ] = None,
    message: Annotated[
        Optional[str], typer.Option("--message", "-m", help="A status message to the one who asked.")
    ] = None,
    artifact: Annotated[
        list[Path], typer.Option("--artifact", metavar="FILE", help="Hand over this file as an artifact (repeatable).")
    ] = [],  # noqa: B006
    data: Annotated[
        list[str], typer.Option("--data", metavar="JSON", help="Hand over this JSON as a data artifact (repeatable).")
    ] = [],  # noqa: B006
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Move a task you work on: a new state, a message, artifacts. The one who asked gets it as mail."""
    # Everything is read and checked first: a bad file or bad JSON sends nothing.
    artifacts = [file_artifact(path) for path in artifact] + [data_artifact(raw) for raw in data]
    parts = [{"text": message}] if message is not None else []
    with open_client(db) as client:
        task = client.update_task(task_id, state=state, parts=parts, artifacts=artifacts)
    render.emit(task, as_json, lambda: _moved(task))


@task_app.command("cancel")
def task_cancel(task_id: TaskIdArgument, as_json: JsonOption = False, db: DbOption = None) -> None:
    """Cancel a task you asked for; the agent working on it is told by mail."""
    with open_client(db) as client:
        task = client.cancel_task(task_id)
    render.emit(task, as_json, lambda: _moved(task))


def _moved(task: Task) -> None:
    render.console.print(
        f"task {render.peer(task.id)}: {render.task_state(task.state)} [dim](generation {task.generation})[/]"
    )


# --- what a command hands over ------------------------------------------------------------------


def file_artifact(path: Path) -> dict[str, Any]:
    """A file as an artifact named after it: text (UTF-8) as a text part, anything else as raw
    bytes (base64), each with the file's name and its media type as ``mimetypes`` guesses it."""
    try:
        size = path.stat().st_size
        if size > MESSAGE_BYTES:  # told before reading it all: a task update carries no more
            raise TooLarge(
                f"{path} is {size} bytes; an update carries at most {MESSAGE_BYTES} bytes. "
                "Put the file where the other agent can fetch it and send its URL instead."
            )
        content = path.read_bytes()
    except OSError as error:
        raise BadRequest(f"cannot read {path}: {error.strerror or error}; give a file you can read.") from None
    guessed = mimetypes.guess_type(path.name)[0]
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\x00" not in text:
        part = Part(text=text, filename=path.name, media_type=guessed or "text/plain")
    else:
        raw = base64.b64encode(content).decode("ascii")
        part = Part(raw=raw, filename=path.name, media_type=guessed or "application/octet-stream")
    return {"name": path.name, "parts": [part.model_dump()]}


def data_artifact(raw: str) -> dict[str, Any]:
    """``--data JSON`` as an artifact of one data part."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        raise BadRequest(
            f"--data {raw[:40]!r} is not JSON ({error.msg} at line {error.lineno} column {error.colno}); "
            "nothing was sent."
        ) from None
    if value is None:
        raise BadRequest("--data null holds nothing to hand over; give a JSON object, list, string or number.")
    return {"name": "data", "parts": [{"data": value, "media_type": "application/json"}]}
