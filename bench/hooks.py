"""Benchmark of ``callboard hook``: the whole process of each hook with an empty mailbox.

A hook runs as a new process on every prompt, tool call and stop of an agent session, and the
agent waits for it; so the figure is the wall time of the whole process — interpreter start,
imports, reading stdin, looking at the mailbox, exit — as an agent CLI sees it. Each run is
``callboard hook <event>`` (the console script next to this Python, as the acceptance check
runs it) fed Claude Code's stdin JSON for that event, on an embedded store in a temporary
CALLBOARD_HOME whose database exists and holds mail for another agent only. Every run must exit
0 and print nothing (an empty mailbox).

Cases:
- ``prompt``, ``post_tool``, ``stop``: the session was registered by a session-start and no
  heartbeat is due, so each is answered by the quick look (integrations/hooks/probe.py).
- ``prompt_heartbeat_due``: the session's last heartbeat is older than 15 s (reset before each
  run), so the prompt hook loads the service and heartbeats: what a prompt after a pause costs.
- ``session_start``: registers the session (again) and drains nothing.
- ``wake_second``: a waiter already runs for the agent CLI process; the one a Stop starts exits at once.
- ``python_startup``: ``python -c pass``, for scale.

Requirement: ``prompt`` median under 150 ms. Run from the project root:
    .venv/bin/python bench/hooks.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchFailure, callboard_argv, ms, percentile, report  # noqa: E402

AGENT = "bench-agent"
SESSION = "22222222-2222-2222-2222-222222222222"
PROMPT_AIM_MS = 150.0
RUN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Params:
    warmup: int = 3
    runs: int = 40


QUICK = Params(warmup=1, runs=30)


class Machine:
    """An isolated HOME and CALLBOARD_HOME, and a project folder naming the agent."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.project = folder / "project"
        self.project.mkdir()
        (self.project / ".callboard-agent").write_text(AGENT + "\n")
        (folder / "home").mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("CALLBOARD_", "XDG_"))}
        self.env.update(HOME=str(folder / "home"), CALLBOARD_HOME=str(folder / "callboard-home"))
        self.state = folder / "callboard-home" / "hooks" / SESSION / "state.json"

    def stdin(self, event: str) -> str:
        base = {"session_id": SESSION, "transcript_path": str(self.folder / "t.jsonl"), "cwd": str(self.project)}
        extra = {
            "session-start": {"hook_event_name": "SessionStart", "source": "startup"},
            "prompt": {"hook_event_name": "UserPromptSubmit", "prompt": "hi", "permission_mode": "default"},
            "post-tool": {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}},
            "stop": {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "Done."},
        }
        return json.dumps({**base, **extra.get(event, extra["session-start"])})

    def run(self, argv: list[str], stdin: str = "", **env: str) -> tuple[float, subprocess.CompletedProcess[str]]:
        began = time.perf_counter()
        proc = subprocess.run(
            argv,
            input=stdin,
            env={**self.env, **env},
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        return time.perf_counter() - began, proc

    def hook(self, event: str) -> float:
        took, proc = self.run([*callboard_argv(), "hook", event], self.stdin(event))
        if proc.returncode != 0 or proc.stdout or proc.stderr:
            raise BenchFailure(f"hook {event}: exit {proc.returncode}, stdout {proc.stdout!r}, stderr {proc.stderr!r}")
        return took


def measure(
    name: str, params: Params, once: Callable[[], float], before: Callable[[], None] = lambda: None
) -> dict[str, float]:
    """Time ``once`` (its own figure, in seconds) after ``before``: warm-up runs, then counted ones."""
    times = []
    for i in range(params.warmup + params.runs):
        before()
        took = once()
        if i >= params.warmup:
            times.append(took * 1000)
    figures = {f"{name}_ms_p50": percentile(times, 50), f"{name}_ms_p95": percentile(times, 95)}
    p50, p95 = figures[f"{name}_ms_p50"], figures[f"{name}_ms_p95"]
    print(f"  {name:22} median {ms(p50)}  p95 {ms(p95)}  ({len(times)} runs)")
    return figures


def run(params: Params, folder: Path) -> dict[str, float]:
    machine = Machine(folder)
    send = [*callboard_argv(), "send", "someone-else", "not for the bench agent"]
    sent = machine.run(send, CALLBOARD_AGENT="bench-sender")[1]
    if sent.returncode != 0:
        raise BenchFailure(f"send: {(sent.stdout + sent.stderr).strip()}")
    machine.hook("session-start")
    figures: dict[str, float] = {}
    figures |= measure("python_startup", params, lambda: machine.run([sys.executable, "-c", "pass"])[0])
    for event in ("prompt", "post-tool", "stop"):
        figures |= measure(event.replace("-", "_"), params, lambda event=event: machine.hook(event))

    def heartbeat_due() -> None:
        state = json.loads(machine.state.read_text())
        machine.state.write_text(json.dumps({**state, "last_beat": 0}))

    figures |= measure("prompt_heartbeat_due", params, lambda: machine.hook("prompt"), heartbeat_due)
    figures |= measure("session_start", params, lambda: machine.hook("session-start"))
    figures |= measure_second_waiter(machine, params)
    return figures


def measure_second_waiter(machine: Machine, params: Params) -> dict[str, float]:
    first = subprocess.Popen(
        [*callboard_argv(), "hook", "wake"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=machine.env,
        cwd=machine.folder,
        text=True,
    )
    try:
        assert first.stdin is not None
        first.stdin.write(machine.stdin("session-start"))
        first.stdin.close()
        deadline = time.monotonic() + RUN_TIMEOUT_S
        from callboard.integrations.hooks.state import waiter_lock_path
        from callboard.procs import process_start_time

        # One waiter per agent CLI process: here this process stands for the agent CLI.
        lock = waiter_lock_path(Path(machine.env["CALLBOARD_HOME"]), os.getpid(), process_start_time(os.getpid()))
        while not _held(lock):
            if first.poll() is not None or time.monotonic() > deadline:
                raise BenchFailure(f"the first waiter did not take its lock (exit {first.poll()})")
            time.sleep(0.01)
        return measure("wake_second", params, lambda: machine.hook("wake"))
    finally:
        first.kill()
        first.wait()


def _held(lock: Path) -> bool:
    import fcntl

    try:
        with lock.open("a") as file:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def versions() -> dict[str, str]:
    found = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    try:
        found["callboard"] = metadata.version("callboard")
    except metadata.PackageNotFoundError:
        found["callboard"] = "absent"
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (still 30 per case), for a smoke check")
    parser.add_argument("--dir", help="make the temporary folder (and the store) here")
    args = parser.parse_args()
    params = QUICK if args.quick else Params()
    began = time.monotonic()
    print(f"cores: {os.cpu_count()}; {versions()}; params {params}; command {' '.join(callboard_argv())}")
    failures: list[str] = []
    figures: dict[str, object] = {"cores": os.cpu_count(), **versions(), "quick": args.quick}
    with tempfile.TemporaryDirectory(prefix="callboard-hooks-bench-", dir=args.dir) as folder:
        try:
            figures.update(run(params, Path(folder)))
        except BenchFailure as failure:
            print(f"FAIL: {failure}")
            failures.append(str(failure))
    prompt = figures.get("prompt_ms_p50")
    if isinstance(prompt, float):
        print(f"\nempty-mailbox prompt hook: median {prompt:.1f} ms; requirement under {PROMPT_AIM_MS:g} ms")
        if prompt >= PROMPT_AIM_MS:
            failures.append(f"prompt hook median {prompt:.1f} ms >= {PROMPT_AIM_MS:g} ms")
            print(f"FAIL: {failures[-1]}")
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
