"""Benchmark of the commands a worker agent runs: the whole ``callboard`` process of each, warm
(through the warm server, as a worker's commands run) and cold (``CALLBOARD_WARM=0``: the
command in its own process), with ``send`` as the baseline in the same run.

A worker of an A2A task reads its mail, updates the task, shows it, posts, looks who is there;
each command is a new process its agent CLI waits for, so the figure is the wall time of that
process (interpreter start, the thin client, the served command, exit) on an embedded store in
a temporary CALLBOARD_HOME. The rounds go round the commands in turn, so the machine's noise
hits each alike. Every run must exit 0.

Run from the project root:
    .venv/bin/python bench/cli_start.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure (``<command>_ms_p50`` warm,
``<command>_cold_ms_p50`` cold, ``<command>_over_send`` the warm median over send's).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchFailure, callboard_argv, ms, percentile, report  # noqa: E402

RUN_TIMEOUT_S = 60.0
WARM_TIMEOUT_S = 60.0
WORKER, ASKER = "bench-worker", "bench-asker"


@dataclass(frozen=True)
class Params:
    warmup: int = 2
    runs: int = 20
    cold: bool = True  # also measure each command in its own process


QUICK = Params(warmup=1, runs=5)


class Machine:
    """An isolated HOME and CALLBOARD_HOME with an embedded store."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "home").mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("CALLBOARD_", "XDG_"))}
        self.env.update(HOME=str(folder / "home"), CALLBOARD_HOME=str(folder / "callboard-home"))

    def run(self, args: list[str], agent: str = WORKER, **env: str) -> tuple[float, subprocess.CompletedProcess[str]]:
        began = time.perf_counter()
        proc = subprocess.run(
            [*callboard_argv(), *args],
            env={**self.env, "CALLBOARD_AGENT": agent, **env},
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        took = time.perf_counter() - began
        if proc.returncode != 0:
            raise BenchFailure(
                f"callboard {' '.join(args)}: exit {proc.returncode}: {(proc.stdout + proc.stderr)[-500:]}"
            )
        return took, proc

    def output(self, args: list[str], agent: str = WORKER) -> str:
        return self.run(args, agent)[1].stdout

    def task(self) -> str:
        """A new task asked of the worker; its id."""
        return json.loads(self.output(["task", "send", WORKER, "review it", "--json"], ASKER))["task"]["id"]

    def warm(self) -> None:
        """Start the warm server and wait until it serves (its socket answers)."""
        self.run(["read", "--peek"])
        sock = Path(self.env["CALLBOARD_HOME"]) / "warm.sock"
        deadline = time.monotonic() + WARM_TIMEOUT_S
        while not sock.exists():
            if time.monotonic() > deadline:
                raise BenchFailure("the warm server did not start")
            time.sleep(0.05)


def commands(machine: Machine) -> dict[str, tuple[Callable[[], list[str]], Callable[[], None]]]:
    """Each measured command: its arguments (made when it runs: ``@task`` is the worker's task,
    ``@cancel`` a fresh task of the asker's) and what must happen before each run."""
    ready = {"task": machine.task()}

    def fresh_task() -> None:
        ready["cancel"] = machine.task()

    def nothing() -> None:
        pass

    table = {
        "send": (["send", ASKER, "hello"], nothing),
        "task_update": (["task", "update", "@task", "--state", "working", "--message", "on it"], nothing),
        "task_show": (["task", "show", "@task"], nothing),
        "task_list": (["task", "list"], nothing),
        "task_send": (["task", "send", ASKER, "look at this"], nothing),
        "task_cancel": (["task", "cancel", "@cancel"], fresh_task),  # the asker's
        "read": (["read"], nothing),
        "inbox": (["inbox"], nothing),
        "who": (["who"], nothing),
        "whoami": (["whoami"], nothing),
        "agent_list": (["agent", "list"], nothing),
        "agent_card": (["agent", "card", WORKER], nothing),
        "channel_post": (["channel", "post", "#bench", "progress"], nothing),
        "channel_list": (["channel", "list"], nothing),
    }

    def made(words: list[str]) -> Callable[[], list[str]]:
        return lambda: [ready[w[1:]] if w.startswith("@") else w for w in words]

    return {name: (made(words), before) for name, (words, before) in table.items()}


def measure(machine: Machine, params: Params, cold: bool) -> dict[str, list[float]]:
    """Round after round, each command once: its wall times in ms."""
    table = commands(machine)
    times: dict[str, list[float]] = {name: [] for name in table}
    extra = {"CALLBOARD_WARM": "0"} if cold else {}
    for round_ in range(params.warmup + params.runs):
        for name, (argv, before) in table.items():
            before()
            agent = ASKER if name == "task_cancel" else WORKER
            took, _ = machine.run(argv(), agent, **extra)
            if round_ >= params.warmup:
                times[name].append(took * 1000)
    return times


def run(params: Params, folder: Path) -> dict[str, float]:
    figures: dict[str, float] = {}
    machine = Machine(folder)
    machine.warm()
    machine.run(["channel", "create", "#bench"])
    machine.run(["channel", "join", "#bench"], ASKER)  # a post reaches someone
    warm = measure(machine, params, cold=False)
    cold = measure(machine, params, cold=True) if params.cold else {}
    base = percentile(warm["send"], 50)
    print(f"  {'command':14} {'warm median':>14} {'x send':>7} {'cold median':>14}")
    for name, values in warm.items():
        p50 = percentile(values, 50)
        figures[f"{name}_ms_p50"] = p50
        figures[f"{name}_ms_p95"] = percentile(values, 95)
        figures[f"{name}_over_send"] = p50 / base
        line = f"  {name:14} {ms(p50):>14} {p50 / base:7.2f}"
        if name in cold:
            figures[f"{name}_cold_ms_p50"] = percentile(cold[name], 50)
            line += f" {ms(figures[f'{name}_cold_ms_p50']):>14}"
        print(line)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few runs per command, for a smoke check")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold runs")
    parser.add_argument("--dir", help="make the temporary folder (and the store) here")
    args = parser.parse_args()
    params = QUICK if args.quick else Params()
    if args.no_cold:
        params = Params(params.warmup, params.runs, cold=False)
    began = time.monotonic()
    print(f"cores {os.cpu_count()}, python {platform.python_version()}, {params}")
    failures: list[str] = []
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="cb-cli-start-", dir=args.dir) as folder:
        try:
            figures = run(params, Path(folder))
        except BenchFailure as failure:
            print(f"FAIL: {failure}")
            failures.append(str(failure))
        finally:
            _stop_warm_server(Path(folder) / "callboard-home")
    return report(figures, failures, params, began)


def _stop_warm_server(home: Path) -> None:
    """The warm server ends when its socket is removed (within a second)."""
    (home / "warm.sock").unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
