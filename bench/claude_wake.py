"""Benchmark: how soon a Claude Code session acts on a message, with and without Callboard.

Three real Claude Codes (the version pinned in tests/agent_clis_e2e/conftest.py, from the npm cache the
client tests use; installed there if missing) run headless with stream-json input and their
stdin left open, against the local mock model of tests/support/mock_model.py, each on a machine of its own
(HOME, fresh embedded store, project folder). After its first turn each sits idle:

- the plain session: no Callboard at all (no hooks, no MCP server); its messaging socket on;
- the installed session: a project where ``callboard install claude --scope project`` ran
  (hooks, the ``asyncRewake`` waiter, ``callboard mcp`` from .mcp.json), its socket on;
- the waiter session: installed the same way, with no messaging socket
  (``CLAUDE_CODE_HARBOR_KITE=0``): only the waiter can wake it.

Then, one message at a time, rotating through four paths:

- ``without``: this process writes a frame straight into the plain session's socket
  (``claude_sessions.write_frame``): Claude Code's own latency, for scale;
- ``installed``: the same raw frame into the installed session: what our hooks add to a turn;
- ``socket``: ``callboard send alice …`` as a whole CLI process (as an agent's Bash tool runs
  it, bob on the installed session's machine) → the installed session's model request;
- ``waiter``: the same CLI send on the waiter session's machine → the waiter wakes the session
  (quietly: it prints nothing; the woken turn's UserPromptSubmit hook brings the mail).

Latency: just before the write or the CLI's start → the mock model reading the request that
carries the message. Before each message the previous turn of that session has finished, its
registry says ``idle``, and a random 20-80 ms pause has passed; for the waiter, also the waiter
that the last turn's Stop hook started is waiting on the mailbox. Last, ``python3 -c pass`` and
``callboard send`` (to an agent with no session) alternate as whole processes: their medians.
Aims (the issue): socket p95 within 3x of the raw frame's (without); installed within 1.2x of
without; the CLI send within 5x of a bare Python start.

Run from the project root:  .venv/bin/python bench/claude_wake.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402  (the client-test machinery reports its failures with pytest.fail)
from common import BenchFailure, ms, percentile, report  # noqa: E402

from callboard.config import Settings  # noqa: E402
from callboard.integrations.claude_code import sessions as claude_sessions  # noqa: E402
from callboard.integrations.hooks.state import SessionFiles, session_key  # noqa: E402
from tests.agent_clis_e2e.conftest import CLAUDE_CODE_CURRENT, LiveCli, Machine, claude_code_env, install  # noqa: E402
from tests.support.cli_runner import isolated_env  # noqa: E402
from tests.support.mock_model import MockModel  # noqa: E402

PATHS = ("without", "installed", "socket", "waiter")
SENDERS = ("bob", "carol", "erin", "frank", "grace", "heidi")
AIMS = {  # the aims, as ratios
    "socket_p95_over_without_p95": 3.0,
    "installed_p50_over_without_p50": 1.2,
    "cli_send_over_python_start": 5.0,
}
HEADLESS = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
WAKE_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 30.0
CALLBOARD = Path(sys.executable).with_name("callboard")  # the console script, as agents run it


@dataclass(frozen=True)
class Params:
    warmup: int = 3  # per path, not counted
    messages: int = 30  # per path
    process_runs: int = 15  # python -c pass / callboard send, each


QUICK = Params(warmup=1, messages=5, process_runs=9)


def wait(condition, timeout: float, what: str, session: LiveCli):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if session.process.poll() is not None:
            raise BenchFailure(f"Claude Code exited ({session.process.returncode}) waiting for {what}")
        if time.monotonic() > deadline:
            raise BenchFailure(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.001)
    return value


def first_turn(session: LiveCli) -> LiveCli:
    session.say("Hello. Nothing to do yet.")
    wait(lambda: len(session.results()) == 1, 120, "the first turn", session)
    return session


def start_plain_session(machine: Machine, model: MockModel, claude: Path, tmp: Path) -> LiveCli:
    return first_turn(machine.start([claude, *HEADLESS], claude_code_env(machine, model, {"TMPDIR": str(tmp)})))


def start_installed_session(machine: Machine, model: MockModel, claude: Path, tmp: Path, socket: bool) -> LiveCli:
    machine.install("claude")
    extra = {"TMPDIR": str(tmp), **machine.agent_env("alice")}
    if not socket:
        extra["CLAUDE_CODE_HARBOR_KITE"] = "0"
    # Claude Code's default; with "false" (the client tests') and an MCP server configured,
    # 2.1.332 runs the SessionStart waiter in the foreground and the first turn never starts.
    extra["MCP_CONNECTION_NONBLOCKING"] = "true"
    return first_turn(machine.start([claude, *HEADLESS], claude_code_env(machine, model, extra)))


def socket_path_of(session: LiveCli) -> str | None:
    return next(e for e in session.events() if e.get("subtype") == "init").get("messaging_socket_path")


@dataclass
class Lane:
    """One session the paths wake, and how its readiness is told."""

    name: str
    session: LiveCli
    machine: Machine
    waiter: bool = False
    turns: int = 1

    def ready(self) -> bool:
        entry = claude_sessions.session_of(self.session.pid, {"HOME": str(self.machine.home)})
        if entry is None or entry.status != "idle":
            return False
        return not self.waiter or waiter_waiting(self.machine)


def waiter_waiting(machine: Machine) -> bool:
    """One waiter (the session's) is past its lock and has the store open: it waits on the
    mailbox. A duplicate that a Stop started exits before it opens anything; the hook's shell
    opens nothing."""
    db = str(Settings.load({"CALLBOARD_HOME": str(machine.callboard_home)}).db_path)
    waiting = 0
    for pid in machine.processes("callboard hook wake"):
        try:
            waiting += db in {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
        except OSError:  # gone meanwhile
            continue
    return waiting == 1


def forget_wakes(machine: Machine, session: LiveCli) -> None:
    """Clear the session's record of the waiter's wakes (the wake budget, where there is one)."""
    init = next(e for e in session.events() if e.get("subtype") == "init")
    with SessionFiles(machine.callboard_home, session_key(init["session_id"])).updating() as state:
        if hasattr(state, "wakes"):
            state.wakes = []


def wait_idle(lane: Lane) -> None:
    """The lane's session has finished its turns and is idle (its waiter waiting); then a short random pause."""
    wait(lambda: len(lane.session.results()) >= lane.turns, IDLE_TIMEOUT_S, f"turn {lane.turns}", lane.session)
    wait(lane.ready, IDLE_TIMEOUT_S, f"the {lane.name} session to be idle", lane.session)
    time.sleep(random.uniform(0.02, 0.08))


def cli_env(machine: Machine, agent: str) -> dict[str, str]:
    """A CLI process of ``agent`` on ``machine``: as an agent's Bash tool runs it there."""
    return isolated_env(machine.home, machine.callboard_home, {"CALLBOARD_AGENT": agent, "CLAUDE_CONFIG_DIR": None})


def cli_send(machine: Machine, agent: str, to: str, text: str) -> str:
    """``callboard send`` as a whole process; the message id."""
    proc = subprocess.run(
        [str(CALLBOARD), "send", to, text, "--json"],
        env=cli_env(machine, agent),
        cwd=machine.workdir,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        raise BenchFailure(f"callboard send exited {proc.returncode}: {proc.stderr[-300:]}")
    return json.loads(proc.stdout)["message_id"]


def check_taken(machine: Machine, sent: list[tuple[str, str]]) -> None:
    """Each message reached the session: past queued and delivered (surfaced, or further)."""
    for sender, message_id in sent:
        with machine.client(sender) as status:
            (alice,) = status.message_status(message_id).recipients
        if alice.state in ("queued", "delivered", "held"):
            raise BenchFailure(f"message {message_id} is still {alice.state} after the model had it")


def process_medians(machine: Machine, runs: int) -> dict[str, float]:
    """``python3 -c pass`` and ``callboard send`` (to an agent with no session), alternating as
    whole processes, as the acceptance check measures them: their medians in ms."""
    env = cli_env(machine, "carol")
    base, send = [], []

    def timed(argv: list[str]) -> float:
        began = time.perf_counter()
        proc = subprocess.run(argv, env=env, cwd=machine.workdir, capture_output=True, stdin=subprocess.DEVNULL)
        elapsed = time.perf_counter() - began
        if proc.returncode != 0:
            raise BenchFailure(f"{argv[0]} exited {proc.returncode}: {proc.stderr[-300:]!r}")
        return elapsed

    timed([str(CALLBOARD), "send", "dave", "first"])  # the first one starts the warm server
    for i in range(runs):
        base.append(timed([sys.executable, "-c", "pass"]))
        send.append(timed([str(CALLBOARD), "send", "dave", f"quick {i}"]))
    return {"python_start_ms": statistics.median(base) * 1000, "cli_send_ms": statistics.median(send) * 1000}


def run(params: Params, folder: Path) -> dict[str, object]:
    try:
        claude = install(CLAUDE_CODE_CURRENT)
    except pytest.fail.Exception as error:
        raise BenchFailure(f"Claude Code {CLAUDE_CODE_CURRENT.version} is not installed: {error}") from None
    machines = {name: Machine(folder / f"{name}-machine") for name in ("plain", "installed", "waiter", "processes")}
    sock_tmp = Path(tempfile.mkdtemp(prefix="cb-cc-"))  # short: a socket path has ~100 bytes
    times: dict[str, list[float]] = {path: [] for path in PATHS}
    sent: dict[str, list[tuple[str, str]]] = {"socket": [], "waiter": []}
    with MockModel(tool_input=None) as model:
        try:
            plain = Lane("plain", start_plain_session(machines["plain"], model, claude, sock_tmp), machines["plain"])
            installed = Lane(
                "installed",
                start_installed_session(machines["installed"], model, claude, sock_tmp, socket=True),
                machines["installed"],
            )
            waiter = Lane(
                "waiter",
                start_installed_session(machines["waiter"], model, claude, sock_tmp, socket=False),
                machines["waiter"],
                waiter=True,
            )
            sockets = {"without": socket_path_of(plain.session), "installed": socket_path_of(installed.session)}
            if not all(sockets.values()):
                raise BenchFailure(f"a session has no messaging socket: {sockets}")
            if socket_path_of(waiter.session):
                raise BenchFailure("the waiter session has a messaging socket: the socket would race the waiter")
            wait(
                lambda: machines["installed"].processes("callboard mcp"),
                60,
                "the installed server",
                installed.session,
            )
            init = next(e for e in installed.session.events() if e.get("subtype") == "init")
            print(f"Claude Code {init.get('claude_code_version')}; sessions: plain {plain.session.pid}, ")
            print(
                f"  installed {installed.session.pid} (hooks, server), waiter {waiter.session.pid} (hooks, no socket)"
            )
            lanes = {"without": plain, "installed": installed, "socket": installed, "waiter": waiter}
            for i in range(len(PATHS) * (params.warmup + params.messages)):
                path = PATHS[i % len(PATHS)]
                lane = lanes[path]
                nonce = f"wake-{i}-{uuid.uuid4().hex[:8]}"
                text = f"Message {nonce} for you."
                wait_idle(lane)
                began = time.monotonic()
                if path in ("without", "installed"):
                    claude_sessions.write_frame(sockets[path], text)
                else:
                    # Senders in turn: one sender's ~30 messages a minute would be a flood the
                    # guards hold back (guard.py), and the bench measures delivery, not the guard.
                    sender = SENDERS[(i // len(PATHS)) % len(SENDERS)]
                    sent[path].append((sender, cli_send(lane.machine, sender, "alice", text)))
                # The first request that carries it (the waiter's turn has it as the prompt hook's context).
                request = wait(
                    lambda nonce=nonce: model.requests_mentioning(nonce),
                    WAKE_TIMEOUT_S,
                    f"the request for {nonce}",
                    lane.session,
                )[0]
                lane.turns += 1
                latency = request.at - began
                if path == "waiter":  # before the next waiter (the woken turn's Stop starts it) looks
                    forget_wakes(machines["waiter"], waiter.session)
                if i // len(PATHS) >= params.warmup:
                    times[path].append(latency)
                print(f"  {path:9s} {nonce}: {ms(latency * 1000)}")
            for lane in (plain, installed, waiter):
                wait(
                    lambda lane=lane: len(lane.session.results()) >= lane.turns,
                    IDLE_TIMEOUT_S,
                    "the last turn",
                    lane.session,
                )
            check_taken(machines["installed"], sent["socket"])
            check_taken(machines["waiter"], sent["waiter"])
            for lane in (plain, installed):
                if lane.session.close() != 0:
                    raise BenchFailure(
                        f"Claude Code exited {lane.session.process.returncode}{lane.session.transcript()}"
                    )
            # Not closed: on stdin's end Claude Code waits 30 s for its background hooks (the
            # waiter) before it exits. Killed, the session's waiter ends by itself.
            waiter.session.kill()
            deadline = time.monotonic() + 10
            while machines["waiter"].processes("callboard hook wake"):
                if time.monotonic() > deadline:
                    raise BenchFailure("the waiter still runs 10 s after its session was killed")
                time.sleep(0.01)
        except BaseException:
            for machine in machines.values():
                machine.stop_all()
            raise
        finally:
            shutil.rmtree(sock_tmp, ignore_errors=True)
    figures: dict[str, object] = {"claude_code": CLAUDE_CODE_CURRENT.version}
    for path, values in times.items():
        p50, p95 = percentile(values, 50) * 1000, percentile(values, 95) * 1000
        figures[path] = {"p50_ms": p50, "p95_ms": p95, "max_ms": max(values) * 1000, "n": len(values)}
        figures.update({f"{path}_ms_p50": p50, f"{path}_ms_p95": p95})
        print(f"{path:9s} → model request: p50 {ms(p50)}  p95 {ms(p95)}  max {ms(max(values) * 1000)}")
    processes = process_medians(machines["processes"], params.process_runs)
    figures.update(processes)
    print(
        f"python3 -c pass median {ms(processes['python_start_ms'])}; callboard send median {ms(processes['cli_send_ms'])}"
    )
    figures["ratios"] = {
        "socket_p95_over_without_p95": figures["socket_ms_p95"] / figures["without_ms_p95"],  # type: ignore[operator]
        "waiter_p95_over_without_p95": figures["waiter_ms_p95"] / figures["without_ms_p95"],  # type: ignore[operator]
        "installed_p50_over_without_p50": figures["installed_ms_p50"] / figures["without_ms_p50"],  # type: ignore[operator]
        "installed_p95_over_without_p95": figures["installed_ms_p95"] / figures["without_ms_p95"],  # type: ignore[operator]
        "cli_send_over_python_start": processes["cli_send_ms"] / processes["python_start_ms"],
    }
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few messages, for a smoke check")
    parser.add_argument("--dir", help="make the temporary folder (and the store) here")
    args = parser.parse_args()
    params = QUICK if args.quick else Params()
    began = time.monotonic()
    print(f"cores: {os.cpu_count()}; python {sys.version.split()[0]}; params {params}")
    failures: list[str] = []
    figures: dict[str, object] = {"cores": os.cpu_count(), "quick": args.quick}
    figures["aims"] = AIMS
    with tempfile.TemporaryDirectory(prefix="callboard-claude-wake-", dir=args.dir) as folder:
        try:
            figures.update(run(params, Path(folder)))
        except BenchFailure as failure:
            print(f"FAIL: {failure}")
            failures.append(str(failure))
    print()
    for name, aim in AIMS.items():
        ratio = figures.get("ratios", {}).get(name)  # type: ignore[union-attr]
        if ratio is not None:
            print(f"{name} {ratio:.2f}; aim at most {aim:g}: {'met' if ratio <= aim else 'MISSED'}")
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
