"""send, reply, read, inbox, ack, status: moving mail."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, app, open_client
from callboard.cli.following import follow_mail
from callboard.coord.delegation import check_timeout
from callboard.coord.replies import first_reply, mailbox_position
from callboard.errors import BadRequest
from callboard.model import MailItem, SendResult
from callboard.requests import InboxQuery, ReadQuery, SendRequest

if TYPE_CHECKING:
    from callboard.client.base import Client

REPLY_TIMEOUT_DEFAULT = 300.0  # send --wait-reply: how long a script asks and waits by default


def _parts(data: list[str], urls: list[str]) -> list[dict]:
    parts: list[dict] = []
    for raw in data:
        try:
            parts.append({"data": json.loads(raw)})
        except json.JSONDecodeError as error:
            raise BadRequest(f"--data {raw[:40]!r} is not JSON ({error.msg}).") from None
    parts.extend({"url": url} for url in urls)
    return parts


def _stdin_text() -> str:
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest(
            f"standard input is not UTF-8 text (byte {error.start}); send text, or attach data as a part."
        ) from None


SubjectOption = Annotated[Optional[str], typer.Option("--subject", "-s", help="A short subject line.")]
DataOption = Annotated[list[str], typer.Option("--data", metavar="JSON", help="Attach a JSON data part (repeatable).")]
UrlOption = Annotated[list[str], typer.Option("--url", help="Attach a file/URL part (repeatable).")]
UrgentOption = Annotated[
    bool, typer.Option("--urgent", help="Let it reach a busy coding agent between tool calls, not only at its turn.")
]


@app.command()
def send(
    to: Annotated[
        str,
        typer.Argument(
            help="Recipients: name, name@machine, name@machine#pid or #channel; comma-separated for several."
        ),
    ],
    message: Annotated[str, typer.Argument(help="The message text; '-' reads it from standard input.")],
    subject: SubjectOption = None,
    reply_to: Annotated[
        Optional[str],
        typer.Option("--reply-to", metavar="ID", help="The id of the message this answers; joins its thread."),
    ] = None,
    thread: Annotated[
        Optional[str], typer.Option("--thread", metavar="ID", help="Put the message in this thread id.")
    ] = None,
    data: DataOption = [],  # noqa: B006
    url: UrlOption = [],  # noqa: B006
    require_live: Annotated[
        bool, typer.Option("--require-live", help="Fail, storing nothing, unless every recipient has a live session.")
    ] = False,
    idempotency_key: Annotated[
        Optional[str],
        typer.Option(
            "--idempotency-key", metavar="KEY", help="Resending with the same key returns the first send, never a copy."
        ),
    ] = None,
    urgent: UrgentOption = False,
    wait_reply: Annotated[
        bool,
        typer.Option("--wait-reply", help="Then wait for the first reply in its thread and print it (exit 2 if none)."),
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", metavar="S", help="With --wait-reply: wait at most this many seconds.")
    ] = REPLY_TIMEOUT_DEFAULT,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Send a message to agents or a channel; says per recipient whether it was delivered or queued."""
    check_timeout(timeout)
    text = _stdin_text() if message == "-" else message
    with open_client(db) as client:
        position = mailbox_position(client) if wait_reply else 0
        result = client.send(
            SendRequest(
                to=to,
                text=text,
                subject=subject,
                parts=_parts(data, url),
                thread_id=thread,
                reply_to=reply_to,
                require_live=require_live,
                idempotency_key=idempotency_key,
                urgent=urgent,
            ),
        )
        _send_to_outside_agents(client, result)
        if wait_reply:
            if not as_json:
                emit_sent(result, False)
            answer = first_reply(client, result, position, timeout)
            render.emit(
                {**render.jsonable(result), render.INJECTED_KEY: render.jsonable(result.injected), "reply": answer},
                as_json,
                lambda: render.mail_item(answer),
            )
            return
    emit_sent(result, as_json)


@app.command()
def reply(
    message_id: Annotated[
        str, typer.Argument(help="The message you answer: an id that read, inbox or a send printed.")
    ],
    message: Annotated[str, typer.Argument(help="Your answer; '-' reads it from standard input.")],
    subject: SubjectOption = None,
    data: DataOption = [],  # noqa: B006
    url: UrlOption = [],  # noqa: B006
    urgent: UrgentOption = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Answer a message: to its sender, in its thread (the same as 'send SENDER MESSAGE --reply-to MESSAGE_ID')."""
    text = _stdin_text() if message == "-" else message
    with open_client(db) as client:
        sender = client.message_status(message_id).sender  # unknown_message unless it is yours to see
        if sender == client.whoami().agent:
            raise BadRequest(
                f"{message_id} is a message you sent: answer its recipients with "
                f"'callboard send NAME MESSAGE --reply-to {message_id}'."
            )
        result = client.send(
            SendRequest(
                to=sender, text=text, subject=subject, parts=_parts(data, url), reply_to=message_id, urgent=urgent
            )
        )
        _send_to_outside_agents(client, result)
    emit_sent(result, as_json)


def _send_to_outside_agents(client: Client, result: SendResult) -> None:
    """On the embedded store, mail to an outside A2A agent is sent on here, until its first answer."""
    if any(o.remote for o in result.recipients):
        from callboard.cli.remotes import SEND_WAIT_SECONDS, send_inline

        send_inline(client, result.message_id, SEND_WAIT_SECONDS)


def emit_sent(result: SendResult, as_json: bool) -> None:
    """A send's result and the Claude Code sessions its mail was injected into; an injection that went
    wrong is one line on stderr (the send itself stands)."""
    if result.inject_problem:
        sys.stderr.write(f"warning: {render.one_line(result.inject_problem)}\n")

    def human() -> None:
        render.send_result(result)
        for into in result.injected:
            name = f" ({render.peer(into.name)})" if into.name else ""
            render.console.print(f"injected into Claude Code session {into.pid}{name} for {render.peer(into.agent)}")

    render.emit({**render.jsonable(result), render.INJECTED_KEY: render.jsonable(result.injected)}, as_json, human)


@app.command()
def read(
    wait: Annotated[
        float, typer.Option("--wait", "-w", help="Wait up to SECONDS for mail to arrive.", metavar="SECONDS")
    ] = 0.0,
    peek: Annotated[bool, typer.Option("--peek", help="Show unread mail without marking it read.")] = False,
    after: Annotated[
        Optional[int],
        typer.Option(
            "--after", metavar="SEQ", help="Resume after this sequence number (the cursor of an earlier read)."
        ),
    ] = None,
    limit: Annotated[
        Optional[int],
        typer.Option(
            "--limit", "-n", metavar="N", help="At most this many messages (default 100; with --follow, no limit)."
        ),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="Keep reading: print each message as it arrives (one JSON line each with --json), "
            "riding out hub restarts and cut links, until stopped.",
        ),
    ] = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Read your unread mail, marking it read (each message is read once)."""
    if follow:
        with open_client(db) as client:
            follow_mail(client, peek=peek, after=after, limit=limit, as_json=as_json)
        return
    limit = 100 if limit is None else limit
    with open_client(db) as client:
        # While it waits, this reader is a live session (unless it runs in one already, an agent
        # CLI's): a sender sees its mail delivered to it.
        session = client.register_session(runtime="cli") if wait > 0 and client.whoami().session is None else None
        try:
            result = client.read(ReadQuery(peek=peek, after=after, limit=limit, wait=wait))
        finally:
            if session is not None:
                client.end_session(session.id)

    def human() -> None:
        for item in result.items:
            render.mail_item(item)
        if not result.items:
            render.console.print("[dim]no new mail[/]")
        elif peek:
            render.console.print(f"[dim]peeked: nothing marked read; {result.unread} unread[/]")
        elif result.unread:
            render.console.print(f"[dim]{result.unread} more unread — read again for more[/]")
        for held in result.held:
            render.console.print(render.held_line(f"{held.message_id} from {held.sender}", held))

    render.emit(result, as_json, human)


@app.command()
def inbox(
    all_: Annotated[bool, typer.Option("--all", help="Include acknowledged messages.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", help="At most this many, newest last.")] = 50,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """List your mailbox (unacknowledged mail by default) without marking anything."""
    with open_client(db) as client:
        items = client.inbox(InboxQuery(include_acked=all_, limit=limit))

    def human() -> None:
        if not items:  # without --all, acknowledged mail is not listed: it may be there
            render.console.print(
                "[dim]mailbox empty[/]" if all_ else "[dim]no unacknowledged mail (--all lists all)[/]"
            )
            return
        grid = render.table("seq", "id", "from", "about", "state", "at")
        for item in items:
            grid.add_row(
                str(item.seq),
                render.peer(item.message.id),
                render.peer(_sender(item)),
                render.peer(_gist(item)),
                render.state(item.state),
                render.when(item.message.created_at),
            )
        render.console.print(grid)

    render.emit(items, as_json, human)


def _sender(item: MailItem) -> str:
    return item.message.sender + (f" #{item.message.channel}" if item.message.channel else "")


def _gist(item: MailItem) -> str:
    """The subject, or the start of the text, in one line of at most 60 characters as shown."""
    text = render.one_line(item.message.subject or item.message.text.replace("\n", " "))
    return text if len(text) <= 60 else text[:59] + "…"


@app.command()
def ack(
    message_ids: Annotated[list[str], typer.Argument(help="Ids of messages you have finished handling.")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Acknowledge messages: you handled them (they leave the default inbox listing)."""
    with open_client(db) as client:
        result = client.ack(message_ids)
    render.emit(
        result, as_json, lambda: render.console.print(f"acknowledged {render.counted(len(result.acked), 'message')}")
    )


@app.command()
def status(
    message_id: Annotated[str, typer.Argument(help="The id a send printed.")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Where a message is, per recipient: queued, delivered, handed (to a live session, waiting
    for its turn), surfaced (in the model's context), read, acked — when, and its history."""
    with open_client(db) as client:
        report = client.message_status(message_id)
        if report.remote is not None and report.remote.state in ("pending", "following"):
            from callboard.cli.remotes import STATUS_WAIT_SECONDS, send_inline

            send_inline(client, message_id, STATUS_WAIT_SECONDS)  # on the embedded store: move it on first
            report = client.message_status(message_id)

    def human() -> None:
        subject = f" — {render.peer(report.subject)}" if report.subject else ""
        render.console.print(
            f"[bold]{render.peer(report.message_id)}[/] from {render.peer(report.sender)}{subject}  "
            f"[dim]{render.when(report.created_at)}[/]"
        )
        grid = render.table("to", "state", "queued", "delivered", "handed", "surfaced", "read", "acked")
        for row in report.recipients:
            name = row.address if row.agent in (None, row.address) else f"{row.agent} ({row.address})"
            shown = render.state(row.state)
            if row.handed_to:
                shown += f" [dim]to {render.peer(row.handed_to)}[/]"
            grid.add_row(
                render.peer(name),
                shown,
                render.when(row.queued_at),
                render.when(row.delivered_at),
                render.when(row.handed_at),
                render.when(row.surfaced_at),
                render.when(row.read_at),
                render.when(row.acked_at),
            )
        render.console.print(grid)
        for row in report.recipients:
            if row.held is not None and row.state == "held":
                render.console.print(render.held_line(row.agent or row.address, row.held))
            if len(report.recipients) > 1 and row.history:
                render.console.print(f"[bold]{render.peer(row.agent or row.address)}[/]")
            for event in row.history:
                render.console.print(f"  [dim]{render.when(event.at)}[/] {render.history_line(event)}")
        render.task_lines(report)
        for row in report.recipients:
            if row.reach is not None and row.reach.state != "live":
                render.console.print(
                    f"[dim]{render.peer(row.agent or row.address)}:[/] {render.peer(row.reach.reason)}"
                )

    render.emit(report, as_json, human)
