"""Benchmark: what a round adds. A three-runner round's wall time beside the sum of its tasks' own
round trips, measured in the same run on the same runners.

Three ``callboard run --cli generic:…`` runners (real processes, the embedded store of a fresh
``CALLBOARD_HOME``) answer with the same program: a round's phase task is answered with ``round
propose`` / ``round vote`` (every one endorses ana), a plain task with ``task update --state
completed``. Each measured round:

- ``round``: ``callboard coordinate --goal … --agents ana,ben,cai --quorum 2`` as a user runs it,
  from its start to its exit with the decision (proposal phase, vote phase, decided at the
  second vote): six phase tasks, six acts.
- ``tasks``: the same six round trips as plain tasks, one after another, each ``callboard task
  send AGENT … --wait`` to a runner (open → the runner's turn → completed → the waiting command
  exits). Their sum is what six agents' turns cost without a round; ``round`` minus ``tasks``
  (and their ratio) is what the round itself adds: its events, its phase changes, the prompts.

Rounds alternate the two so drift hits both; the figures are medians. Run from the project root:
``.venv/bin/python bench/coordination.py [--quick]``; the last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BenchFailure, callboard_argv, report  # noqa: E402

MEMBERS = ("ana", "ben", "cai")
MEMBER = r"""
import json, os, re, subprocess, sys
me = os.environ["CALLBOARD_AGENT"]
done = set()
def cb(*args):
    return subprocess.run([*CALLBOARD, *args], capture_output=True, text=True).stdout
print(json.dumps({"type": "session", "id": "bench-" + me}), flush=True)
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("type") != "prompt":
        continue
    for r in json.loads(cb("round", "list", "--json") or "[]"):
        key = (r["id"], r["epoch"], r["phase"])
        if key in done or r.get("mine") is None:
            continue
        if r["mine"] == "propose":
            path = os.path.join(os.getcwd(), me + ".txt")
            open(path, "w").write("solution by " + me + "\n")
            cb("round", "propose", r["id"], "--file", path, "--epoch", str(r["epoch"]))
        else:
            cb("round", "vote", r["id"], "--for", "ana", "--epoch", str(r["epoch"]))
        done.add(key)
    for task in re.findall(r"task: ([0-9a-f-]{36})", msg.get("text", "")):
        if "PING" in msg.get("text", "") and task not in done:
            cb("task", "update", task, "--state", "completed", "--message", "pong")
            done.add(task)
    print(json.dumps({"type": "done", "id": msg.get("id")}), flush=True)
"""


@dataclass(frozen=True)
class Params:
    rounds: int
    warmup: int


FULL = Params(rounds=5, warmup=1)
QUICK = Params(rounds=2, warmup=1)


class Team:
    """Three runners on one machine's embedded store, and the commands a user types."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CALLBOARD_")},
            "CALLBOARD_HOME": str(folder / "home"),
            "HOME": str(folder),
        }
        self.member = folder / "member.py"
        self.member.write_text(f"CALLBOARD = {callboard_argv()!r}\n" + MEMBER)
        self.runners: list[subprocess.Popen[bytes]] = []

    def cli(self, agent: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*callboard_argv(), *args],
            env={**self.env, "CALLBOARD_AGENT": agent},
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self) -> None:
        for agent in MEMBERS:
            work = self.folder / agent
            work.mkdir()
            argv = [*callboard_argv(), "run", "--agent", agent, "--cli", f"generic:{sys.executable} {self.member}"]
            self.runners.append(
                subprocess.Popen(
                    argv,
                    env={**self.env, "CALLBOARD_AGENT": agent},
                    cwd=work,
                    stdout=subprocess.DEVNULL,
                    stderr=(self.folder / f"{agent}.log").open("wb"),
                )
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            who = json.loads(self.cli("lead", "who", "--json").stdout or "{}")
            live = {a["name"] for a in who.get("agents", []) if a.get("live")}
            if set(MEMBERS) <= live:
                return
            time.sleep(0.2)
        raise BenchFailure("the three runners did not come up within 60 s")

    def stop(self) -> None:
        for runner in self.runners:
            runner.terminate()
        for runner in self.runners:
            try:
                runner.wait(35)
            except subprocess.TimeoutExpired:
                runner.kill()

    def round(self, n: int) -> float:
        began = time.monotonic()
        done = self.cli(
            "lead", "coordinate", "--goal", f"pick one ({n})", "--agents", ",".join(MEMBERS), "--quorum", "2", "--json"
        )
        elapsed = time.monotonic() - began
        if done.returncode != 0 or json.loads(done.stdout)["decision"]["choice"] != "ana":
            raise BenchFailure(f"coordinate failed: {done.stdout[-300:]} {done.stderr[-300:]}")
        return elapsed

    def tasks(self, n: int) -> float:
        total = 0.0
        for i, agent in enumerate([*MEMBERS, *MEMBERS]):
            began = time.monotonic()
            done = self.cli("lead", "task", "send", agent, f"PING {n}-{i}", "--wait", "--timeout", "60", "--json")
            total += time.monotonic() - began
            if done.returncode != 0:
                raise BenchFailure(f"task send --wait failed: {done.stdout[-300:]} {done.stderr[-300:]}")
        return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    params = QUICK if args.quick else FULL
    began = time.monotonic()
    failures: list[str] = []
    figures: dict[str, object] = {"cores": os.cpu_count(), "python": sys.version.split()[0], "quick": args.quick}
    print(f"Callboard coordination benchmark{' (quick)' if args.quick else ''}: {params}")
    with tempfile.TemporaryDirectory(prefix="callboard-bench-coord-") as folder:
        team = Team(Path(folder))
        rounds: list[float] = []
        tasks: list[float] = []
        try:
            team.start()
            for n in range(params.warmup + params.rounds):
                r, t = team.round(n), team.tasks(n)
                print(
                    f"round {n}{' (warm-up)' if n < params.warmup else ''}: round {r * 1000:.0f} ms, "
                    f"six task round trips {t * 1000:.0f} ms"
                )
                if n >= params.warmup:
                    rounds.append(r)
                    tasks.append(t)
        except BenchFailure as failure:
            failures.append(str(failure))
        finally:
            team.stop()
    if rounds:
        round_ms, tasks_ms = statistics.median(rounds) * 1000, statistics.median(tasks) * 1000
        figures.update(
            round_wall_ms=round_ms,
            tasks_sum_ms=tasks_ms,
            round_adds_ms=round_ms - tasks_ms,
            round_over_tasks=round_ms / tasks_ms,
        )
        print(
            f"\nmedian: round {round_ms:.0f} ms; its six tasks' own round trips {tasks_ms:.0f} ms; "
            f"the round adds {round_ms - tasks_ms:+.0f} ms ({round_ms / tasks_ms:.2f}x)"
        )
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
