"""`read --follow`: a reader that stays, as a live session of its agent, until stopped."""

from __future__ import annotations

import os
import signal
import sys
import threading

from callboard.cli import render
from callboard.client.base import Client
from callboard.client.following import follow
from callboard.client.session_keeper import HEARTBEAT_SECONDS, SessionKeeper
from callboard.errors import HubUnavailable
from callboard.fence import one_line
from callboard.identity import terminal_of
from callboard.limits import DEFAULT_WINDOW_SECONDS
from callboard.model import MailItem


def follow_mail(client: Client, *, peek: bool, after: int | None, limit: int | None, as_json: bool) -> None:
    """Print each message as it arrives (a JSON line each with ``as_json``), marking it read
    unless ``peek``; stop on SIGINT/SIGTERM or after ``limit`` messages.

    Run inside an agent's session (CALLBOARD_SESSION, or started by an agent CLI whose session
    is registered), it reads as that session. Otherwise it is a session of its own while it
    runs — registered, kept live by heartbeats, ended on exit — so mail sent to the agent is
    pushed to it."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, _exit)  # unwind (a waiting read may be in progress), so the session ends
    keeper = None
    me = client.whoami()
    if me.session is None:
        window = me.liveness_seconds or DEFAULT_WINDOW_SECONDS
        keeper = SessionKeeper(
            client,
            stop.set,
            parent=os.getpid(),
            every=min(HEARTBEAT_SECONDS, window / 4),
            terminal=terminal_of(os.environ),
        )
        keeper.start(runtime="cli")
        if keeper.session is not None:
            _note(f"following as session {keeper.session.address}")
    printed = 0

    def deliver(item: MailItem) -> None:
        nonlocal printed
        if as_json:
            sys.stdout.write(item.model_dump_json() + "\n")
        else:
            render.mail_item(item)
        sys.stdout.flush()
        printed += 1
        if limit is not None and printed >= limit:
            stop.set()

    told = False  # of this outage: one line when it starts, one when it ends

    def unreachable(error: HubUnavailable, delay: float) -> None:
        nonlocal told
        if not told:
            told = True
            _note(f"{error.message} — trying again in {delay:.1f} s, and on until it answers (Ctrl-C stops)")

    def reconnected() -> None:
        nonlocal told
        told = False
        _note("reconnected; resuming where it stopped")

    try:
        follow(
            client,
            deliver,
            stop=stop,
            after=after,
            mark_read=not peek,
            on_unreachable=unreachable,
            on_reconnected=reconnected,
        )
    finally:
        if keeper is not None:
            keeper.stop()


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _note(text: str) -> None:
    """One line on stderr; it may quote the hub (its error's words): shown as ``one_line`` shows them."""
    print(f"callboard: {one_line(text)}", file=sys.stderr, flush=True)
