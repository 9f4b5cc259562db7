"""Benchmark of the hub at scale: does a large workspace, or a crowd of open streams, slow a send
down, and does one client's heavy send stall everyone else?

The hub runs as in ``bench/throughput.py`` (whose server-process helpers this script uses):
``python -m callboard up --port 0 --rate-limit 0 --db FILE`` on a fresh ``CALLBOARD_HOME`` in a
temporary folder, stopped with SIGTERM at the end (killed on failure). The load runs in this process
on one asyncio (uvloop) loop over raw keep-alive HTTP/1.1 connections to 127.0.0.1 (admin token,
``X-Callboard-Agent``, ``X-Callboard-Workspace``); an unrelated client polls ``GET /health`` from
a process of its own, one request at a time with a 2 ms pause, and notes each answer's time.

Setup (not timed): workspace ``small`` with ``small_agents`` agents (10), workspace ``large``
with ``large_agents`` agents (10,000) and workspace ``guess`` with ``guess_agents`` (3,000); in
each, the recipient and ten agents have a session registered on machine ``bench-box``.

Each round runs these cases, ``duration_s`` of load each, while the /health poller runs:

- ``10``: ``senders`` closed-loop connections send ``{"to": RECIPIENT, "text": "hello"}`` in the
  small workspace (each sender its own agent, one recipient agent of the workspace);
- ``10000``: the same in the large workspace;
- ``10000_streams``: the same, with ``streams`` idle SSE streams open on other agents of the large
  workspace (opened before the case, closed after it);
- ``guess``: in workspace ``guess`` (``guess_agents``, 3,000 agents with sessions), one connection
  makes ``guessing_sends`` (10) sends one after another, each to ``typos`` (100) new names, each a
  typo of one of its agents (a letter dropped, another added): every recipient is a new agent with
  a did-you-mean guess, and every answer must carry a guess for each.

Figures per case (medians over rounds): ``send_ms_p50_{case}`` (request→answer time of the sends),
``health_ms_p99_{case}`` and ``health_ms_max_{case}`` (the /health answers during the case's load),
``sends_{case}`` (how many). Ratios against the 10-agent case: ``send_ratio_{case}`` and
``health_ratio_{case}``. Aim: within 2x of the 10-agent figures for 10,000 agents and for 2,000
streams; the guessing send's /health p99 likewise (the send itself may take what it takes).

Run from the project root:  .venv/bin/python bench/scale.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import socket
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchFailure, percentile, report  # noqa: E402
from latency import Connection, close_streams, open_streams  # noqa: E402
from throughput import (  # noqa: E402
    CTX,
    HOST,
    ServerProcess,
    event_loop_name,
    filesystem_of,
    raise_fd_limit,
    run_async,
    start_hub,
    versions,
)

SETUP_CONCURRENCY = 64
SESSIONS = 10  # agents with a session, in every workspace (the same, whatever its size)
HEALTH_GAP_S = 0.002
RECIPIENT = "rcpt"
LARGE = "default"  # the streams of latency.open_streams act in the default workspace
SMALL = "small"
GUESS = "guess"
POLL_MOST_S = 300.0
CASES = ("10", "10000", "10000_streams", "guess")


@dataclass(frozen=True)
class Params:
    rounds: int
    small_agents: int
    large_agents: int
    streams: int
    senders: int
    duration_s: float
    guess_agents: int
    guessing_sends: int
    typos: int


FULL = Params(
    rounds=3,
    small_agents=10,
    large_agents=10_000,
    streams=2000,
    senders=4,
    duration_s=5.0,
    guess_agents=3000,
    guessing_sends=30,
    typos=100,
)
QUICK = Params(
    rounds=1,
    small_agents=10,
    large_agents=2000,
    streams=200,
    senders=4,
    duration_s=2.0,
    guess_agents=3000,
    guessing_sends=10,
    typos=100,
)


class WorkspaceConnection(Connection):
    """latency.Connection acting in a workspace of its choosing."""

    def __init__(self, hub: ServerProcess, workspace: str) -> None:
        super().__init__(hub)
        self.workspace = workspace

    def encode(self, method: str, path: str, agent: str, body: bytes = b"") -> bytes:
        request = super().encode(method, path, agent, body)
        head, _, rest = request.partition(b"\r\n")
        return head + f"\r\nX-Callboard-Workspace: {self.workspace}".encode() + b"\r\n" + rest


def agents_of(count: int) -> list[str]:
    return [f"member-{i:05d}" for i in range(count)]


async def setup_workspace(hub: ServerProcess, workspace: str, agents: Sequence[str]) -> float:
    """The agents, and a session on bench-box for the recipient and the first SESSIONS agents,
    SETUP_CONCURRENCY requests at a time; seconds taken."""
    began = time.monotonic()
    pool = [await WorkspaceConnection(hub, workspace).open() for _ in range(SETUP_CONCURRENCY)]
    queue: asyncio.Queue = asyncio.Queue()
    with_session = {RECIPIENT, *agents[:SESSIONS]}
    for pid, agent in enumerate([*agents, RECIPIENT], start=100_000):
        queue.put_nowait((pid, agent))

    async def worker(connection: Connection) -> None:
        while not queue.empty():
            pid, agent = queue.get_nowait()
            if agent in with_session:
                session = {"pid": pid, "runtime": "bench", "machine": "bench-box"}
                await connection.call("POST", "/v1/sessions", agent, session)
            else:
                await connection.call("POST", "/v1/agents", "setup", {"name": agent})

    try:
        await asyncio.gather(*(worker(c) for c in pool))
        who = await pool[0].call("GET", "/v1/agents", RECIPIENT)
        assert isinstance(who, list)
        if len(who) < len(agents) + 1:
            raise BenchFailure(f"workspace {workspace} has {len(who)} agents; expected {len(agents) + 1}")
    finally:
        for connection in pool:
            connection.close()
    return time.monotonic() - began


# --- the unrelated client: /health from a process of its own ---------------------------------------


def poll_health(port: int, stop, results) -> None:  # in a spawned process
    """GET /health one at a time, HEALTH_GAP_S apart, until ``stop`` is set (or POLL_MOST_S
    passed); puts "ready" once connected, then the latencies (ms)."""
    request = f"GET /health HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n".encode()
    latencies = []
    with socket.create_connection((HOST, port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        results.put("ready")
        deadline = time.monotonic() + POLL_MOST_S
        while not stop.is_set() and time.monotonic() < deadline:
            started = time.monotonic()
            sock.sendall(request)
            data = b""
            while True:
                data += sock.recv(65536)
                head, sep, body = data.partition(b"\r\n\r\n")
                if sep:
                    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                    if len(body) >= length:
                        break
            latencies.append((time.monotonic() - started) * 1000)
            time.sleep(HEALTH_GAP_S)
    results.put(latencies)


class HealthPoller:
    """The /health poller's process: polling from ``start()`` (once it is connected) to ``latencies()``."""

    def __init__(self, hub: ServerProcess) -> None:
        self.results = CTX.Queue()
        self.stop = CTX.Event()
        self.process = CTX.Process(target=poll_health, args=(hub.port, self.stop, self.results), daemon=True)

    def start(self) -> None:
        self.process.start()
        if self.results.get(timeout=30) != "ready":
            raise BenchFailure("the /health poller did not start")

    def __exit__(self, *exc: object) -> None:
        if self.process.is_alive():
            self.process.kill()

    def __enter__(self) -> HealthPoller:
        return self

    def latencies(self) -> list[float]:
        self.stop.set()
        values = self.results.get(timeout=30)
        self.process.join(10)
        return values


# --- the load ---------------------------------------------------------------------------------------


async def closed_loop_sends(hub: ServerProcess, workspace: str, params: Params) -> list[float]:
    """``senders`` connections sending to RECIPIENT for ``duration_s``; every send's time (ms)."""
    connections = [await WorkspaceConnection(hub, workspace).open() for _ in range(params.senders)]
    body = json.dumps({"to": RECIPIENT, "text": "hello"}).encode()
    times: list[float] = []
    deadline = time.monotonic() + params.duration_s

    async def sender(i: int, connection: WorkspaceConnection) -> None:
        request = connection.encode("POST", "/v1/messages", f"sender-{i}", body)
        while time.monotonic() < deadline:
            started = time.monotonic()
            status, answer = await connection.send_raw(request)
            if status != 201:
                raise BenchFailure(f"a send answered {status}: {answer[:300]!r}")
            times.append((time.monotonic() - started) * 1000)

    try:
        await asyncio.gather(*(sender(i, c) for i, c in enumerate(connections)))
    finally:
        for connection in connections:
            connection.close()
    return times


def typo_of(name: str) -> str:
    at = random.randrange(len(name))
    dropped = name[:at] + name[at + 1 :]
    at = random.randrange(len(dropped) + 1)
    return dropped[:at] + random.choice(string.ascii_lowercase) + dropped[at:]


async def guessing_sends(hub: ServerProcess, params: Params, taken: set[str]) -> list[float]:
    """``guessing_sends`` sends to ``typos`` new names each, one at a time; each send's time (ms)."""
    connection = await WorkspaceConnection(hub, GUESS).open()
    known = agents_of(params.guess_agents)
    times: list[float] = []
    try:
        while len(times) < params.guessing_sends:
            names: list[str] = []
            while len(names) < params.typos:
                typo = typo_of(random.choice(known))
                if typo not in taken:
                    taken.add(typo)
                    names.append(typo)
            body = json.dumps({"to": names, "text": "hello"}).encode()
            started = time.monotonic()
            status, answer = await connection.send_raw(connection.encode("POST", "/v1/messages", "typist", body))
            times.append((time.monotonic() - started) * 1000)
            if status != 201:
                raise BenchFailure(f"the guessing send answered {status}: {answer[:300]!r}")
            guessed = sum("Did you mean" in (r.get("reason") or "") for r in json.loads(answer)["recipients"])
            if guessed != params.typos:
                raise BenchFailure(f"only {guessed} of {params.typos} new names came with a guess")
    finally:
        connection.close()
    return times


async def run_case(hub: ServerProcess, case: str, params: Params, taken: set[str]) -> dict[str, float]:
    streams = []
    if case == "10000_streams":
        members = agents_of(params.large_agents)[-params.streams :]
        streams = await open_streams(hub, members, None)
    loop = asyncio.get_running_loop()
    try:
        with HealthPoller(hub) as poller:
            await loop.run_in_executor(None, poller.start)
            if case == "guess":
                sends = await guessing_sends(hub, params, taken)
            else:
                sends = await closed_loop_sends(hub, SMALL if case == "10" else LARGE, params)
            health = await loop.run_in_executor(None, poller.latencies)
        if any(s.problem for s in streams):
            raise BenchFailure(f"a stream failed: {next(s.problem for s in streams if s.problem)}")
    finally:
        close_streams(streams)
    return {
        "send_ms_p50": percentile(sends, 50),
        "sends": len(sends),
        "health_ms_p99": percentile(health, 99),
        "health_ms_max": max(health),
        "health_polls": len(health),
    }


async def measure(hub: ServerProcess, params: Params) -> dict[str, object]:
    figures: dict[str, object] = {}
    print(
        f"\nsetup: {params.small_agents} agents in '{SMALL}', {params.large_agents} in '{LARGE}', "
        f"{params.guess_agents} in '{GUESS}', ten with a session"
    )
    for workspace, count in ((SMALL, params.small_agents), (LARGE, params.large_agents), (GUESS, params.guess_agents)):
        figures[f"setup_s_{workspace}"] = await setup_workspace(hub, workspace, agents_of(count))
        print(f"  {workspace}: {figures[f'setup_s_{workspace}']:.1f} s")
    rounds: list[dict[str, dict[str, float]]] = []
    taken: set[str] = set(agents_of(params.guess_agents))
    for number in range(1, params.rounds + 1):
        results = {}
        for case in CASES:
            results[case] = await run_case(hub, case, params, taken)
            one = results[case]
            print(
                f"round {number} {case:>14}: send p50 {one['send_ms_p50']:8.2f} ms ({one['sends']:5.0f} sends)  "
                f"/health p99 {one['health_ms_p99']:7.2f} ms, max {one['health_ms_max']:7.2f} ms ({one['health_polls']:.0f})"
            )
        rounds.append(results)
    for case in CASES:
        for key in ("send_ms_p50", "health_ms_p99", "health_ms_max", "sends"):
            figures[f"{key}_{case}"] = statistics.median(r[case][key] for r in rounds)
    for case in CASES[1:]:
        figures[f"send_ratio_{case}"] = figures[f"send_ms_p50_{case}"] / figures["send_ms_p50_10"]
        figures[f"health_ratio_{case}"] = figures[f"health_ms_p99_{case}"] / figures["health_ms_p99_10"]
    print("\nmedians over rounds:")
    for case in CASES:
        ratio = (
            ""
            if case == "10"
            else f"   (x{figures[f'send_ratio_{case}']:.2f} / x{figures[f'health_ratio_{case}']:.2f})"
        )
        print(
            f"  {case:>14}: send p50 {figures[f'send_ms_p50_{case}']:8.2f} ms   "
            f"/health p99 {figures[f'health_ms_p99_{case}']:7.2f} ms{ratio}"
        )
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer agents and streams, shorter runs")
    parser.add_argument("--dir", help="make the temporary folder (and the hub's database) here")
    args = parser.parse_args(argv)
    params = QUICK if args.quick else FULL
    raise_fd_limit()
    figures: dict[str, object] = {"cores": os.cpu_count(), **versions(), "loop": event_loop_name(), "quick": args.quick}
    print(f"Callboard hub scale benchmark ({'quick' if args.quick else 'full'})")
    print(f"machine: {os.cpu_count()} cores, {platform.platform()}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()) + f"; load on {event_loop_name()}")
    print(f"parameters: {asdict(params)}")
    failures: list[str] = []
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="callboard-bench-", dir=args.dir) as tmp:
        folder = Path(tmp)
        figures["filesystem"] = filesystem_of(folder)
        hub = start_hub(folder)
        try:
            print(f"hub: {hub.extra['argv']} -> {hub.url} (pid {hub.pid}); database on {figures['filesystem']}")
            figures.update(run_async(measure(hub, params)))
        except BenchFailure as failure:
            print(f"FAIL: {failure}")
            failures.append(str(failure).splitlines()[0])
        except BaseException:
            hub.kill()
            raise
        print(hub.stop())
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
