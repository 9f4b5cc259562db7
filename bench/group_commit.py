"""Benchmark of group commit: durable send throughput from 1 and 32 concurrent senders.

One process, one ``SQLiteStore`` shared by every sender. Each sender stores a fresh message to
one recipient (a short text) in a closed loop until a common deadline; the rate is every
message stored divided by the wall time from the common start to the last sender's finish.
Every mode runs on fresh files with the store's own durable settings (WAL,
``synchronous=FULL``: every acknowledged write is fsynced):

- ``inline``: threads call ``store.submit_message(...).result()``; each call is its own transaction and its
  own fsync (what the CLI does);
- ``thread``: the same threads on ``SQLiteStore(path, group_commit=True)``: a writer thread
  runs every call waiting at that moment as one transaction;
- ``loop``: what the hub does. The senders are coroutines on one uvloop event loop, inside
  ``async with store.committing_on_loop()``; each calls ``store.submit_message`` and awaits
  the outcome with ``callboard.hub.context.settled``. The loop runs each batch's statements
  itself (the sends of a batch as a few multi-row statements) and hands only its COMMIT (the
  fsync) to a committer thread.

After each round the recipient's mailbox must hold exactly the messages stored, numbered
1..N (else a FAIL line and exit status 1). ``commits`` is the number of transactions the
store committed in the round: ``sends / commits`` is the mean batch size. ``cpu`` is the
process's CPU (all threads) per send; in the loop mode ``loop cpu`` is the event-loop thread's
own (``time.thread_time``) per send: that is what bounds the hub, whose loop also serves HTTP.
Keys of the JSON line end in ``_{mode}_{N}t`` for N senders (threads, or coroutines in the
loop mode).

Run from the project root:  .venv/bin/python bench/group_commit.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

try:
    import callboard  # noqa: F401
except ImportError:  # running from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import uvloop  # noqa: E402
from common import BenchFailure  # noqa: E402

from callboard.hub.context import settled
from callboard.model import DeliveryState, Message, Part, RecipientOutcome, SendResult, new_id
from callboard.pending import Pending
from callboard.store.records import NewDelivery
from callboard.store.sqlite.store import SQLiteStore

WORKSPACE = "bench"
RECIPIENT = "recipient"
TEXT = "hello"
MODES = ("inline", "thread", "loop")
SENDERS = (1, 32)
JOIN_GRACE_SECONDS = 120.0  # past the deadline, a sender that has not finished fails the run


def new_send(sender: str) -> tuple[Message, list[NewDelivery], SendResult, None, None]:
    """The arguments of submit_message for one fresh message to RECIPIENT."""
    message_id = new_id()
    now = datetime.now(UTC)
    message = Message(
        id=message_id,
        workspace=WORKSPACE,
        sender=sender,
        recipients=[RECIPIENT],
        parts=[Part(text=TEXT)],
        thread_id=message_id,
        created_at=now,
    )
    result = SendResult(
        message_id=message_id,
        thread_id=message_id,
        created_at=now,
        recipients=[RecipientOutcome(address=RECIPIENT, state="queued", agent=RECIPIENT)],
    )
    return message, [NewDelivery(RECIPIENT, DeliveryState.queued)], result, None, None


def insert_one(store: SQLiteStore, sender: str) -> None:
    store.submit_message(*new_send(sender)).result()


def submit_one(store: SQLiteStore, sender: str) -> Pending[dict[str, int]]:
    return store.submit_message(*new_send(sender))


@dataclass
class Run:
    """What the senders of one round did."""

    counts: list[int]
    times_ms: list[list[float]]  # per sender: each send's time
    elapsed: float  # from the common start to the last sender's finish
    cpu: float  # process CPU seconds (all threads) over the same span
    loop_cpu: float | None = None  # the event-loop thread's own CPU seconds (loop mode)


def run_threads(store: SQLiteStore, senders: list[str], seconds: float) -> Run:
    """One thread per sender, each sending (and waiting for the commit) until the deadline."""
    n = len(senders)
    start = threading.Barrier(n + 1)
    counts = [0] * n
    times: list[list[float]] = [[] for _ in range(n)]
    finished = [0.0] * n
    errors: list[BaseException] = []
    deadline_box: list[float] = []

    def run(index: int) -> None:
        try:
            start.wait(60)
            deadline = deadline_box[0]
            while time.monotonic() < deadline:
                t0 = time.perf_counter()
                insert_one(store, senders[index])
                times[index].append((time.perf_counter() - t0) * 1000)
                counts[index] += 1
            finished[index] = time.monotonic()
        except BaseException as error:
            errors.append(error)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for worker in workers:
        worker.start()
    cpu_before = time.process_time()
    began = time.monotonic()
    deadline_box.append(began + seconds)
    start.wait(60)
    for worker in workers:
        worker.join(seconds + JOIN_GRACE_SECONDS)
    cpu = time.process_time() - cpu_before
    if errors or any(w.is_alive() for w in workers):
        raise BenchFailure(f"a thread failed or never finished: {errors[:1]}")
    return Run(counts, times, max(finished) - began, cpu)


def run_coroutines(store: SQLiteStore, senders: list[str], seconds: float) -> Run:
    """One coroutine per sender on a uvloop event loop that group-commits the store, as the hub."""
    try:
        return uvloop.run(_senders_on_loop(store, senders, seconds))
    except BenchFailure:
        raise
    except Exception as error:
        raise BenchFailure(f"a sender failed or never finished: {error!r}") from error


async def _senders_on_loop(store: SQLiteStore, senders: list[str], seconds: float) -> Run:
    n = len(senders)
    counts = [0] * n
    times: list[list[float]] = [[] for _ in range(n)]
    finished = [0.0] * n
    async with store.committing_on_loop():
        loop_cpu_before, cpu_before = time.thread_time(), time.process_time()
        began = time.monotonic()
        deadline = began + seconds

        async def send(index: int) -> None:
            sender, mine = senders[index], times[index]
            while time.monotonic() < deadline:
                t0 = time.perf_counter()
                await settled(submit_one(store, sender))
                mine.append((time.perf_counter() - t0) * 1000)
                counts[index] += 1
            finished[index] = time.monotonic()

        await asyncio.wait_for(asyncio.gather(*(send(i) for i in range(n))), seconds + JOIN_GRACE_SECONDS)
        loop_cpu, cpu = time.thread_time() - loop_cpu_before, time.process_time() - cpu_before
    return Run(counts, times, max(finished) - began, cpu, loop_cpu)


def one_round(folder: Path, mode: str, senders_count: int, seconds: float) -> dict[str, float]:
    path = folder / f"bench-{new_id()}.db"
    store = SQLiteStore(path, group_commit=mode == "thread")
    try:
        now = datetime.now(UTC)  # setup writes inline, before the loop mode attaches the store
        store.directory.ensure_workspace(WORKSPACE, now)
        senders = [f"sender-{i}" for i in range(senders_count)]
        for agent in [RECIPIENT, *senders]:
            store.directory.ensure_agent(WORKSPACE, agent, now)
        commits_before = store._db.commits
        run = (run_coroutines if mode == "loop" else run_threads)(store, senders, seconds)
        sent = sum(run.counts)
        commits = store._db.commits - commits_before
        if (
            store.mailbox.last_seq(WORKSPACE, RECIPIENT) != sent
            or store.mailbox.unread_count(WORKSPACE, RECIPIENT) != sent
        ):
            raise BenchFailure(f"{mode}: the mailbox does not hold exactly the {sent} messages stored")
    finally:
        store.close()
    with sqlite3.connect(path) as check:  # numbered 1..N, without gaps, seen from outside
        seqs = [
            r[0] for r in check.execute("SELECT seq FROM deliveries WHERE recipient = ? ORDER BY seq", (RECIPIENT,))
        ]
    if seqs != list(range(1, sent + 1)):
        raise BenchFailure(f"{mode}: the recipient's sequence numbers have gaps or repeats")
    every = sorted(t for per_sender in run.times_ms for t in per_sender)
    figures = {
        "rate": sent / run.elapsed,
        "sends": sent,
        "commits": commits,
        "batch": sent / max(commits, 1),
        "ms_p50": statistics.median(every),
        "ms_p99": every[min(len(every) - 1, int(len(every) * 0.99))],
        "cpu_us": run.cpu * 1e6 / max(sent, 1),
    }
    if run.loop_cpu is not None:
        figures["loop_cpu_us"] = run.loop_cpu * 1e6 / max(sent, 1)
    return figures


def round_line(mode: str, senders: int, r: dict[str, float]) -> str:
    kind = "coroutine(s)" if mode == "loop" else "thread(s)"
    loop_cpu = f", loop cpu {r['loop_cpu_us']:.0f} us" if "loop_cpu_us" in r else ""
    return (
        f"  {mode:6} {senders:2} {kind:12}: {r['rate']:8.0f} sends/s  "
        f"({r['sends']:.0f} sends, {r['commits']:.0f} commits, mean batch {r['batch']:.1f}; "
        f"per send p50 {r['ms_p50']:.2f} ms, p99 {r['ms_p99']:.2f} ms, cpu {r['cpu_us']:.0f} us{loop_cpu})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short rounds, for a smoke check")
    parser.add_argument("--dir", help="make the temporary folder here (default: the system temp folder)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each round")
    args = parser.parse_args(argv)
    seconds, rounds = (0.5, 1) if args.quick else (args.seconds, args.rounds)
    figures: dict[str, object] = {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "seconds_per_round": seconds,
        "rounds": rounds,
    }
    print(
        f"machine: {os.cpu_count()} cores, {platform.platform()}; Python {figures['python']}, SQLite {figures['sqlite']}"
    )
    print(
        f"{rounds} round(s) of {seconds:g} s per case; one message to one recipient per send, durable "
        "(synchronous=FULL); modes: inline, thread (group commit on a writer thread), "
        "loop (group commit on a uvloop event loop, as the hub)"
    )
    try:
        with tempfile.TemporaryDirectory(prefix="callboard-bench-", dir=args.dir) as folder:
            for mode in MODES:
                for senders in SENDERS:
                    results = [one_round(Path(folder), mode, senders, seconds) for _ in range(rounds)]
                    for r in results:
                        print(round_line(mode, senders, r))
                    case = f"{mode}_{senders}t"
                    figures[f"sends_per_second_{case}"] = statistics.median(r["rate"] for r in results)
                    figures[f"mean_batch_{case}"] = statistics.median(r["batch"] for r in results)
                    figures[f"send_ms_p50_{case}"] = statistics.median(r["ms_p50"] for r in results)
                    figures[f"send_ms_p99_{case}"] = statistics.median(r["ms_p99"] for r in results)
                    figures[f"cpu_us_per_send_{case}"] = statistics.median(r["cpu_us"] for r in results)
                    if mode == "loop":
                        figures[f"loop_cpu_us_per_send_{case}"] = statistics.median(r["loop_cpu_us"] for r in results)
    except BenchFailure as failure:
        print(f"FAIL: {failure}")
        return 1
    print("medians over the rounds (sends/s, and x the inline rate):")
    for senders in SENDERS:
        inline = float(figures[f"sends_per_second_inline_{senders}t"])  # type: ignore[arg-type]
        parts = [f"inline {inline:8.0f}/s"]
        for mode in MODES[1:]:
            rate = float(figures[f"sends_per_second_{mode}_{senders}t"])  # type: ignore[arg-type]
            parts.append(f"{mode} {rate:8.0f}/s x{rate / inline:.1f}")
        loop_cpu = figures[f"loop_cpu_us_per_send_loop_{senders}t"]
        print(f"  {senders:2} sender(s): {'   '.join(parts)}   (loop thread CPU {loop_cpu:.0f} us/send)")
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
