"""Benchmark of the hub's push path: send→SSE-receive latency by subscriber count, and idle stream memory.

The hub runs as in ``bench/throughput.py`` (whose server-process helpers this script imports):
``python -m callboard up --port 0 --rate-limit 0 --db FILE`` on a fresh ``CALLBOARD_HOME``
in a temporary folder, stopped with SIGTERM at the end (killed on failure). Everything else runs
in this one process, on one asyncio (uvloop) loop, over raw HTTP/1.1 sockets to 127.0.0.1.

Setup (not timed): for each subscriber count N, a channel ``#bench-N`` created by the agent
``poster`` and joined by N agents ``gN-sub-i`` (admin token, ``X-Callboard-Agent``), so a post
to ``#bench-N`` is delivered to exactly those N mailboxes (the poster gets no copy).

1. ``idle_stream_kb`` — resident memory per idle subscriber. The hub's VmRSS (``/proc/PID/status``)
   is read after the setup, then ``memory_streams`` SSE streams (``GET /v1/events``, one per
   subscriber agent) are opened and each has received the stream's opening comment, the hub is
   left alone for a second, and VmRSS is read again. The difference divided by the number of
   streams is the figure (the hub's worker threads already exist from the setup, so they are not
   counted). Aim: under 50 KB per idle subscriber. The streams are then closed.

2. ``latency_ms_{N}`` — for N in ``subscriber_counts``: N streams are opened (one per member of
   ``#bench-N``); then the poster sends ``warmup + posts`` posts one at a time over its own
   keep-alive connection, ``POST /v1/messages {"to": "#bench-N", "text": ..., "parts": [{"data":
   {"k": k, "sent_ns": ...}}]}`` where ``sent_ns`` is ``time.monotonic_ns()`` taken just before
   the request is written (CLOCK_MONOTONIC is system-wide). Each stream notes
   ``monotonic_ns()`` when the socket read that completes an event returns (no parsing on the
   receive path; the ``data:`` JSON is decoded after the round and must carry post k's stamp,
   k-th in order, on the right channel). The next post goes out when every subscriber has the
   current one, after a random 5–15 ms pause. Latency = receive time − ``sent_ns``: it includes
   the send's durable commit, the hub's wake-up of every stream, each stream's read of its
   mailbox, and this process's turn to read the socket (one process reads all N sockets, so
   with N = 1,000 the last receipts include the client's own queueing; that is part of what a
   single machine running 1,000 agents sees). p50 / p99 / max over all receipts of a round;
   reported: medians over rounds (max: the worst). Also reported: the poster's own answer time
   (the send with N deliveries) and the hub CPU per post.
   Aims: p99 under 10 ms with 100 subscribers and under 50 ms with 1,000.

Run from the project root:  .venv/bin/python bench/latency.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchFailure, ms, percentile, report  # noqa: E402
from throughput import (  # noqa: E402  (the shared hub-process helpers)
    HOST,
    CpuSampler,
    ServerProcess,
    event_loop_name,
    filesystem_of,
    raise_fd_limit,
    rss_kb,
    run_async,
    start_hub,
    thread_count,
    versions,
)

POSTER = "poster"
SETUP_CONCURRENCY = 64  # setup requests in flight (more than the hub's worker threads, so they all start)
OPEN_CONCURRENCY = 100  # streams being opened at once
OPEN_TIMEOUT_S = 60.0  # all streams of a round must be open within this
RECEIVE_TIMEOUT_S = 20.0  # every subscriber must have a post within this
SETTLE_S = 1.0  # quiet time before reading the hub's memory
GAP_MS = (5.0, 15.0)


@dataclass(frozen=True)
class Params:
    rounds: int
    subscriber_counts: tuple[int, ...]
    warmup: int
    posts: int
    memory_streams: int


FULL = Params(rounds=3, subscriber_counts=(1, 100, 1000), warmup=3, posts=30, memory_streams=1000)
QUICK = Params(rounds=1, subscriber_counts=(1, 10, 100), warmup=2, posts=10, memory_streams=100)


def channel_of(count: int) -> str:
    return f"bench-{count}"


def subscribers_of(count: int) -> list[str]:
    return [f"g{count}-sub-{i}" for i in range(count)]


# --- a tiny HTTP client for setup and the poster ------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection (asyncio streams), one request at a time."""

    def __init__(self, hub: ServerProcess) -> None:
        self.hub = hub
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> Connection:
        self.reader, self.writer = await asyncio.open_connection(HOST, self.hub.port)
        return self

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def encode(self, method: str, path: str, agent: str, body: bytes = b"") -> bytes:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{self.hub.port}\r\nAuthorization: Bearer {self.hub.token}\r\n"
            f"X-Callboard-Agent: {agent}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return head.encode() + body

    async def send_raw(self, request: bytes) -> tuple[int, bytes]:
        assert self.reader is not None and self.writer is not None
        self.writer.write(request)
        head = (await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), 60)).lower()
        at = head.find(b"\r\ncontent-length:")
        if at < 0:
            raise BenchFailure(f"an answer without Content-Length: {head[:200]!r}")
        length = int(head[at + 17 : head.find(b"\r\n", at + 2)])
        body = await asyncio.wait_for(self.reader.readexactly(length), 60)
        return int(head[9:12]), body

    async def call(self, method: str, path: str, agent: str, value: object = None) -> object:
        body = b"" if value is None else json.dumps(value).encode()
        status, answer = await self.send_raw(self.encode(method, path, agent, body))
        if not 200 <= status < 300:
            raise BenchFailure(f"{method} {path} as {agent}: HTTP {status}: {answer[:300]!r}")
        return json.loads(answer)


async def setup_channels(hub: ServerProcess, counts: Sequence[int]) -> None:
    """Create ``#bench-N`` (by the poster) and have its N subscribers join it, 64 requests at a time."""
    pool = [await Connection(hub).open() for _ in range(SETUP_CONCURRENCY)]
    try:
        first = pool[0]
        for count in counts:
            await first.call("POST", "/v1/channels", POSTER, {"name": channel_of(count)})
        jobs = [(count, agent) for count in counts for agent in subscribers_of(count)]
        queue: asyncio.Queue = asyncio.Queue()
        for job in jobs:
            queue.put_nowait(job)

        async def worker(connection: Connection) -> None:
            while not queue.empty():
                count, agent = queue.get_nowait()
                await connection.call("POST", f"/v1/channels/{channel_of(count)}/join", agent)

        await asyncio.gather(*(worker(c) for c in pool))
        for count in counts:
            members = await first.call("GET", f"/v1/channels/{channel_of(count)}/members", POSTER)
            assert isinstance(members, list)
            if len(members) != count + 1:
                raise BenchFailure(f"#{channel_of(count)} has {len(members)} members; expected {count + 1}")
    finally:
        for connection in pool:
            connection.close()


# --- SSE subscribers -------------------------------------------------------------------------------


class Subscriber(asyncio.Protocol):
    """One SSE stream: decodes chunked transfer and SSE framing; notes when each event's read returned."""

    def __init__(self, request: bytes, on_event) -> None:
        loop = asyncio.get_running_loop()
        self.request = request
        self.on_event = on_event
        self.ready: asyncio.Future = loop.create_future()  # the stream's opening comment arrived
        self.transport: asyncio.Transport | None = None
        self.raw = bytearray()
        self.text = bytearray()
        self.in_body = False
        self.receipts: list[tuple[int, int | None, bytes]] = []  # (monotonic ns, id, data)
        self.problem: str | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        raw = self.raw
        raw += data
        if not self.in_body:
            end = raw.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(raw[:end]).lower()
            if head[9:12] != b"200" or b"transfer-encoding: chunked" not in head:
                self._fail(f"the stream did not open: {bytes(raw[:400])!r}")
                return
            del raw[: end + 4]
            self.in_body = True
        while True:  # chunked transfer coding
            line_end = raw.find(b"\r\n")
            if line_end < 0:
                break
            size = int(bytes(raw[:line_end]).split(b";")[0], 16)
            if size == 0:
                self._fail("the hub ended the stream")
                return
            if len(raw) < line_end + 2 + size + 2:
                break
            self.text += raw[line_end + 2 : line_end + 2 + size]
            del raw[: line_end + 2 + size + 2]
        text = self.text
        while True:  # server-sent events, separated by a blank line
            end = text.find(b"\n\n")
            if end < 0:
                break
            block = bytes(text[:end])
            del text[: end + 2]
            if not self.ready.done():
                self.ready.set_result(None)
            event_id, payload = None, None
            for line in block.split(b"\n"):
                if line.startswith(b"data: "):
                    payload = line[6:]
                elif line.startswith(b"id: "):
                    event_id = int(line[4:])
            if payload is not None:
                self.receipts.append((now, event_id, payload))
                self.on_event(len(self.receipts) - 1)

    def _fail(self, problem: str) -> None:
        self.problem = problem
        if not self.ready.done():
            self.ready.set_exception(BenchFailure(problem))
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.problem is None:
            self.problem = f"the stream's connection closed ({exc})"
        if not self.ready.done():
            self.ready.set_exception(BenchFailure(self.problem))

    def close(self) -> None:
        self.problem = self.problem or "closed by the benchmark"
        if self.transport is not None:
            self.transport.close()


class Tally:
    """How many subscribers have post k; wakes the poster when all N do."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.counts: dict[int, int] = {}
        self.complete: dict[int, asyncio.Event] = {}

    def event_for(self, k: int) -> asyncio.Event:
        return self.complete.setdefault(k, asyncio.Event())

    def got(self, k: int) -> None:
        count = self.counts.get(k, 0) + 1
        self.counts[k] = count
        if count == self.expected:
            self.event_for(k).set()


async def open_streams(hub: ServerProcess, agents: Sequence[str], tally: Tally | None) -> list[Subscriber]:
    """One SSE stream per agent, OPEN_CONCURRENCY at a time; returns when every stream is live."""
    loop = asyncio.get_running_loop()
    on_event = tally.got if tally is not None else (lambda k: None)
    streams: list[Subscriber] = []
    gate = asyncio.Semaphore(OPEN_CONCURRENCY)

    async def open_one(agent: str) -> None:
        request = (
            f"GET /v1/events HTTP/1.1\r\nHost: {HOST}:{hub.port}\r\nAuthorization: Bearer {hub.token}\r\n"
            f"X-Callboard-Agent: {agent}\r\nAccept: text/event-stream\r\n\r\n"
        ).encode()
        async with gate:
            _, stream = await loop.create_connection(lambda: Subscriber(request, on_event), HOST, hub.port)
            streams.append(stream)
            await stream.ready

    try:
        await asyncio.wait_for(asyncio.gather(*(open_one(a) for a in agents)), OPEN_TIMEOUT_S)
    except TimeoutError:
        live = sum(s.ready.done() for s in streams)
        close_streams(streams)
        raise BenchFailure(f"only {live} of {len(agents)} streams opened within {OPEN_TIMEOUT_S:g} s") from None
    except BaseException:
        close_streams(streams)
        raise
    return streams


def close_streams(streams: Sequence[Subscriber]) -> None:
    for stream in streams:
        stream.close()


# --- 1. idle memory --------------------------------------------------------------------------------


async def measure_memory(hub: ServerProcess, params: Params) -> dict[str, float]:
    count = params.memory_streams
    group = min((c for c in params.subscriber_counts if c >= count), default=max(params.subscriber_counts))
    agents = subscribers_of(group)[:count]
    print(f"\n[1] idle_stream_kb: hub VmRSS before and after opening {len(agents)} idle SSE streams")
    await asyncio.sleep(SETTLE_S)
    before, threads_before = rss_kb(hub.pid), thread_count(hub.pid)
    started = time.monotonic()
    streams = await open_streams(hub, agents, None)
    opened_in = time.monotonic() - started
    try:
        await asyncio.sleep(SETTLE_S)
        after, threads_after = rss_kb(hub.pid), thread_count(hub.pid)
        if any(s.problem for s in streams):
            raise BenchFailure(f"a stream failed while idle: {next(s.problem for s in streams if s.problem)}")
    finally:
        close_streams(streams)
    per = (after - before) / len(agents)
    print(
        f"    hub VmRSS {before} kB with no stream ({threads_before} threads), {after} kB with {len(agents)} idle streams "
        f"({threads_after} threads; opened in {opened_in:.2f} s)"
    )
    verdict = "meets" if per < 50 else "MISSES"
    print(f"  idle_stream_kb: {per:.1f} KB per idle subscriber; {verdict} the < 50 KB aim")
    await asyncio.sleep(SETTLE_S)  # let the hub drop the closed streams
    return {
        "idle_stream_kb": per,
        "hub_rss_kb_no_streams": before,
        "hub_rss_kb_idle_streams": after,
        "idle_streams": len(agents),
    }


# --- 2. latency ------------------------------------------------------------------------------------


async def latency_round(
    hub: ServerProcess, count: int, params: Params, rng: random.Random, stream_hubs: Sequence[ServerProcess] = ()
) -> dict:
    """One round: N streams, then the posts. The poster sends through ``hub``; the streams are on
    ``hub`` too, or split evenly (in order) over ``stream_hubs`` when given (other replicas of one
    service, ``bench/replicas.py``). ``cpu`` is ``hub``'s CPU; ``cpu_by_hub`` every hub's, ``hub`` first."""
    tally = Tally(count)
    agents = subscribers_of(count)
    targets = list(stream_hubs) or [hub]
    streams: list[Subscriber] = []
    try:
        for i, target in enumerate(targets):
            share = agents[i * count // len(targets) : (i + 1) * count // len(targets)]
            streams += await open_streams(target, share, tally)
    except BaseException:
        close_streams(streams)
        raise
    poster = await Connection(hub).open()
    channel = channel_of(count)
    stamps: list[int] = []
    answers_ms: list[float] = []
    samplers = [CpuSampler(h.pid) for h in [hub, *(t for t in targets if t is not hub)]]
    client_cpu = 0.0
    try:
        for k in range(params.warmup + params.posts):
            if k == params.warmup:
                for sampler in samplers:
                    sampler.start()
                client_cpu = time.process_time()
            await asyncio.sleep(rng.uniform(*GAP_MS) / 1000)
            arrived = tally.event_for(k)
            sent_ns = time.monotonic_ns()
            body = json.dumps(
                {"to": f"#{channel}", "text": f"tick {k}", "parts": [{"data": {"k": k, "sent_ns": sent_ns}}]}
            ).encode()
            status, answer = await poster.send_raw(poster.encode("POST", "/v1/messages", POSTER, body))
            answers_ms.append((time.monotonic_ns() - sent_ns) / 1e6)
            if status != 201:
                raise BenchFailure(f"post {k} to #{channel}: HTTP {status}: {answer[:300]!r}")
            stamps.append(sent_ns)
            try:
                await asyncio.wait_for(arrived.wait(), RECEIVE_TIMEOUT_S)
            except TimeoutError:
                broken = [s.problem for s in streams if s.problem]
                raise BenchFailure(
                    f"post {k}: only {tally.counts.get(k, 0)} of {count} subscribers got it within {RECEIVE_TIMEOUT_S:g} s"
                    + (f"; {len(broken)} stream(s) broke: {broken[0]}" if broken else "")
                ) from None
        cpu_by_hub = [sampler.stop() for sampler in samplers]
        cpu = cpu_by_hub[0]
        client_cpu = time.process_time() - client_cpu
    finally:
        poster.close()
        close_streams(streams)

    latencies: list[float] = []
    for stream in streams:
        if len(stream.receipts) != len(stamps):
            raise BenchFailure(f"a subscriber got {len(stream.receipts)} events; {len(stamps)} were posted")
        previous_id = None
        for k, (received_ns, event_id, payload) in enumerate(stream.receipts):
            item = json.loads(payload)
            data = next((p["data"] for p in item["message"]["parts"] if "data" in p), None)
            if data != {"k": k, "sent_ns": stamps[k]} or item["message"]["channel"] != channel:
                raise BenchFailure(f"event {k} of a subscriber is not post {k} to #{channel}: {payload[:300]!r}")
            if event_id != item["seq"] or (previous_id is not None and event_id != previous_id + 1):
                raise BenchFailure(f"event ids out of order: {previous_id} then {event_id} (seq {item['seq']})")
            previous_id = event_id
            if k >= params.warmup:
                latencies.append((received_ns - stamps[k]) / 1e6)
    measured = answers_ms[params.warmup :]
    return {
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "max": max(latencies),
        "n": len(latencies),
        "answer_p50": percentile(measured, 50),
        "cpu": cpu,
        "cpu_by_hub": cpu_by_hub,
        "client_cpu_ms_per_post": 1000 * client_cpu / params.posts,
    }


async def measure_latency(hub: ServerProcess, params: Params, failures: list[str]) -> dict[str, float]:
    print(
        f"\n[2] latency_ms: post to #bench-N -> every one of N SSE subscribers has it; {params.rounds} round(s) x "
        f"{params.posts} posts after {params.warmup} warm-up, one at a time, {GAP_MS[0]:g}-{GAP_MS[1]:g} ms random pause"
    )
    rng = random.Random(1234)
    figures: dict[str, float] = {}
    runs: dict[int, list[dict]] = {}
    for number in range(1, params.rounds + 1):
        for count in params.subscriber_counts:
            began = time.monotonic()
            try:
                result = await latency_round(hub, count, params, rng)
            except BenchFailure as failure:
                print(f"FAIL: round {number}, {count} subscriber(s): {failure}")
                failures.append(f"latency {count} subscribers round {number}: {str(failure).splitlines()[0]}")
                if hub.process.poll() is not None:
                    raise BenchFailure(f"the hub died:\n{hub.log_tail()}") from None
                await asyncio.sleep(SETTLE_S)
                continue
            cpu = result["cpu"]
            runs.setdefault(count, []).append(result)
            print(
                f"    round {number}, {count:4d} subscriber(s): p50 {ms(result['p50'])}  p99 {ms(result['p99'])}  "
                f"max {ms(result['max'])}  ({result['n']} receipts); poster's answer p50 {ms(result['answer_p50'])}; "
                f"per post: hub CPU {per_post_ms(cpu, params):.1f} ms (loop {cpu['server_loop_pct']:.0f}% + "
                f"threads {cpu['server_threads_pct']:.0f}% of a core, {cpu['server_threads']} threads), "
                f"client CPU {result['client_cpu_ms_per_post']:.1f} ms; round took {time.monotonic() - began:.1f} s"
            )
            await asyncio.sleep(0.5)  # let the hub drop the closed streams
    print()
    for count, results in runs.items():
        p50 = statistics.median(r["p50"] for r in results)
        p99 = statistics.median(r["p99"] for r in results)
        worst = max(r["max"] for r in results)
        figures[f"latency_ms_p50_{count}"] = p50
        figures[f"latency_ms_p99_{count}"] = p99
        figures[f"latency_ms_max_{count}"] = worst
        figures[f"post_answer_ms_p50_{count}"] = statistics.median(r["answer_p50"] for r in results)
        figures[f"hub_cpu_ms_per_post_{count}"] = statistics.median(per_post_ms(r["cpu"], params) for r in results)
        figures[f"client_cpu_ms_per_post_{count}"] = statistics.median(r["client_cpu_ms_per_post"] for r in results)
        aim = {100: 10.0, 1000: 50.0}.get(count)
        verdict = f"; {'meets' if p99 < aim else 'MISSES'} the p99 < {aim:g} ms aim" if aim else ""
        print(
            f"  latency_ms with {count} subscriber(s): p50 {ms(p50)}, p99 {ms(p99)} (median over rounds), max {ms(worst)}{verdict}"
        )
    return figures


def per_post_ms(cpu: dict, params: Params) -> float:
    """Hub CPU (all threads) between the first and the last measured post, per post."""
    return (cpu["server_loop_pct"] + cpu["server_threads_pct"]) / 100 * cpu["seconds"] * 1000 / params.posts


# --- main ------------------------------------------------------------------------------------------


async def run(hub: ServerProcess, params: Params, failures: list[str]) -> dict[str, float]:
    figures: dict[str, float] = {}
    counts = sorted(set(params.subscriber_counts))
    began = time.monotonic()
    await setup_channels(hub, counts)
    print(
        f"setup: channels {', '.join('#' + channel_of(c) for c in counts)} with {sum(counts)} subscriber agents "
        f"in {time.monotonic() - began:.1f} s"
    )
    for step in (measure_memory, measure_latency):
        try:
            if step is measure_latency:
                figures.update(await measure_latency(hub, params, failures))
            else:
                figures.update(await measure_memory(hub, params))
        except BenchFailure as failure:
            print(f"FAIL: {step.__name__}: {failure}")
            failures.append(f"{step.__name__}: {str(failure).splitlines()[0]}")
            if hub.process.poll() is not None:
                break
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke check")
    parser.add_argument("--dir", help="make the temporary folder (and the hub's database) here")
    args = parser.parse_args(argv)
    params = QUICK if args.quick else FULL
    raise_fd_limit()  # before the hub starts: it inherits the limit

    figures: dict[str, object] = {"cores": os.cpu_count(), **versions(), "loop": event_loop_name(), "quick": args.quick}
    print(f"Callboard hub latency benchmark ({'quick' if args.quick else 'full'})")
    print(f"machine: {os.cpu_count()} cores, {platform.platform()}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()) + f"; subscribers on {event_loop_name()}")
    print(f"parameters: {asdict(params)}")

    failures: list[str] = []
    began = time.monotonic()
    hub: ServerProcess | None = None
    with tempfile.TemporaryDirectory(prefix="callboard-bench-", dir=args.dir) as tmp:
        folder = Path(tmp)
        figures["filesystem"] = filesystem_of(folder)
        try:
            hub = start_hub(folder)
            print(f"hub: {hub.extra['argv']} -> {hub.url} (pid {hub.pid}); database on {figures['filesystem']}")
            figures.update(run_async(run(hub, params, failures)))
        except BenchFailure as failure:
            print(f"FAIL: {failure}")
            failures.append(str(failure).splitlines()[0])
        except BaseException:
            if hub is not None:
                hub.kill()
            raise
        if hub is not None:
            print(hub.stop())
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
