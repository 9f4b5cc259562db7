"""Benchmark of the multi-machine load scenario: 50 agents on two network namespaces exchange
messages through a TLS hub on a third while one session is SIGKILLed and one link flaps.

It runs exactly the scenario of ``tests/machines/test_load.py`` (``run_scenario``: see that
module's doc for the layout, the disturbances and every check) on a fresh ``Network``
(``tests/support/netns.py``), and prints its figures: sends per second acknowledged, the
delivery latency p50/p99/max from each send's acknowledgement and from its start to the intended
session's follower handing the message on, the send call's own time, and the counts (refused by
code, left in the killed session's mailbox, read by a sibling while its session was not live).
Rounds are separate networks; the summary is the median over rounds.

Needs root (network namespaces) and the ``ip`` and ``openssl`` commands. Run from the project root:

    .venv/bin/python bench/machines_load.py                  # 20,000 messages, 1 round (~1-2 min)
    .venv/bin/python bench/machines_load.py --rounds 3
    .venv/bin/python bench/machines_load.py --messages 50000 --rate 20   # paced: 20 sends/s per session
    .venv/bin/python bench/machines_load.py --quick          # 2,000 messages (smoke check)

The last line printed is one JSON object with every figure; the exit status is 1 (after
``FAIL:`` lines) if any check of any round failed.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tests package (tests/support/netns.py, tests/machines/test_load.py)
sys.path.insert(1, str(ROOT / "bench"))  # common.py
from common import report  # noqa: E402

from tests.machines.test_load import LoadParams, LoadRun, run_scenario  # noqa: E402
from tests.support.netns import Network, unavailable_reason  # noqa: E402

MEDIAN_KEYS = (
    ("acknowledged_per_second", None),
    ("latency_from_ack_ms", "p50"),
    ("latency_from_ack_ms", "p99"),
    ("latency_from_ack_ms_outside_flap", "p50"),
    ("latency_from_ack_ms_outside_flap", "p99"),
    ("latency_from_send_start_ms", "p50"),
    ("latency_from_send_start_ms", "p99"),
    ("send_call_ms", "p50"),
    ("send_call_ms", "p99"),
)


def one_round(params: LoadParams, base: str | None, n: int) -> LoadRun:
    with tempfile.TemporaryDirectory(prefix="callboard-bench-machines-", dir=base) as tmp:
        root = Path(tmp)
        with Network(root / "network", liveness_seconds=params.liveness_seconds) as network:
            if not network.liveness_option:
                raise SystemExit("FAIL: 'callboard up' does not take --liveness-seconds")
            run = run_scenario(network, params, root / "load", log=lambda line: print(f"  round {n}: {line}"))
        print(run.render())
        return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 messages, for a smoke check")
    parser.add_argument("--messages", type=int, help="messages in all (default 20,000)")
    parser.add_argument("--rate", type=float, default=0.0, help="sends per second per session (0: closed loop)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--dir", help="make the temporary folders (and the hub's database) here")
    args = parser.parse_args(argv)
    if (why := unavailable_reason()) is not None:
        print(f"FAIL: no network namespaces here: {why}")
        return 1
    params = LoadParams(rate=args.rate)
    if args.quick or args.messages:
        params = replace(params, messages=args.messages or 2_000)

    print("Callboard multi-machine load benchmark")
    print(f"machine: {os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}")
    print(f"parameters: {params}")
    began = time.monotonic()
    runs: list[LoadRun] = []
    failures: list[str] = []
    for n in range(1, args.rounds + 1):
        run = one_round(params, args.dir, n)
        runs.append(run)
        for failure in run.failures:
            print(f"FAIL: round {n}: {failure}")
            failures.append(f"round {n}: {failure}")

    figures: dict[str, object] = {"cores": os.cpu_count(), "rounds": len(runs)}
    for key, part in MEDIAN_KEYS:
        values = [r.figures[key] if part is None else r.figures[key].get(part) for r in runs]
        values = [v for v in values if v is not None]
        if values:
            figures[f"{key}_{part}" if part else key] = statistics.median(values)
    last = runs[-1].figures
    for key in ("sends", "acknowledged", "refused", "seconds", "killed_session", "flap"):
        figures[f"last_round_{key}"] = last.get(key)
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
