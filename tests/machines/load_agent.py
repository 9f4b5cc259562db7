"""One session of one agent in the load test (test_load.py): a process run inside a machine's
network namespace with that machine's environment (its CALLBOARD_HOME holds the login,
CALLBOARD_MACHINE its name, CALLBOARD_AGENT the agent).

It registers its own process as a session of the agent and keeps it with ``SessionKeeper``
(heartbeats every ``--heartbeat`` seconds), follows the mail its session sees with ``follow``
(from the start of the mailbox, marking nothing) on one thread, and sends its share of
messages on another: each to a session picked at random from the roster the test writes, by
one of the three address forms, with an idempotency key. Everything it sees goes to three JSONL
files, a line per event, flushed at once (the process may be SIGKILLed):

  LABEL.recv.jsonl   {"id", "seq", "t" (time.time() when handed on), "from" (sender_address)}
  LABEL.send.jsonl   {"key", "to", "form", "pick" (the roster label picked), "t0" (before the
                     send), "t1" (after it)} plus, acknowledged, {"id", "session", "state",
                     "agent", "duplicate"}, or, refused, {"error" (its code), "message"}
  LABEL.beats.jsonl  {"t0", "t1"}: a registration or heartbeat the hub took, sent at t0,
                     answered at t1

On stdout, one JSON line per step for the test to wait on: {"ready": …session…} once the
session is registered, {"sent": n} once its sends are done, {"stopping"} and {"caught_up"}
when told to stop and when drained, {"drained": cursor} at the end (each with "at", its time).
After its sends it waits for the file CONTROL/stop (or SIGTERM), then drains — until a read
that began after the stop found nothing new — ends its session and exits 0.

Standalone on purpose: it imports the callboard library only, never the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from callboard.client.following import follow
from callboard.client.hub import HubClient
from callboard.client.opening import hub_client
from callboard.client.session_keeper import SessionKeeper
from callboard.config import Settings
from callboard.errors import CallboardError
from callboard.identity import SessionHint
from callboard.model import MailItem, ReadResult
from callboard.requests import ReadQuery, SendRequest

FORMS = ("name", "machine", "session")  # name, name@machine, name@machine#pid
FOLLOW_WAIT_SECONDS = 0.5  # one waiting read of the follower: an empty one after the stop ends the drain
POLL_SECONDS = 0.02


class Journal:
    """A JSONL file written a line at a time and flushed at once, so a SIGKILL loses nothing
    already handed on (the kernel has it)."""

    def __init__(self, path: Path) -> None:
        self._file: IO[str] = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


class JournaledBeats:
    """The session keeper's client, noting when each registration and heartbeat was sent and
    when the hub took it (``t0``, ``t1``): the test's evidence of when the hub surely heard from
    this session. A process starved of the CPU beats late, and the hub rightly calls it not live
    then; the test must not take that for the hub's mistake."""

    def __init__(self, client: Any, journal: Journal) -> None:
        self._client = client
        self._journal = journal

    def register_session(self, **fields: Any) -> Any:
        began = time.time()
        session = self._client.register_session(**fields)
        self._journal.write({"t0": began, "t1": time.time()})
        return session

    def heartbeat(self, session_id: str, delivery_error: str | None = None) -> Any:
        began = time.time()
        session = self._client.heartbeat(session_id, delivery_error)
        self._journal.write({"t0": began, "t1": time.time()})
        return session

    def end_session(self, session_id: str) -> Any:
        return self._client.end_session(session_id)


def say(record: dict[str, Any]) -> None:
    print(json.dumps({**record, "at": time.time()}, separators=(",", ":")), flush=True)


class WatchedReads:
    """The follower's client: the session's HubClient, noting when each read began and whether
    it brought anything past the cursor (follow reads past its cursor only: anything is new)."""

    def __init__(self, client: HubClient) -> None:
        self._client = client
        self.last_empty_read_began = 0.0  # time.monotonic() at the start of the last empty read
        self.reads = 0

    def read(self, query: ReadQuery = ReadQuery()) -> ReadResult:
        began = time.monotonic()
        result = self._client.read(query)
        self.reads += 1
        if not result.items:
            self.last_empty_read_began = began
        return result

    def mark_read(self, message_ids: Any) -> Any:  # follow calls it only when marking: never here
        return self._client.mark_read(message_ids)


def address_of(session: dict[str, Any], form: str) -> str:
    if form == "name":
        return session["agent"]
    if form == "machine":
        return f"{session['agent']}@{session['machine']}"
    return f"{session['agent']}@{session['machine']}#{session['pid']}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="this session's name in the test's files")
    parser.add_argument("--out", required=True, type=Path, help="the folder of the JSONL files")
    parser.add_argument("--control", required=True, type=Path, help="the folder of roster.json and stop")
    parser.add_argument("--count", type=int, default=0, help="messages to send")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--heartbeat", type=float, default=1.0, help="seconds between heartbeats")
    parser.add_argument("--rate", type=float, default=0.0, help="sends per second (0: one after another)")
    args = parser.parse_args(argv)

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    settings = Settings.load()
    agent = os.environ["CALLBOARD_AGENT"]
    received = Journal(args.out / f"{args.label}.recv.jsonl")
    sent = Journal(args.out / f"{args.label}.send.jsonl")
    beats = Journal(args.out / f"{args.label}.beats.jsonl")

    keeper = SessionKeeper(
        JournaledBeats(hub_client(settings, agent), beats),  # type: ignore[arg-type]  (duck-typed: the keeper's calls)
        on_parent_gone=lambda: None,  # its "parent" is this very process
        parent=os.getpid(),
        every=args.heartbeat,
    )
    keeper.start(runtime="load")
    if keeper.session is None:
        print(f"{args.label}: could not register a session", file=sys.stderr)
        return 1
    session = keeper.session

    def in_session() -> HubClient:
        assert settings.hub is not None
        return HubClient(
            settings.hub,
            settings.token,
            agent,
            settings.workspace,
            ca_cert=settings.ca_cert,
            session=SessionHint(session_id=session.id),
        )

    # --- the follower: every delivery this session sees, in order, from the mailbox's start ---
    reader = WatchedReads(in_session())
    follower_stop = threading.Event()
    unreachable = [0]
    cursor = [0]

    def deliver(item: MailItem) -> None:
        received.write({"id": item.message.id, "seq": item.seq, "t": time.time(), "from": item.message.sender_address})

    def on_unreachable(error: CallboardError, delay: float) -> None:
        unreachable[0] += 1

    def run_follower() -> None:
        cursor[0] = follow(
            reader,  # type: ignore[arg-type]  (duck-typed: follow only reads)
            deliver,
            stop=follower_stop,
            after=0,
            mark_read=False,
            on_unreachable=on_unreachable,
            wait=FOLLOW_WAIT_SECONDS,
        )

    follower = threading.Thread(target=run_follower, name="follower", daemon=True)
    follower.start()
    say({"ready": args.label, **session.model_dump(mode="json")})

    # --- the sender: its share, at random over the roster ---
    roster_file = args.control / "roster.json"
    while not roster_file.exists():
        if stopping.wait(POLL_SECONDS):
            break
    if args.count and not stopping.is_set():
        roster = json.loads(roster_file.read_text())
        others = [s for s in roster["sessions"] if s["agent"] != agent]
        rng = random.Random(args.seed)
        client = in_session()
        started = time.monotonic()
        for n in range(args.count):
            if stopping.is_set():
                break
            if args.rate > 0:
                time.sleep(max(0.0, started + n / args.rate - time.monotonic()))
            pick = rng.choice(others)
            form = rng.choice(FORMS)
            to = address_of(pick, form)
            key = f"{args.label}-{session.pid}-{n}"
            record: dict[str, Any] = {"key": key, "to": to, "form": form, "pick": pick["label"]}
            record["t0"] = time.time()
            try:
                result = client.send(SendRequest(to=to, text=f"{args.label} #{n}", idempotency_key=key))
            except CallboardError as error:
                record.update(t1=time.time(), error=error.code, message=error.message[:300])
            else:
                [outcome] = result.recipients
                record.update(
                    t1=time.time(),
                    id=result.message_id,
                    session=outcome.session,
                    state=outcome.state,
                    agent=outcome.agent,
                    duplicate=result.duplicate,
                )
            sent.write(record)
        client.close()
    say({"sent": args.count, "unreachable_reads": unreachable[0]})

    # --- the drain: after the stop, until a read that began after it found nothing new ---
    stop_file = args.control / "stop"
    while not stop_file.exists() and not stopping.is_set():
        time.sleep(POLL_SECONDS)
    stopped_at = time.monotonic()
    say({"stopping": True})
    while reader.last_empty_read_began <= stopped_at and follower.is_alive():
        time.sleep(POLL_SECONDS)
    say({"caught_up": True})
    follower_stop.set()
    follower.join(FOLLOW_WAIT_SECONDS + 35)
    keeper.stop()
    received.close()
    sent.close()
    beats.close()
    say({"drained": cursor[0], "reads": reader.reads, "unreachable_reads": unreachable[0]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
