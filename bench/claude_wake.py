"""Benchmark: how soon an idle Claude Code session acts on a message sent to its agent.

One real Claude Code (the version pinned in tests/clients/conftest.py, from the npm cache the
client tests use; installed there if missing) runs headless with stream-json input and its
stdin left open, against the local mock model of tests/clients, with ``switchboard mcp`` as
alice's stdio server on a fresh embedded store. After its first turn it sits idle. Then, one
message at a time, alternating:

- ``switchboard``: bob sends alice a message (``LocalClient.send`` in this process, a durable
  commit); alice's server notices it, writes it into the session's messaging socket, and the
  session starts a turn. Latency: just before the send → the mock model reading the request
  that carries the message.
- ``raw``: this process writes a frame straight into the session's socket
  (``claude_sessions.write_frame``): Claude Code's own share of the latency, for scale.

Before each message the previous turn has finished, the session's registry says ``idle``, and
a random 20-80 ms pause has passed. Every switchboard message must end surfaced by "socket".
Target (the issue): p95 under 250 ms through the switchboard path.

Run from the project root:  .venv/bin/python bench/claude_wake.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
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

from switchboard import claude_sessions  # noqa: E402
from tests.clients.conftest import CLAUDE_CODE_CURRENT, LiveCli, Machine, claude_code_env, install  # noqa: E402
from tests.clients.mock_model import MockModel  # noqa: E402

TARGET_P95_MS = 250.0
WAKE_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Params:
    warmup: int = 3  # per path, not counted
    messages: int = 30  # per path


QUICK = Params(warmup=1, messages=5)


def wait(condition, timeout: float, what: str, session: LiveCli):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if session.process.poll() is not None:
            raise BenchFailure(f"Claude Code exited ({session.process.returncode}) waiting for {what}")
        if time.monotonic() > deadline:
            raise BenchFailure(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.001)
    return value


def start_session(machine: Machine, model: MockModel, claude: Path, tmp: Path) -> LiveCli:
    config = {"mcpServers": {"switchboard": {"type": "stdio", **machine.mcp_server("alice")}}}
    argv = [claude, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
    argv += ["--mcp-config", json.dumps(config), "--strict-mcp-config"]
    session = machine.start(argv, claude_code_env(machine, model, {"TMPDIR": str(tmp)}))
    session.say("Hello. Nothing to do yet.")
    wait(lambda: len(session.results()) == 1, 120, "the first turn", session)
    return session


def wait_idle(session: LiveCli, turns: int, env: dict[str, str]) -> None:
    """The session has finished ``turns`` turns and says it is idle; then a short random pause."""
    wait(lambda: len(session.results()) >= turns, IDLE_TIMEOUT_S, f"turn {turns} to finish", session)

    def idle() -> bool:
        entry = claude_sessions.session_of(session.pid, env)
        return entry is not None and entry.status == "idle"

    wait(idle, IDLE_TIMEOUT_S, "the registry to say idle", session)
    time.sleep(random.uniform(0.02, 0.08))


def run(params: Params, folder: Path) -> dict[str, object]:
    try:
        claude = install(CLAUDE_CODE_CURRENT)
    except pytest.fail.Exception as error:
        raise BenchFailure(f"Claude Code {CLAUDE_CODE_CURRENT.version} is not installed: {error}") from None
    machine = Machine(folder / "machine")
    sock_tmp = Path(tempfile.mkdtemp(prefix="sb-cc-"))  # short: a socket path has ~100 bytes
    env = {"HOME": str(machine.home)}
    times: dict[str, list[float]] = {"switchboard": [], "raw": []}
    sent_ids: list[str] = []
    with MockModel(tool_input={}) as model, machine.client("bob") as bob:
        session = start_session(machine, model, claude, sock_tmp)
        try:
            init = next(e for e in session.events() if e.get("subtype") == "init")
            socket_path = init.get("messaging_socket_path")
            if not socket_path:
                raise BenchFailure("the session has no messaging socket")
            print(f"Claude Code {init.get('claude_code_version')} pid {session.pid}, socket {socket_path}")
            turns = 1
            for i in range(2 * (params.warmup + params.messages)):
                path = ("switchboard", "raw")[i % 2]
                nonce = f"wake-{i}-{uuid.uuid4().hex[:8]}"
                wait_idle(session, turns, env)
                began = time.monotonic()
                if path == "switchboard":
                    sent_ids.append(bob.send("alice", f"Message {nonce} for you.").message_id)
                else:
                    claude_sessions.write_frame(socket_path, f"Message {nonce} for you.")
                (request,) = wait(
                    lambda nonce=nonce: model.requests_saying(nonce),
                    WAKE_TIMEOUT_S,
                    f"the request for {nonce}",
                    session,
                )
                turns += 1
                latency = request.at - began
                if i // 2 >= params.warmup:
                    times[path].append(latency)
                print(f"  {path:11s} {nonce}: {ms(latency * 1000)}")
            wait(lambda: len(session.results()) >= turns, IDLE_TIMEOUT_S, "the last turn", session)
            with machine.client("bob") as status:
                for message_id in sent_ids:
                    (alice,) = status.message_status(message_id).recipients
                    if (alice.state, alice.via) != ("surfaced", "socket"):
                        raise BenchFailure(
                            f"message {message_id} is {alice.state} via {alice.via}, not surfaced by socket"
                        )
            if session.close() != 0:
                raise BenchFailure(f"Claude Code exited {session.process.returncode}{session.transcript()}")
        except BaseException:
            machine.stop_all()
            raise
        finally:
            shutil.rmtree(sock_tmp, ignore_errors=True)
    figures: dict[str, object] = {"claude_code": CLAUDE_CODE_CURRENT.version}
    for path, values in times.items():
        p50, p95 = percentile(values, 50) * 1000, percentile(values, 95) * 1000
        figures.update({f"{path}_ms_p50": p50, f"{path}_ms_p95": p95, f"{path}_ms_max": max(values) * 1000})
        figures[f"{path}_n"] = len(values)
        print(f"{path:11s} send→model request: p50 {ms(p50)}  p95 {ms(p95)}  max {ms(max(values) * 1000)}")
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
    figures: dict[str, object] = {"cores": os.cpu_count(), "quick": args.quick, "target_p95_ms": TARGET_P95_MS}
    with tempfile.TemporaryDirectory(prefix="switchboard-claude-wake-", dir=args.dir) as folder:
        try:
            figures.update(run(params, Path(folder)))
        except BenchFailure as failure:
            print(f"FAIL: {failure}")
            failures.append(str(failure))
    if "switchboard_ms_p95" in figures:
        p95 = figures["switchboard_ms_p95"]
        verdict = "met" if p95 < TARGET_P95_MS else "MISSED"  # type: ignore[operator]
        print(f"\nswitchboard path p95 {p95:.1f} ms; target under {TARGET_P95_MS:g} ms: {verdict}")
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
