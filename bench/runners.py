"""Benchmark: how soon an idle Claude Code runner acts on mail, against the raw socket frame and a
polling loop, and what an idle runner costs.

Real Claude Code (the CLAUDE_CODE_CURRENT pin of tests/agent_clis_e2e/conftest.py, from the npm
cache the client tests use; installed there if missing) against local mock models
(tests/support/mock_model.py), each part on a machine of its own (HOME, fresh embedded store):

- ``runner``: ``callboard run --agent alice --cli claude`` as a real process (its Claude Code
  found through CALLBOARD_CLAUDE_BIN); bob sends alice a message **in process** (a LocalClient
  on the same store, opened once: the figure is delivery, not a Python start) → the mock model
  reading the request that carries it. Before each message the runner reports itself idle with
  the previous turn counted, and 20-80 ms have passed.
- ``frame``: a plain idle Claude Code session (no Callboard) gets a frame written straight into
  its messaging socket (``claude_sessions.write_frame``, as bench/claude_wake.py) → the request.
  Claude Code's own latency, measured in the same run, alternating with the runner's messages.
  Aim: the runner's p50 and p95 within 2x of the frame's.
- ``idle``: the runner's CPU (the runner and its whole process tree, /proc stat ticks) over a
  minute with no mail, and the model requests it made meanwhile (must be 0).
- ``poll``: the published loop's way (wave2-anchors section 3): ``claude -p`` started 60 s after
  the last one ended, its model told to check the inbox (it calls our read_messages tool through
  ``callboard mcp``); a message sent at a random moment → the first request that carries it.
  Its backoff (+60 s per idle tick) is left out: the figure is its best case. ``--quick`` uses
  a 10 s period and a 15 s idle window, and says so in the output.

Run from the project root:  python3 bench/runners.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure; aims missed are listed in
``aims_missed`` (an aim is not a check: the run still passes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402  (the client-test machinery reports its failures with pytest.fail)
from common import BenchFailure, ms, percentile, report  # noqa: E402

from callboard.integrations.claude_code import sessions as claude_sessions  # noqa: E402
from callboard.requests import SendRequest  # noqa: E402
from tests.agent_clis_e2e.conftest import CLAUDE_CODE_CURRENT, LiveCli, Machine, claude_code_env, install  # noqa: E402
from tests.support.mock_model import MockModel  # noqa: E402
from tests.support.runner_process import RunnerProcess  # noqa: E402

HEADLESS = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
WAKE_TIMEOUT_S = 60.0
START_TIMEOUT_S = 120.0
AIM_RATIO = 2.0  # runner within 2x of the raw frame
SENDERS = ("bob", "carol", "erin", "frank", "grace", "heidi")
TICK_PROMPT = "Check your inbox with read_messages and act on what you find; if nothing needs you, end."


@dataclass(frozen=True)
class Params:
    warmup: int = 3  # per path, not counted
    messages: int = 20  # per path
    idle_seconds: float = 60.0
    poll_period: float = 60.0  # the published loop's MIN_SLEEP
    poll_samples: int = 4


QUICK = Params(warmup=1, messages=5, idle_seconds=15.0, poll_period=10.0, poll_samples=2)


def wait(condition: Callable[[], Any], timeout: float, what: str, alive: Callable[[], bool] = lambda: True) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if not alive():
            raise BenchFailure(f"the process under test exited while waiting for {what}")
        if time.monotonic() > deadline:
            raise BenchFailure(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.001)
    return value


# --- the parts ---------------------------------------------------------------------------------


def plain_session(machine: Machine, model: MockModel, claude: Path, tmp: Path) -> tuple[LiveCli, str]:
    """A Claude Code with no Callboard, after its first turn; its messaging socket."""
    session = machine.start([claude, *HEADLESS], claude_code_env(machine, model, {"TMPDIR": str(tmp)}))
    session.say("Hello. Nothing to do yet.")
    wait(
        lambda: session.results(),
        START_TIMEOUT_S,
        "the plain session's first turn",
        lambda: session.process.poll() is None,
    )
    socket = next(e for e in session.events() if e.get("subtype") == "init").get("messaging_socket_path")
    if not socket:
        raise BenchFailure("the plain Claude Code session has no messaging socket")
    return session, socket


def start_runner(machine: Machine, model: MockModel, claude: Path, tmp: Path) -> RunnerProcess:
    """``callboard run --agent alice --cli claude`` on ``machine``, its Claude Code against ``model``."""
    env = claude_code_env(machine, model, {"TMPDIR": str(tmp), "CALLBOARD_CLAUDE_BIN": str(claude)})
    runner = RunnerProcess(machine, "alice", "claude", env)
    runner.turns = 0  # type: ignore[attr-defined]
    return runner


def runner_idle(runner: RunnerProcess) -> bool:
    """The runner reports itself idle with every turn sent to it counted."""
    report = runner.report()
    return report is not None and report.state == "idle" and report.turns >= runner.turns  # type: ignore[attr-defined]


def runner_alive(runner: RunnerProcess) -> bool:
    return runner.process.poll() is None


def measure_wakes(
    params: Params, runner: RunnerProcess, runner_model: MockModel, frame: tuple[LiveCli, str], frame_model: MockModel
) -> dict[str, list[float]]:
    """Alternate runner and frame messages; send → the model request carrying each."""
    session, socket = frame
    times: dict[str, list[float]] = {"runner": [], "frame": []}
    frame_turns = len(session.results())
    with contextlib.ExitStack() as stack:
        senders = [stack.enter_context(runner.machine.client(name)) for name in SENDERS]
        for i in range(2 * (params.warmup + params.messages)):
            path = ("runner", "frame")[i % 2]
            nonce = f"wake-{i}-{uuid.uuid4().hex[:8]}"
            text = f"Message {nonce} for you."
            if path == "runner":
                wait(
                    lambda: runner_idle(runner),
                    WAKE_TIMEOUT_S,
                    "the runner to report itself idle",
                    lambda: runner_alive(runner),
                )
                model = runner_model
            else:
                wait(lambda n=frame_turns: len(session.results()) >= n, WAKE_TIMEOUT_S, "the plain session's turn")
                model = frame_model
            time.sleep(random.uniform(0.02, 0.08))
            began = time.monotonic()
            if path == "runner":
                # Senders in turn: one sender's 20+ messages a minute is a flood the guard holds
                # back (guards.py), and the bench measures delivery, not the guard.
                senders[(i // 2) % len(senders)].send(SendRequest(to="alice", text=text))
                runner.turns += 1
            else:
                claude_sessions.write_frame(socket, text)
                frame_turns += 1
            (request, *_) = wait(
                lambda m=model, n=nonce: m.requests_mentioning(n), WAKE_TIMEOUT_S, f"the request for {nonce}"
            )
            if i // 2 >= params.warmup:
                times[path].append(request.at - began)
            print(f"  {path:6s} {nonce}: {ms((request.at - began) * 1000)}")
    wait(lambda: runner_idle(runner), WAKE_TIMEOUT_S, "the runner's last turn", lambda: runner_alive(runner))
    return times


def tree_ticks(root: int) -> dict[int, int]:
    """CPU ticks (user + system, with reaped children's) of ``root`` and each descendant, from /proc."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        ticks[int(entry.name)] = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return {pid: ticks.get(pid, 0) for pid in tree}


def measure_idle(params: Params, runner: RunnerProcess, model: MockModel) -> dict[str, float]:
    """The idle runner's CPU over the window, and the model requests it made meanwhile."""
    requests = len(model.model_requests())
    root = runner.process.pid
    before, began = tree_ticks(root), time.monotonic()
    time.sleep(params.idle_seconds)
    after, elapsed = tree_ticks(root), time.monotonic() - began
    tick = os.sysconf("SC_CLK_TCK")
    spent = {pid: (ticks - before.get(pid, 0)) / tick for pid, ticks in after.items()}
    cpu_seconds, own = sum(spent.values()), spent.get(root, 0.0)
    return {
        "idle_seconds": elapsed,
        "idle_cpu_seconds": cpu_seconds,
        "idle_cpu_percent": 100 * cpu_seconds / elapsed,
        "idle_cpu_percent_runner": 100 * own / elapsed,  # the runner's own process
        "idle_cpu_percent_cli": 100 * (cpu_seconds - own) / elapsed,  # Claude Code and its MCP server
        "idle_model_requests": len(model.model_requests()) - requests,
    }


def measure_polling(params: Params, machine: Machine, claude: Path, tmp: Path) -> list[float]:
    """The published loop: ``claude -p`` every ``poll_period`` after the last tick ended."""
    stop = threading.Event()
    with MockModel(tool_input={}, tool="read_messages", final_text="Nothing else.") as model:
        server = machine.mcp_server("alice")
        config = json.dumps({"mcpServers": {"callboard": {"type": "stdio", **server}}})
        argv = [str(claude), "-p", TICK_PROMPT, "--mcp-config", config, "--strict-mcp-config"]
        argv += ["--allowedTools", "mcp__callboard__read_messages"]
        env = claude_code_env(machine, model, {"TMPDIR": str(tmp)})

        def loop() -> None:
            while not stop.is_set():
                subprocess.run(
                    argv, env=env, cwd=machine.workdir, capture_output=True, stdin=subprocess.DEVNULL, timeout=120
                )
                stop.wait(params.poll_period)

        ticker = threading.Thread(target=loop, name="polling loop", daemon=True)
        ticker.start()
        times = []
        try:
            with machine.client("bob") as bob:
                for i in range(params.poll_samples):
                    time.sleep(random.uniform(0, params.poll_period))  # a random phase of the loop
                    nonce = f"poll-{i}-{uuid.uuid4().hex[:8]}"
                    began = time.monotonic()
                    bob.send(SendRequest(to="alice", text=f"Message {nonce} for you."))
                    timeout = 2 * params.poll_period + WAKE_TIMEOUT_S
                    (request, *_) = wait(
                        lambda nonce=nonce: model.requests_mentioning(nonce), timeout, f"the tick that reads {nonce}"
                    )
                    times.append(request.at - began)
                    print(f"  poll   {nonce}: {ms((request.at - began) * 1000)}")
        finally:
            stop.set()
            ticker.join(timeout=150)
    return times


# --- the run -----------------------------------------------------------------------------------


def run(params: Params, folder: Path) -> dict[str, object]:
    try:
        claude = install(CLAUDE_CODE_CURRENT)
    except pytest.fail.Exception as error:
        raise BenchFailure(f"Claude Code {CLAUDE_CODE_CURRENT.version} is not installed: {error}") from None
    machines = {name: Machine(folder / name) for name in ("plain", "runner", "poll")}
    tmp = Path(tempfile.mkdtemp(prefix="cb-rb-"))  # short: a socket path has ~100 bytes
    figures: dict[str, object] = {"claude_code": CLAUDE_CODE_CURRENT.version}
    runner: RunnerProcess | None = None
    with MockModel(tool_input=None) as frame_model, MockModel(tool_input=None) as runner_model:
        try:
            frame = plain_session(machines["plain"], frame_model, claude, tmp)
            runner = start_runner(machines["runner"], runner_model, claude, tmp)
            wait(lambda: runner_idle(runner), START_TIMEOUT_S, "the runner to be idle", lambda: runner_alive(runner))
            times = measure_wakes(params, runner, runner_model, frame, frame_model)
            frame[0].close()
            idle = measure_idle(params, runner, runner_model)
            report_ = runner.report()
        finally:
            if runner is not None:
                try:
                    runner.stop()
                except AssertionError as error:  # it would not end on SIGTERM
                    raise BenchFailure(str(error)[:500]) from None
            for machine in machines.values():
                machine.stop_all()
    times["poll"] = measure_polling(params, machines["poll"], claude, tmp)
    for path, values in times.items():
        p50, p95 = percentile(values, 50) * 1000, percentile(values, 95) * 1000
        figures[path] = {"p50_ms": p50, "p95_ms": p95, "max_ms": max(values) * 1000, "n": len(values)}
        figures.update({f"{path}_ms_p50": p50, f"{path}_ms_p95": p95})
        print(f"{path:6s} send → model request: p50 {ms(p50)}  p95 {ms(p95)}  max {ms(max(values) * 1000)}")
    figures.update(idle)
    figures["poll_period_s"] = params.poll_period
    figures["runner_turns_reported"] = getattr(report_, "turns", None)
    figures["runner_cost_usd_reported"] = getattr(report_, "cost_usd", None)
    figures["ratios"] = {
        "runner_p50_over_frame_p50": figures["runner_ms_p50"] / figures["frame_ms_p50"],  # type: ignore[operator]
        "runner_p95_over_frame_p95": figures["runner_ms_p95"] / figures["frame_ms_p95"],  # type: ignore[operator]
    }
    print(
        f"idle runner over {idle['idle_seconds']:.0f} s: CPU {idle['idle_cpu_percent']:.2f} % "
        f"(runner {idle['idle_cpu_percent_runner']:.2f} %, CLI tree {idle['idle_cpu_percent_cli']:.2f} %), "
        f"{idle['idle_model_requests']} model requests"
    )
    if idle["idle_model_requests"]:
        raise BenchFailure(f"the idle runner made {idle['idle_model_requests']} model requests (must be 0)")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few messages, a 10 s poll period, a 15 s idle window")
    parser.add_argument("--dir", help="make the temporary folder (and the stores) here")
    args = parser.parse_args()
    params = QUICK if args.quick else Params()
    began = time.monotonic()
    print(f"cores: {os.cpu_count()}; python {sys.version.split()[0]}; params {params}")
    if args.quick:
        print(f"--quick: the polling loop's period is {params.poll_period:g} s (the published loop's is 60 s)")
    failures: list[str] = []
    figures: dict[str, object] = {"cores": os.cpu_count(), "quick": args.quick}
    with tempfile.TemporaryDirectory(prefix="callboard-runners-", dir=args.dir) as folder:
        try:
            figures.update(run(params, Path(folder)))
        except BenchFailure as failure:
            print(f"FAIL: {failure}")
            failures.append(str(failure))
    missed = [
        f"{name} is {ratio:.2f} (aim at most {AIM_RATIO:g})"
        for name, ratio in (figures.get("ratios") or {}).items()  # type: ignore[union-attr]
        if ratio > AIM_RATIO
    ]
    if missed:
        print("aims missed: " + "; ".join(missed))
        figures["aims_missed"] = missed
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
