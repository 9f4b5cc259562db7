"""How commands print: one JSON document with ``--json``, otherwise rich text for people.

What others wrote — another agent's mail and card, an outside A2A agent's, a hub's error, a
runner's log — reaches a person's terminal only as text it shows: ``peer`` makes a value into
markup that prints it literally (no ``[bold]`` or ``[link=…]`` of the sender's is taken as
markup), its control and bidirectional characters written as their escapes (``fence``'s rule).
And the consoles themselves write every character through that rule, whatever a caller forgot.
``--json`` keeps every character as it was.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment
from rich.table import Table

from callboard.fence import HANDOFF_MEDIA_TYPE, handoff_named, one_line, visible
from callboard.integrations.claude_code.sessions import ClaudeSession
from callboard.model import DeliveryEvent, Held, MailItem, MessageStatus, Part, Reach, SendResult, Session
from callboard.tasks import Task, TaskPage


def peer(text: object, *, lines: bool = False) -> str:
    """A value someone else chose, as markup that prints it as it is: ``[bold]`` stays those
    characters, and a control or bidirectional character is written as its escape. One line
    (``fence.one_line``) unless ``lines``: a body or a description keeps its line breaks."""
    words = "" if text is None else str(text)
    return escape(visible(words) if lines else one_line(words))


class _ShownConsole(Console):
    """A console that writes text only as ``fence.visible`` shows it: every piece of text it
    renders (a table's cell, a rule's title, JSON) reaches the terminal with its control and
    bidirectional characters escaped. ``peer`` does it first where a value is put in, so that
    tables measure what is shown; this is the floor under every print. The console's own
    commands (styles, cursor moves) are not text, and pass."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            text = segment.text
            yield segment if segment.control or text.isprintable() else segment._replace(text=visible(text))


def make_consoles() -> tuple[Console, Console]:
    """The consoles for standard output and error; they note the terminal when made (the warm
    server's forked command makes them anew on its caller's descriptors and environment). No
    emoji codes: ``:fire:`` in someone's text prints as typed."""
    options: dict[str, Any] = {"highlight": False, "soft_wrap": True, "emoji": False}
    return _ShownConsole(**options), _ShownConsole(stderr=True, **options)


console, err_console = make_consoles()

INJECTED_KEY = "injected_into_claude_code"  # in send's --json: the sessions its mail was written into


def jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def emit(value: Any, as_json: bool, human: Callable[[], None]) -> None:
    """Print ``value`` as JSON, or call ``human`` to print it for people."""
    if as_json:
        sys.stdout.write(json.dumps(jsonable(value), indent=2, ensure_ascii=False) + "\n")
    else:
        human()


def counted(count: int, noun: str) -> str:
    """``1 message``, ``2 messages``: a count with its noun in the number it says."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def when(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    local = moment.astimezone()
    if local.date() == datetime.now().astimezone().date():
        return local.strftime("%H:%M:%S")
    return local.strftime("%Y-%m-%d %H:%M")


def table(*columns: str, keep_whole: tuple[str, ...] = ("id",)) -> Table:
    """A plain table; columns named in ``keep_whole`` are never cut or wrapped (ids are copied)."""
    grid = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in columns:
        grid.add_column(column, no_wrap=column in keep_whole, min_width=36 if column in keep_whole else None)
    return grid


STATE_STYLE = {
    "unknown_recipient": "red",
    "held": "magenta",
    "queued": "yellow",
    "delivered": "green",
    "handed": "green",
    "surfaced": "green",
    "read": "cyan",
    "acked": "blue",
}


def state(text: str) -> str:
    return f"[{STATE_STYLE.get(text, '')}]{peer(text)}[/]"


def held_line(who: str, held: Held) -> str:
    """A held delivery in one line: whose, until when, and why."""
    return f"{peer(who)}: [magenta]held[/] until {when(held.until)} — {peer(held.why)}"


_SESSION_WORD = {"handed": "to", "returned": "from"}  # otherwise "in" (surfaced in, held in, …)


def history_line(event: DeliveryEvent) -> str:
    """One step of a delivery's history, as a person reads it."""
    parts = [state(event.event) if event.event in STATE_STYLE else f"[yellow]{peer(event.event)}[/]"]
    if event.session:
        parts.append(_SESSION_WORD.get(event.event, "in") + " " + peer(event.session))
    if event.via:
        parts.append(f"by {peer(event.via)}")
    if event.detail:
        seen = event.event == "surfaced" and event.detail == "transcript"
        parts.append("(seen in the session's transcript)" if seen else f"({peer(event.detail)})")
    return " ".join(parts)


def send_result(result: SendResult) -> None:
    duplicate = " [dim](an earlier send with this idempotency key)[/]" if result.duplicate else ""
    console.print(f"sent [bold]{peer(result.message_id)}[/]{duplicate}")
    grid = table("to", "agent", "state", "")
    for outcome in result.recipients:
        # A hold says why and until when; otherwise where it went, or why it only waits.
        pushed = f"pushed to {outcome.session}" if outcome.session and not outcome.held else None
        detail = pushed or outcome.reason or ""
        grid.add_row(peer(outcome.address), peer(outcome.agent or "-"), state(outcome.state), f"[dim]{peer(detail)}[/]")
    console.print(grid)


def mail_item(item: MailItem) -> None:
    message = item.message
    where = f" in #{peer(message.channel)}" if message.channel else ""
    # Header fields are the sender's to choose: shown on one line each, so a line break in them
    # cannot print a header of someone else's (a model may read this through its shell tool).
    subject = f" — [bold]{peer(message.subject)}[/]" if message.subject else ""
    console.rule(f"[bold]{peer(message.sender)}[/]{where}{subject}", align="left", style="dim")
    if message.sender_address:  # where to answer that exact session
        terminal = f" in {peer(message.sender_terminal)}" if message.sender_terminal else ""
        console.print(f"[dim]from {peer(message.sender_address)}{terminal}[/]")
    # The id goes on a line of its own: people copy it into status, ack and --reply-to.
    reply = f" · in reply to {peer(message.reply_to)}" if message.reply_to else ""
    console.print(f"[dim]{when(message.created_at)} · {peer(message.id)}{reply}[/]")
    if item.task_id:  # a task's mail says which task, and the state this message moved it to
        console.print(f"[dim]task {peer(item.task_id)}[/] {task_state(item.task_state) if item.task_state else ''}")
    for part in message.parts:
        print_part(part, message.task_id)


def print_part(part: Part, task_id: str | None = None) -> None:
    """One part of a message or an artifact: text as it is (its lines kept), data as JSON (a
    hand-off's packet by name: ``task_id`` names its task), a file by its name."""
    if part.text is not None:
        console.print(peer(part.text, lines=True))
    elif part.data is not None and part.media_type == HANDOFF_MEDIA_TYPE:
        console.print(f"[dim]{peer(handoff_named(len(json.dumps(part.data).encode()), task_id))}[/]")
    elif part.data is not None:
        console.print_json(json.dumps(part.data))  # JSON escapes C0 controls; the console the rest
    elif part.url is not None:
        console.print(f"[link]{peer(part.url)}[/] {peer(part.filename or '')} [dim]{peer(part.media_type or '')}[/]")
    else:
        name, media = peer(part.filename or ""), peer(part.media_type or "")
        raw = part.raw or ""
        console.print(f"[dim]<{len(raw) * 3 // 4 - raw[-2:].count('=')} bytes {media} {name}>[/]")


TASK_STATE_STYLE = {
    "submitted": "yellow",
    "working": "cyan",
    "input-required": "magenta",
    "auth-required": "magenta",
    "completed": "green",
    "failed": "red",
    "canceled": "dim",
    "rejected": "red",
}


def task_state(value: str) -> str:
    return f"[{TASK_STATE_STYLE.get(str(value), '')}]{peer(value)}[/]"


def _status_words(task: Task) -> str:
    """The task's latest status message as one line (the other agent's words: never two lines)."""
    words = " ".join(p.text for p in task.status_parts if p.text)
    return peer(one_line(words)[:80])


def task_page(page: TaskPage) -> None:
    """Tasks, one a line: id, state, who asked whom, when it last moved, its latest status."""
    grid = table("id", "state", "asked", "updated", "status")
    for column in grid.columns[1:4]:  # a state or a name cut in two reads as another
        column.no_wrap = True
    for task in page.tasks:
        asked = f"{peer(task.requester)} → {peer(task.worker)}"
        grid.add_row(peer(task.id), task_state(task.state), asked, when(task.updated_at), _status_words(task))
    console.print(grid if page.tasks else "[dim]no tasks[/]")
    if page.next_page_token:
        console.print(f"[dim]more: --page-token {peer(page.next_page_token)}[/]")


def task_detail(task: Task) -> None:
    """One task in full: its parties, state, status message, artifacts and (asked for) history."""
    console.print(f"[bold]task {peer(task.id)}[/]  {task_state(task.state)} [dim](generation {task.generation})[/]")
    console.print(
        f"[dim]asked by {peer(task.requester)} of {peer(task.worker)} · context {peer(task.context_id)} · "
        f"created {when(task.created_at)} · updated {when(task.updated_at)}[/]"
    )
    if task.status_parts:
        console.rule("status", align="left", style="dim")
        for part in task.status_parts:
            print_part(part)
    for artifact in task.artifacts:
        name = peer(artifact.name or artifact.artifact_id)
        console.rule(f"artifact {name}", align="left", style="dim")
        if artifact.description:
            console.print(f"[dim]{peer(artifact.description)}[/]")
        for part in artifact.parts:
            print_part(part)
    for message in task.history:
        mail_item(MailItem(seq=0, state="read", message=message))


REACH_STYLE = {"live": "green", "path_broken": "yellow", "no_live_session": "yellow", "machine_down": "red"}


def reach(found: Reach) -> None:
    """Whether an address can be reached now, and if not, why."""
    label = found.state.replace("_", " ")
    console.print(f"{peer(found.address)}: [{REACH_STYLE.get(found.state, 'red')}]{peer(label)}[/]")
    console.print(peer(found.reason))


def session_line(session: Session) -> str:
    """One session as who lists it: its address, what runs it, whether it is live, and when seen."""
    notes = [session.runtime, "live" if session.live else "not live", f"seen {when(session.last_seen)}"]
    if session.terminal:
        notes.append(session.terminal)
    if session.live and session.delivery_error:
        notes.append(f"delivery broken: {session.delivery_error}")
    return f"{peer(session.address)} ({peer(', '.join(notes))})"


def claude_sessions(sessions: Sequence[ClaudeSession]) -> None:
    """This machine's live Claude Code sessions (from Claude Code's own registry)."""
    console.print("[bold]Claude Code sessions on this machine[/]")
    grid = table("pid", "name", "status", "socket", "cwd")
    for session in sessions:
        grid.add_row(
            str(session.pid),
            peer(session.name or "-"),
            peer(session.status or "-"),
            "[green]yes[/]" if session.socket_path else "[dim]no[/]",
            peer(session.cwd),
        )
    console.print(grid)


def task_lines(report: MessageStatus) -> None:
    """A status's task (its state now) and, for mail to an outside A2A agent, how sending it stands."""
    if report.task_id is not None:
        state_now = report.task_state.value if report.task_state else "unknown"
        console.print(f"task [bold]{peer(report.task_id)}[/]: [bold]{peer(state_now)}[/] [dim](its state now)[/]")
    if report.remote is not None:
        remote = report.remote
        at = f", its task {peer(remote.remote_task_id)}" if remote.remote_task_id else ""
        error = f" — {peer(remote.last_error)}" if remote.last_error else ""
        console.print(
            f"outside agent [bold]{peer(remote.remote)}[/]: {peer(remote.state)} (tries: {remote.attempts}{at}){error}"
        )
