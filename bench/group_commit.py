"""Benchmark of group commit: durable insert_message throughput from 1 and 32 threads.

One process, one ``SQLiteStore`` shared by every thread, as the hub uses it. Each thread
calls ``store.insert_message`` (one recipient, a short text, a fresh message each time) in a
loop until a common deadline; the rate is every message stored divided by the wall time from
the common start barrier to the last thread's finish. Both modes run on fresh files with the
store's own durable settings (WAL, ``synchronous=FULL``: every acknowledged write is fsynced):

- ``inline``: each call is its own transaction and its own fsync (what the CLI does);
- ``group``: a writer thread runs every call waiting at that moment as one transaction.

After each round the recipient's mailbox must hold exactly the messages stored, numbered
1..N (else a FAIL line and exit status 1). ``commits`` is the number of transactions the
store committed in the round: ``sends / commits`` is the mean batch size.

Run from the project root:  .venv/bin/python bench/group_commit.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
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
from datetime import UTC, datetime
from pathlib import Path

try:
    import switchboard  # noqa: F401
except ImportError:  # running from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchFailure  # noqa: E402

from switchboard.model import DeliveryState, Message, Part, RecipientOutcome, SendResult, new_id
from switchboard.store.base import NewDelivery
from switchboard.store.sqlite import SQLiteStore

WORKSPACE = "bench"
RECIPIENT = "recipient"
TEXT = "hello"


def insert_one(store: SQLiteStore, sender: str) -> None:
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
    store.insert_message(message, [NewDelivery(RECIPIENT, DeliveryState.queued)], result, None, None)


def one_round(folder: Path, group_commit: bool, threads: int, seconds: float) -> dict[str, float]:
    path = folder / f"bench-{new_id()}.db"
    store = SQLiteStore(path, group_commit=group_commit)
    try:
        now = datetime.now(UTC)
        store.ensure_workspace(WORKSPACE, now)
        senders = [f"sender-{i}" for i in range(threads)]
        for agent in [RECIPIENT, *senders]:
            store.ensure_agent(WORKSPACE, agent, now)
        commits_before = store._db.commits
        start = threading.Barrier(threads + 1)
        counts = [0] * threads
        times: list[list[float]] = [[] for _ in range(threads)]
        finished = [0.0] * threads
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

        workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        began = time.monotonic()
        deadline_box.append(began + seconds)
        start.wait(60)
        for worker in workers:
            worker.join(seconds + 120)
        if errors or any(w.is_alive() for w in workers):
            raise BenchFailure(f"a thread failed or never finished: {errors[:1]}")
        elapsed = max(finished) - began
        sent = sum(counts)
        commits = store._db.commits - commits_before
        if store.last_seq(WORKSPACE, RECIPIENT) != sent or store.unread_count(WORKSPACE, RECIPIENT) != sent:
            raise BenchFailure(f"the mailbox does not hold exactly the {sent} messages stored")
    finally:
        store.close()
    with sqlite3.connect(path) as check:  # numbered 1..N, without gaps, seen from outside
        seqs = [
            r[0] for r in check.execute("SELECT seq FROM deliveries WHERE recipient = ? ORDER BY seq", (RECIPIENT,))
        ]
    if seqs != list(range(1, sent + 1)):
        raise BenchFailure("the recipient's sequence numbers have gaps or repeats")
    every = sorted(t for per_thread in times for t in per_thread)
    return {
        "rate": sent / elapsed,
        "sends": sent,
        "commits": commits,
        "batch": sent / max(commits, 1),
        "ms_p50": statistics.median(every),
        "ms_p99": every[min(len(every) - 1, int(len(every) * 0.99))],
    }


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
    print(f"{rounds} round(s) of {seconds:g} s per case; insert_message to one recipient, durable (synchronous=FULL)")
    try:
        with tempfile.TemporaryDirectory(prefix="switchboard-bench-", dir=args.dir) as folder:
            for mode, group_commit in (("inline", False), ("group", True)):
                for threads in (1, 32):
                    results = [one_round(Path(folder), group_commit, threads, seconds) for _ in range(rounds)]
                    for r in results:
                        print(
                            f"  {mode:6} {threads:2} thread(s): {r['rate']:8.0f} sends/s  "
                            f"({r['sends']:.0f} sends, {r['commits']:.0f} commits, mean batch {r['batch']:.1f}; "
                            f"per send p50 {r['ms_p50']:.2f} ms, p99 {r['ms_p99']:.2f} ms)"
                        )
                    case = f"{mode}_{threads}t"
                    figures[f"sends_per_second_{case}"] = statistics.median(r["rate"] for r in results)
                    figures[f"mean_batch_{case}"] = statistics.median(r["batch"] for r in results)
                    figures[f"send_ms_p50_{case}"] = statistics.median(r["ms_p50"] for r in results)
                    figures[f"send_ms_p99_{case}"] = statistics.median(r["ms_p99"] for r in results)
    except BenchFailure as failure:
        print(f"FAIL: {failure}")
        return 1
    print("medians over the rounds:")
    for threads in (1, 32):
        inline, group = figures[f"sends_per_second_inline_{threads}t"], figures[f"sends_per_second_group_{threads}t"]
        print(f"  {threads:2} thread(s): inline {inline:8.0f}/s   group {group:8.0f}/s   x{group / inline:.1f}")  # type: ignore[operator]
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
