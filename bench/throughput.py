"""Benchmark of the hub's request rate: durable sends per second over HTTP, against bare Starlette.

The hub runs as it runs in use: a subprocess ``python -m callboard up --port 0 --rate-limit 0
--db FILE`` on a fresh ``CALLBOARD_HOME`` in a temporary folder (its own uvicorn settings,
uvloop + httptools when installed). The script reads the admin token the first ``up`` prints,
waits for ``GET /health``, and stops the hub with SIGTERM at the end (SIGKILL if it does not stop,
and on any failure). In the same run it serves a bare Starlette app the same way — this very
script with ``--serve-bare``, on uvicorn with the hub's settings — whose one endpoint
``POST /echo`` parses the JSON body and answers a small JSON object (201). Its rate is the
ceiling of any Starlette app on this machine under this load generator; the hub's rate divided
by it is ``ratio``.

The load generator: ``generator_processes`` spawned processes (1 for a single sender), each an
asyncio (uvloop) loop holding raw keep-alive HTTP/1.1 connections to 127.0.0.1, one per sender.
Every connection is a closed loop: it writes one prebuilt request, reads the status line and
``Content-Length`` body, and only then writes the next. Senders of the hub act as their own
agents (admin token, ``X-Callboard-Agent: sN-i``) and all send ``{"to": RECIPIENT, "text":
"hello"}`` to one recipient (a fresh one per run); the bare endpoint gets the same bytes but for
the path. The generator shares the machine's cores with the server, so its cost per request is
kept to a few microseconds, and the same generator drives both servers so the ratio is fair.

Each run: every connection starts at a common instant, sends for ``warmup_s`` (not counted:
agents are created, caches fill), then for ``duration_s``; the figure is the 2xx answers received
in that window divided by its length. After the window no new request is sent and the
in-flight ones are awaited. Any non-2xx answer or a lost connection fails the run. For the hub,
the recipient's newest delivery sequence number (``GET /v1/inbox?limit=1``) must then equal all
2xx answers of the run (warm-up included): every answered send is in the mailbox, once.

"Durable" is the hub's own promise: it answers a send after the store committed it (WAL,
``synchronous=FULL``; with group commit several sends share one fsync). This script changes
nothing of the hub; it prints the file system the database is on (fsync on tmpfs is free).

Figures (medians over rounds; rounds alternate hub and bare so drift hits both):
``hub_sends_per_second_{N}`` and ``bare_requests_per_second_{N}`` for N senders, ``ratio_{N}``,
per-send latency ``hub_send_ms_p50_{N}`` / ``_p99_{N}`` (the closed loop's request→answer time),
and what the CPU did during the window: the hub process's CPU (its event-loop thread and its
other threads separately), the generator's, and the whole machine's busy share.
Aims on a 2-core machine: >= 5,000 sends/s with 32 senders, ratio >= 0.3, one sender's
send p50 < 1 ms.

Run from the project root:  .venv/bin/python bench/throughput.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure. ``bench/latency.py`` reuses the
server-process helpers defined here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/common.py, also in spawned children
from common import BenchFailure, ms, percentile, report  # noqa: E402

CTX = multiprocessing.get_context("spawn")
HOST = "127.0.0.1"
TEXT = "hello"
START_TIMEOUT_S = 30.0  # a server must answer /health within this
STOP_TIMEOUT_S = 35.0  # SIGTERM, then SIGKILL after this (the hub drains for up to 30 s)
ANSWER_TIMEOUT_S = 15.0  # in-flight requests must be answered this long after the window
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Params:
    rounds: int
    warmup_s: float
    duration_s: float
    sender_counts: tuple[int, ...]
    generator_processes: int


FULL = Params(rounds=3, warmup_s=1.0, duration_s=5.0, sender_counts=(1, 32), generator_processes=2)
QUICK = Params(rounds=1, warmup_s=0.5, duration_s=1.5, sender_counts=(1, 32), generator_processes=2)


# --- small helpers (also used by latency.py) ---------------------------------------------------


def versions() -> dict[str, str]:
    found = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for name in ("callboard", "starlette", "uvicorn", "httptools", "uvloop"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def filesystem_of(path: Path) -> str:
    """The type and device of the mount holding ``path`` (from /proc/mounts), e.g. 'ext4 /dev/vda'."""
    best, kind = "", "unknown"
    target = str(path.resolve())
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                device, point, fstype = line.split()[:3]
                inside = target == point or target.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, f"{fstype} {device} at {point}"
    except OSError:
        pass
    return kind


def rss_kb(pid: int) -> int:
    """Resident set size of a process, from /proc/PID/status VmRSS (kB)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchFailure(f"no VmRSS for process {pid}")


def thread_count(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def _ticks(stat_path: str) -> int:
    with open(stat_path) as file:
        fields = file.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15 of stat)


def process_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds used so far by a process's main thread (the event loop) and by all its other threads."""
    main = _ticks(f"/proc/{pid}/task/{pid}/stat")
    total = _ticks(f"/proc/{pid}/stat")  # includes threads that already exited
    return main / CLK_TCK, (total - main) / CLK_TCK


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of all cores so far, from /proc/stat."""
    with open("/proc/stat") as file:
        values = [int(v) for v in file.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


class CpuSampler:
    """CPU used by a server process and the whole machine between ``start()`` and ``stop()``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._proc0 = process_cpu(self.pid)
        self._machine0 = machine_cpu()

    def stop(self) -> dict[str, float]:
        seconds = time.monotonic() - self._t0
        main, others = process_cpu(self.pid)
        busy, total = machine_cpu()
        return {
            "seconds": seconds,
            "server_loop_pct": 100 * (main - self._proc0[0]) / seconds,
            "server_threads_pct": 100 * (others - self._proc0[1]) / seconds,
            "machine_busy_pct": 100 * (busy - self._machine0[0]) / max(total - self._machine0[1], 1),
            "server_threads": thread_count(self.pid),
        }


def raise_fd_limit() -> None:
    """Open files up to the hard limit (a thousand streams need a thousand sockets on each side)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass


def event_loop_name() -> str:
    try:
        import uvloop  # noqa: F401

        return "uvloop"
    except ImportError:
        return "asyncio"


def run_async(coro):
    """Run a coroutine on uvloop when installed (the load generator's own cost matters), else asyncio."""
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:
        return asyncio.run(coro)


# --- server subprocesses -------------------------------------------------------------------------


@dataclass
class ServerProcess:
    """An HTTP server in a subprocess on 127.0.0.1, its output going to a log file."""

    name: str
    process: subprocess.Popen
    log_path: Path
    url: str = ""
    port: int = 0
    token: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def wait_for_output(self, pattern: str, timeout: float) -> re.Match:
        deadline = time.monotonic() + timeout
        while True:
            try:
                found = re.search(pattern, self.log_path.read_text(errors="replace"))
            except OSError:
                found = None
            if found:
                return found
            if self.process.poll() is not None:
                raise BenchFailure(
                    f"{self.name} exited ({self.process.returncode}) before printing {pattern!r}:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise BenchFailure(f"{self.name} did not print {pattern!r} within {timeout:g} s:\n{self.log_tail()}")
            time.sleep(0.05)

    def wait_healthy(self, path: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.url + path, timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if self.process.poll() is not None:
                raise BenchFailure(f"{self.name} exited ({self.process.returncode}):\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise BenchFailure(f"{self.name} did not answer {path} within {timeout:g} s:\n{self.log_tail()}")
            time.sleep(0.05)

    def stop(self) -> str:
        """SIGTERM, wait, SIGKILL if need be. Says how it ended."""
        if self.process.poll() is not None:
            return f"{self.name} had already exited ({self.process.returncode})"
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=STOP_TIMEOUT_S)
            # uvicorn re-raises the signal after its graceful shutdown, hence exit -15 when all went well
            return f"{self.name} stopped on SIGTERM (exit {code})"
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            return f"{self.name} did not stop within {STOP_TIMEOUT_S:g} s of SIGTERM: killed"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALLBOARD_")}
    env["CALLBOARD_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start_hub(folder: Path, extra_args: Sequence[str] = ()) -> ServerProcess:
    """``callboard up`` on a fresh home in ``folder``: listening, healthy, its admin token read."""
    home = folder / "hub-home"
    home.mkdir(parents=True)
    db = home / "callboard.db"
    log_path = folder / "hub.log"
    argv = [sys.executable, "-m", "callboard", "up", "--port", "0", "--rate-limit", "0", "--db", str(db), *extra_args]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            argv, env=_clean_env(home), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    server = ServerProcess("hub", process, log_path, extra={"db": str(db), "argv": " ".join(argv[1:])})
    try:
        url = server.wait_for_output(r"hub listening on (http://\S+)", START_TIMEOUT_S).group(1)
        server.url, server.port = url, int(url.rsplit(":", 1)[1])
        server.token = server.wait_for_output(r"admin token [^\n]*: (cb_\S+)", START_TIMEOUT_S).group(1)
        server.wait_healthy("/health", START_TIMEOUT_S)
    except BaseException:
        server.kill()
        raise
    return server


def start_bare(folder: Path) -> ServerProcess:
    """This script's bare Starlette app (``--serve-bare``) on uvicorn with the hub's settings."""
    log_path = folder / "bare.log"
    argv = [sys.executable, str(Path(__file__).resolve()), "--serve-bare"]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            argv, env=_clean_env(folder / "bare-home"), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    server = ServerProcess("bare starlette", process, log_path)
    try:
        url = server.wait_for_output(r"bare listening on (http://\S+)", START_TIMEOUT_S).group(1)
        server.url, server.port = url, int(url.rsplit(":", 1)[1])
        server.wait_healthy("/health", START_TIMEOUT_S)
    except BaseException:
        server.kill()
        raise
    return server


def serve_bare() -> None:
    """The bare app: ``POST /echo`` parses the JSON body and answers a small JSON object.

    Served exactly as ``callboard.hub.server.serve`` configures uvicorn (loop and http "auto",
    i.e. uvloop and httptools when installed; no access log; lifespan on)."""
    import socket

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def echo(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"ok": True, "to": body.get("to")}, status_code=201)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    app = Starlette(routes=[Route("/echo", echo, methods=["POST"]), Route("/health", health, methods=["GET"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, 0))
    config = uvicorn.Config(
        app,
        host=HOST,
        port=sock.getsockname()[1],
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=30,
        loop="auto",
        http="auto",
    )
    server = uvicorn.Server(config)
    print(f"bare listening on http://{HOST}:{sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


def http_json(server: ServerProcess, method: str, path: str, agent: str | None = None, body: object = None) -> object:
    """One request with the server's admin token (setup and checks, not timed)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {server.token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if agent:
        request.add_header("X-Callboard-Agent", agent)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        raise BenchFailure(f"{method} {path} as {agent}: HTTP {error.code}: {error.read()[:300]!r}") from None


# --- the load generator (runs in spawned processes) ----------------------------------------------


def build_request(port: int, path: str, token: str, agent: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"X-Callboard-Agent: {agent}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class ClosedLoop(asyncio.Protocol):
    """One keep-alive connection sending one request at a time, as soon as the last is answered."""

    def __init__(self, request: bytes, done: asyncio.Future) -> None:
        self.request = request
        self.done = done
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.window = (0, 0)
        self.sent_ns = 0
        self.ok = 0
        self.in_window = 0
        self.bad = 0
        self.bad_samples: list[str] = []
        self.latencies_ns: list[int] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def begin(self, window_start: int, window_end: int) -> None:
        self.window = (window_start, window_end)
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        self.sent_ns = time.monotonic_ns()
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        buffer = self.buffer
        buffer += data
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buffer[:end]).lower()
            at = head.find(b"\r\ncontent-length:")
            if at < 0:
                self._fail(f"an answer without Content-Length: {head[:200]!r}")
                return
            stop = head.find(b"\r\n", at + 2)
            length = int(head[at + 17 : stop if stop >= 0 else len(head)])
            total = end + 4 + length
            if len(buffer) < total:
                return
            status = int(head[9:12])
            if 200 <= status < 300:
                self.ok += 1
                if self.window[0] <= now <= self.window[1]:
                    self.in_window += 1
                    self.latencies_ns.append(now - self.sent_ns)
            else:
                self.bad += 1
                if len(self.bad_samples) < 3:
                    self.bad_samples.append(f"HTTP {status}: {bytes(buffer[end + 4 : total])[:300]!r}")
            del buffer[:total]
            if now < self.window[1]:
                self._send()
            elif not self.done.done():
                self.done.set_result(None)

    def _fail(self, reason: str) -> None:
        if not self.done.done():
            self.done.set_exception(BenchFailure(reason))
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(BenchFailure(f"the server closed a connection mid-run ({exc})"))


async def _generate(port: int, requests: list[bytes], warmup_ns: int, duration_ns: int, pipe) -> dict:
    loop = asyncio.get_running_loop()
    connections: list[ClosedLoop] = []
    for request in requests:
        done = loop.create_future()
        _, protocol = await loop.create_connection(lambda r=request, d=done: ClosedLoop(r, d), HOST, port)
        connections.append(protocol)
    pipe.send(("ready",))
    if not pipe.poll(60):
        raise BenchFailure("no start signal within 60 s")
    start_ns = pipe.recv()
    window_start, window_end = start_ns + warmup_ns, start_ns + warmup_ns + duration_ns
    cpu: dict[str, float] = {}
    now = time.monotonic_ns()
    loop.call_later((window_start - now) / 1e9, lambda: cpu.__setitem__("start", time.process_time()))
    loop.call_later((window_end - now) / 1e9, lambda: cpu.__setitem__("end", time.process_time()))
    await asyncio.sleep(max(0, start_ns - time.monotonic_ns()) / 1e9)
    for connection in connections:
        connection.begin(window_start, window_end)
    timeout = (window_end - time.monotonic_ns()) / 1e9 + ANSWER_TIMEOUT_S
    try:
        await asyncio.wait_for(asyncio.gather(*(c.done for c in connections)), timeout)
    except TimeoutError:
        waiting = sum(not c.done.done() for c in connections)
        raise BenchFailure(f"{waiting} request(s) unanswered {ANSWER_TIMEOUT_S:g} s after the window") from None
    for connection in connections:
        if connection.transport is not None:
            connection.transport.close()
    return {
        "ok": sum(c.ok for c in connections),
        "in_window": sum(c.in_window for c in connections),
        "bad": sum(c.bad for c in connections),
        "bad_samples": [s for c in connections for s in c.bad_samples][:5],
        "latencies_ns": [t for c in connections for t in c.latencies_ns],
        "cpu_seconds": cpu.get("end", 0.0) - cpu.get("start", 0.0),
    }


def generator_main(port: int, requests: list[bytes], warmup_ns: int, duration_ns: int, pipe) -> None:
    """Child process: run the closed loops and send back what they counted."""
    try:
        result = run_async(_generate(port, requests, warmup_ns, duration_ns, pipe))
        pipe.send(("ok", result))
    except BaseException:
        pipe.send(("error", traceback.format_exc()))


def _receive(pipe, process, timeout: float, what: str) -> tuple:
    deadline = time.monotonic() + timeout
    while not pipe.poll(0.2):
        if not process.is_alive() and not pipe.poll(0):
            raise BenchFailure(f"a load generator exited ({process.exitcode}) before {what}")
        if time.monotonic() > deadline:
            raise BenchFailure(f"a load generator did not report {what} within {timeout:g} s")
    message = pipe.recv()
    if message[0] == "error":
        raise BenchFailure(f"a load generator failed:\n{message[1]}")
    return message


def run_load(server: ServerProcess, path: str, agents: list[str], body: bytes, params: Params) -> dict:
    """Drive ``server`` with one closed-loop connection per agent, spread over the generator processes."""
    requests = [build_request(server.port, path, server.token, agent, body) for agent in agents]
    count = min(params.generator_processes, len(requests))
    sampler = CpuSampler(server.pid)
    results, (cpu,) = drive([(server.port, requests[i::count]) for i in range(count)], params, [sampler], server.name)
    latencies = [t / 1e6 for r in results for t in r["latencies_ns"]]
    in_window = sum(r["in_window"] for r in results)
    return {
        "rate": in_window / params.duration_s,
        "in_window": in_window,
        "ok": sum(r["ok"] for r in results),
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "max": max(latencies) if latencies else float("nan"),
        "generator_pct": 100 * sum(r["cpu_seconds"] for r in results) / params.duration_s,
        **cpu,
    }


def drive(shares: list[tuple[int, list[bytes]]], params: Params, samplers: list, what: str) -> tuple[list[dict], list]:
    """One generator process per (port, requests) share, closed-loop, all from one common start;
    ``samplers`` (anything with start() and stop()) measure the counted window. Returns each
    generator's counts and each sampler's stop(); raises BenchFailure on any non-2xx answer."""
    warmup_ns, duration_ns = int(params.warmup_s * 1e9), int(params.duration_s * 1e9)
    pipes, processes = [], []
    try:
        for port, share in shares:
            ours, theirs = CTX.Pipe()
            process = CTX.Process(
                target=generator_main, args=(port, share, warmup_ns, duration_ns, theirs), daemon=True
            )
            process.start()
            pipes.append(ours)
            processes.append(process)
        for pipe, process in zip(pipes, processes, strict=True):
            _receive(pipe, process, 60, "being connected")
        start_ns = time.monotonic_ns() + 50_000_000
        for pipe in pipes:
            pipe.send(start_ns)
        time.sleep(max(0, start_ns + warmup_ns - time.monotonic_ns()) / 1e9)
        for sampler in samplers:
            sampler.start()
        time.sleep(max(0, start_ns + warmup_ns + duration_ns - time.monotonic_ns()) / 1e9)
        measured = [sampler.stop() for sampler in samplers]
        results = [
            _receive(pipe, process, params.duration_s + ANSWER_TIMEOUT_S + 30, "its counts")[1]
            for pipe, process in zip(pipes, processes, strict=True)
        ]
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
    bad = sum(r["bad"] for r in results)
    if bad:
        samples = "\n  ".join(s for r in results for s in r["bad_samples"])
        raise BenchFailure(f"{bad} non-2xx answer(s) from {what}, e.g.:\n  {samples}")
    return results, measured


# --- the measurement -----------------------------------------------------------------------------


def newest_seq(hub: ServerProcess, agent: str) -> int:
    items = http_json(hub, "GET", "/v1/inbox?all=true&limit=1", agent=agent)
    assert isinstance(items, list)
    return items[-1]["seq"] if items else 0


def one_run(server: ServerProcess, senders: int, number: int, params: Params) -> dict:
    is_hub = server.name == "hub"
    recipient = f"rcpt-r{number}-s{senders}"
    agents = [f"s{senders}-{i}" for i in range(senders)]
    body = json.dumps({"to": recipient, "text": TEXT}, separators=(",", ":")).encode()
    result = run_load(server, "/v1/messages" if is_hub else "/echo", agents, body, params)
    if is_hub:
        stored = newest_seq(server, recipient)
        if stored != result["ok"]:
            raise BenchFailure(
                f"{recipient}'s newest delivery is seq {stored}, but {result['ok']} sends were answered 2xx"
            )
    return result


def describe(result: dict) -> str:
    return (
        f"{result['rate']:8.0f}/s  per request p50 {ms(result['p50'])} p99 {ms(result['p99'])} max {ms(result['max'])}; "
        f"CPU: server loop {result['server_loop_pct']:.0f}% + threads {result['server_threads_pct']:.0f}% "
        f"({result['server_threads']} threads), generator {result['generator_pct']:.0f}%, rest {rest_pct(result):.0f}%; "
        f"machine busy {result['machine_busy_pct']:.0f}%"
    )


def cpu_per_request_us(result: dict) -> float:
    """Server CPU (all its threads) per answered request in the window, in microseconds."""
    return (result["server_loop_pct"] + result["server_threads_pct"]) * 1e4 / max(result["rate"], 1e-9)


def rest_pct(result: dict) -> float:
    """Busy CPU not spent in the server or the generator (kernel I/O work, other processes), in % of a core."""
    cores = os.cpu_count() or 1
    return (
        result["machine_busy_pct"] * cores
        - result["server_loop_pct"]
        - result["server_threads_pct"]
        - result["generator_pct"]
    )


def measure(hub: ServerProcess, bare: ServerProcess, params: Params, failures: list[str]) -> dict[str, float]:
    print(
        f"\nclosed-loop senders, each its own keep-alive connection; {params.rounds} round(s) x "
        f"({params.warmup_s:g} s warm-up + {params.duration_s:g} s counted) per server and sender count"
    )
    runs: dict[tuple[str, int], list[dict]] = {}
    for number in range(1, params.rounds + 1):
        for senders in params.sender_counts:
            for server in (hub, bare):
                label = "hub sends " if server is hub else "bare echo "
                try:
                    result = one_run(server, senders, number, params)
                except BenchFailure as failure:
                    print(f"FAIL: round {number}, {senders} sender(s), {server.name}: {failure}")
                    failures.append(f"{server.name} {senders} senders round {number}: {str(failure).splitlines()[0]}")
                    if server.process.poll() is not None:
                        raise BenchFailure(f"{server.name} died:\n{server.log_tail()}") from None
                    continue
                runs.setdefault((server.name, senders), []).append(result)
                check = f" (mailbox holds all {result['ok']})" if server is hub else ""
                print(f"    round {number}, {senders:2d} sender(s), {label}{describe(result)}{check}")

    figures: dict[str, float] = {}
    print()
    for senders in params.sender_counts:
        hub_runs, bare_runs = runs.get(("hub", senders), []), runs.get((bare.name, senders), [])
        if not hub_runs or not bare_runs:
            continue
        hub_rate = statistics.median(r["rate"] for r in hub_runs)
        bare_rate = statistics.median(r["rate"] for r in bare_runs)
        ratio = hub_rate / bare_rate
        n = senders
        figures.update(
            {
                f"hub_sends_per_second_{n}": hub_rate,
                f"bare_requests_per_second_{n}": bare_rate,
                f"ratio_{n}": ratio,
                f"hub_send_ms_p50_{n}": statistics.median(r["p50"] for r in hub_runs),
                f"hub_send_ms_p99_{n}": statistics.median(r["p99"] for r in hub_runs),
                f"bare_ms_p50_{n}": statistics.median(r["p50"] for r in bare_runs),
                f"hub_loop_cpu_pct_{n}": statistics.median(r["server_loop_pct"] for r in hub_runs),
                f"hub_threads_cpu_pct_{n}": statistics.median(r["server_threads_pct"] for r in hub_runs),
                f"hub_generator_cpu_pct_{n}": statistics.median(r["generator_pct"] for r in hub_runs),
                f"bare_server_cpu_pct_{n}": statistics.median(
                    r["server_loop_pct"] + r["server_threads_pct"] for r in bare_runs
                ),
                f"bare_generator_cpu_pct_{n}": statistics.median(r["generator_pct"] for r in bare_runs),
                f"hub_rest_cpu_pct_{n}": statistics.median(rest_pct(r) for r in hub_runs),
                f"hub_cpu_us_per_send_{n}": statistics.median(cpu_per_request_us(r) for r in hub_runs),
                f"bare_cpu_us_per_request_{n}": statistics.median(cpu_per_request_us(r) for r in bare_runs),
            }
        )
        print(
            f"  {n:2d} sender(s): hub {hub_rate:.0f} durable sends/s, bare Starlette {bare_rate:.0f} requests/s, "
            f"ratio {ratio:.3f}; hub send p50 {ms(figures[f'hub_send_ms_p50_{n}'])}, p99 {ms(figures[f'hub_send_ms_p99_{n}'])} "
            f"(medians over rounds)"
        )
        print(
            f"      server CPU per request: hub {figures[f'hub_cpu_us_per_send_{n}']:.0f} us, "
            f"bare {figures[f'bare_cpu_us_per_request_{n}']:.0f} us"
        )
    verdicts = []
    top = max(params.sender_counts)
    if f"hub_sends_per_second_{top}" in figures:
        rate, ratio = figures[f"hub_sends_per_second_{top}"], figures[f"ratio_{top}"]
        verdicts.append(
            f"{'meets' if rate >= 5000 else 'MISSES'} the >= 5000 sends/s aim with {top} senders ({rate:.0f})"
        )
        verdicts.append(f"{'meets' if ratio >= 0.3 else 'MISSES'} the >= 0.3 ratio aim ({ratio:.3f})")
    if "hub_send_ms_p50_1" in figures:
        p50 = figures["hub_send_ms_p50_1"]
        verdicts.append(f"{'meets' if p50 < 1.0 else 'MISSES'} the < 1 ms one-sender send p50 aim ({ms(p50)})")
    for verdict in verdicts:
        print(f"  {verdict}")
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs, for a smoke check")
    parser.add_argument("--dir", help="make the temporary folder (and the hub's database) here")
    parser.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)  # the bare app's own process
    args = parser.parse_args(argv)
    if args.serve_bare:
        serve_bare()
        return 0
    params = QUICK if args.quick else FULL
    raise_fd_limit()

    figures: dict[str, object] = {"cores": os.cpu_count(), **versions(), "loop": event_loop_name(), "quick": args.quick}
    print(f"Callboard hub throughput benchmark ({'quick' if args.quick else 'full'})")
    print(f"machine: {os.cpu_count()} cores, {platform.platform()}")
    print(
        "versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()) + f"; load generator on {event_loop_name()}"
    )
    print(f"parameters: {asdict(params)}")

    failures: list[str] = []
    began = time.monotonic()
    servers: list[ServerProcess] = []
    with tempfile.TemporaryDirectory(prefix="callboard-bench-", dir=args.dir) as tmp:
        folder = Path(tmp)
        figures["filesystem"] = filesystem_of(folder)
        try:
            hub = start_hub(folder)
            servers.append(hub)
            bare = start_bare(folder)
            servers.append(bare)
            print(f"hub: {hub.extra['argv']} -> {hub.url} (pid {hub.pid}); database on {figures['filesystem']}")
            print(f"bare: POST /echo on {bare.url} (pid {bare.pid}), same uvicorn settings")
            figures.update(measure(hub, bare, params, failures))
        except BenchFailure as failure:
            print(f"FAIL: {failure}")
            failures.append(str(failure).splitlines()[0])
        except BaseException:
            for server in servers:
                server.kill()
            raise
        for server in servers:
            print(server.stop())
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
