"""Benchmark of hub replicas over PostgreSQL against the one SQLite hub: durable sends/s and cross-replica push latency.

Three configurations run side by side (all started first; rounds alternate between them so that
machine noise hits each alike):

- ``sqlite``: one hub on the embedded store, exactly as ``bench/throughput.py`` starts it;
- ``pg1``: one hub, ``callboard up --db postgresql://.../cb_bench_<random>`` on a fresh database;
- ``pg3``: three such hubs ("replicas", each its own ``CALLBOARD_HOME``) over another fresh
  database, one service: the first prints the admin token, the others use it.

Every hub is ``python -m callboard up --port 0 --rate-limit 0 --db ...``, stopped with SIGTERM
at the end (SIGKILL on failure); each PostgreSQL database is created by this script on the server
given by ``--postgres`` (default ``postgresql://postgres@127.0.0.1:5432/test``, or
CALLBOARD_TEST_POSTGRES) and dropped ``WITH (FORCE)`` afterwards.

1. Durable sends per second: the load generator of ``bench/throughput.py`` (spawned processes,
   one closed-loop raw keep-alive HTTP/1.1 connection per sender, ``POST /v1/messages {"to":
   RECIPIENT, "text": "hello"}`` as agent ``sN-i``; ``warmup_s`` uncounted, then ``duration_s``
   counted), with N = 1 and 32 senders all sending to one recipient (a fresh one per run), as
   ``throughput.py`` does; and also 32 senders each sending to a recipient of its own ("to
   own"), since a send locks its recipients' rows until it commits. One hub: the senders over
   ``generator_processes`` processes, as ``throughput.py`` does. Three replicas: sender i on
   replica i mod 3 (11/11/10 for 32; the single sender on replica 1), one generator process per
   replica. Afterwards the recipients' newest sequence numbers, read through the first hub, must
   add up to all 2xx answers.
   Figures per configuration: sends/s, per-send p50/p99 as the client sees it, and CPU during the
   window: all hubs of the configuration, the PostgreSQL server's processes on this machine
   (``/proc``; backends that exit mid-window are missed), the generator, and the rest.

2. Send → SSE receive latency with ``readers`` readers: ``bench/latency.py``'s round (channel
   ``#bench-N`` made by ``poster`` and joined by N agents through the first hub; one SSE stream per
   reader; posts one at a time, 5-15 ms apart, each stamped with ``monotonic_ns()`` just before
   the request is written; latency = the stream's read of the event − the stamp). ``sqlite`` and
   ``pg1``: poster and streams on the one hub. ``pg3``: the poster on replica 1 and the streams
   split over replicas 2 and 3, so every receipt crossed replicas (a commit on replica 1, its
   notification through PostgreSQL to the others, their readers woken). Target: cross-replica
   p99 under 50 ms with 100 readers.

Medians over rounds (max: the worst). Run from the project root:
    .venv/bin/python bench/replicas.py [--quick] [--dir FOLDER] [--postgres URL]
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchFailure, ms, percentile, report  # noqa: E402
from latency import GAP_MS, channel_of, latency_round, per_post_ms, setup_channels  # noqa: E402
from throughput import (  # noqa: E402  (the shared hub-process helpers and load generator)
    CLK_TCK,
    START_TIMEOUT_S,
    TEXT,
    CpuSampler,
    ServerProcess,
    _clean_env,
    build_request,
    drive,
    event_loop_name,
    filesystem_of,
    newest_seq,
    raise_fd_limit,
    run_async,
    start_hub,
    versions,
)

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
CROSS_REPLICA_P99_AIM_MS = 50.0


@dataclass(frozen=True)
class Params:
    rounds: int
    warmup_s: float  # throughput: uncounted start of each run
    duration_s: float  # throughput: counted window
    sender_counts: tuple[int, ...]  # all to one recipient, as throughput.py
    own_recipient_counts: tuple[int, ...]  # each sender to a recipient of its own
    generator_processes: int  # for a single hub (three replicas: one per replica)
    replicas: int
    readers: int
    warmup: int  # latency: uncounted posts
    posts: int  # latency: counted posts


FULL = Params(
    rounds=3,
    warmup_s=1.0,
    duration_s=3.0,
    sender_counts=(1, 32),
    own_recipient_counts=(32,),
    generator_processes=2,
    replicas=3,
    readers=100,
    warmup=3,
    posts=30,
)
QUICK = Params(
    rounds=1,
    warmup_s=0.5,
    duration_s=1.0,
    sender_counts=(1, 32),
    own_recipient_counts=(32,),
    generator_processes=2,
    replicas=3,
    readers=100,
    warmup=2,
    posts=10,
)


@dataclass
class Setup:
    """One configuration under test: its hubs (replicas of one service) and its database."""

    key: str
    title: str
    hubs: list[ServerProcess] = field(default_factory=list)
    database: str | None = None  # a PostgreSQL database this script created (dropped at the end)

    @property
    def first(self) -> ServerProcess:
        return self.hubs[0]


# --- PostgreSQL: fresh databases, the server's settings and CPU ----------------------------------


def _connect(server: str):
    import psycopg

    return psycopg.connect(server, autocommit=True, connect_timeout=10)


def create_database(server: str) -> tuple[str, str]:
    """A new, empty database on ``server``: (its name, its URL)."""
    name = f"cb_bench_{secrets.token_hex(6)}"
    with _connect(server) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return name, f"{server.rsplit('/', 1)[0]}/{name}"


def drop_database(server: str, name: str) -> str:
    with _connect(server) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return f"dropped database {name}"


def postgres_settings(server: str) -> dict[str, str]:
    found: dict[str, str] = {}
    with _connect(server) as conn:
        found["postgres"] = conn.execute("SHOW server_version").fetchone()[0]
        for name in ("fsync", "synchronous_commit", "wal_sync_method", "max_connections", "shared_buffers"):
            found[name] = conn.execute(f"SHOW {name}").fetchone()[0]
        try:
            found["data_directory"] = conn.execute("SHOW data_directory").fetchone()[0]
        except Exception:  # not a superuser
            found["data_directory"] = "unknown"
    return found


def connections_to(server: str, database: str) -> int:
    with _connect(server) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)).fetchone()[0]


def _postgres_ticks() -> dict[int, int]:
    """utime + stime of every process named ``postgres`` on this machine (the server, if it is local)."""
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as comm:
                if comm.read().strip() != "postgres":
                    continue
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            found[int(entry)] = int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return found


class PostgresCpu:
    """CPU of the local PostgreSQL processes between ``start()`` and ``stop()``, in % of one core."""

    def start(self) -> None:
        self._t0, self._ticks0 = time.monotonic(), _postgres_ticks()

    def stop(self) -> float:
        seconds = time.monotonic() - self._t0
        ticks = _postgres_ticks()
        if not ticks:
            return float("nan")
        used = sum(t - self._ticks0.get(pid, 0) for pid, t in ticks.items())
        return 100 * used / CLK_TCK / seconds


# --- hubs ----------------------------------------------------------------------------------------


def start_replica(folder: Path, name: str, db: str, token: str | None) -> ServerProcess:
    """``callboard up --db URL`` on a home of its own; the first replica (``token`` None) must
    print the admin token, the others use the first's."""
    home = folder / name / "home"
    home.mkdir(parents=True)
    log_path = folder / name / "hub.log"
    argv = [sys.executable, "-m", "callboard", "up", "--port", "0", "--rate-limit", "0", "--db", db]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            argv, env=_clean_env(home), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    server = ServerProcess(name, process, log_path, extra={"db": db, "argv": " ".join(argv[1:])})
    try:
        listening = server.wait_for_output(r"hub listening on (http://\S+)[^\n]*?replica (r-\w+)", START_TIMEOUT_S)
        server.url, server.port = listening.group(1), int(listening.group(1).rsplit(":", 1)[1])
        server.extra["replica"] = listening.group(2)
        server.extra["line"] = listening.group(0)
        if token is None:
            server.token = server.wait_for_output(r"admin token [^\n]*: (cb_\S+)", START_TIMEOUT_S).group(1)
        else:
            server.token = token
        server.wait_healthy("/health", START_TIMEOUT_S)
    except BaseException:
        server.kill()
        raise
    return server


def start_postgres_setup(folder: Path, setup: Setup, server: str, count: int) -> None:
    setup.database, url = create_database(server)
    token = None
    for i in range(1, count + 1):
        hub = start_replica(folder, f"{setup.key}-replica-{i}", url, token)
        setup.hubs.append(hub)
        token = hub.token
    print(f"{setup.title}: database {setup.database}")
    for hub in setup.hubs:
        print(f"    {hub.name}: {hub.url} (pid {hub.pid}), replica {hub.extra['replica']}")
    if count > 1 and re.search(r"admin token", "\n".join(h.log_tail(200) for h in setup.hubs[1:])):
        print("    NOTE: a replica other than the first printed an admin token")


def stop_setup(setup: Setup, server: str, failed: bool) -> None:
    for hub in setup.hubs:
        if failed:
            hub.kill()
            print(f"{hub.name} killed")
        else:
            print(hub.stop())
    if setup.database is not None:
        try:
            print(drop_database(server, setup.database))
        except Exception as error:  # noqa: BLE001  (report it, go on with the others)
            print(f"FAIL: could not drop database {setup.database}: {error}")


# --- 1. durable sends per second -----------------------------------------------------------------


def spread_load(
    hubs: Sequence[ServerProcess], senders: list[tuple[str, bytes]], params: Params, postgres: bool
) -> dict:
    """``throughput.run_load`` over several replicas: ``senders`` are (agent, body); sender i on hub i mod len(hubs)."""
    per_hub = [
        [build_request(hub.port, "/v1/messages", hub.token, agent, body) for agent, body in senders[i :: len(hubs)]]
        for i, hub in enumerate(hubs)
    ]
    if len(hubs) == 1:
        count = min(params.generator_processes, len(per_hub[0]))
        shares = [(hubs[0].port, per_hub[0][i::count]) for i in range(count)]
    else:
        shares = [(hub.port, requests) for hub, requests in zip(hubs, per_hub, strict=True) if requests]
    samplers = [CpuSampler(hub.pid) for hub in hubs]
    results, measured = drive(shares, params, [*samplers, PostgresCpu()], "the hubs")
    cpus, postgres_pct = measured[:-1], measured[-1] if postgres else float("nan")
    latencies = [t / 1e6 for r in results for t in r["latencies_ns"]]
    in_window = sum(r["in_window"] for r in results)
    hub_pcts = [c["server_loop_pct"] + c["server_threads_pct"] for c in cpus]
    generator_pct = 100 * sum(r["cpu_seconds"] for r in results) / params.duration_s
    busy = cpus[0]["machine_busy_pct"] * (os.cpu_count() or 1)
    return {
        "rate": in_window / params.duration_s,
        "ok": sum(r["ok"] for r in results),
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "max": max(latencies) if latencies else float("nan"),
        "hub_pcts": hub_pcts,
        "hub_pct": sum(hub_pcts),
        "postgres_pct": postgres_pct,
        "generator_pct": generator_pct,
        "rest_pct": busy - sum(hub_pcts) - (0 if postgres_pct != postgres_pct else postgres_pct) - generator_pct,
        "machine_busy_pct": cpus[0]["machine_busy_pct"],
    }


def describe_load(result: dict) -> str:
    hubs = "+".join(f"{p:.0f}" for p in result["hub_pcts"])
    pg = "" if result["postgres_pct"] != result["postgres_pct"] else f", postgres {result['postgres_pct']:.0f}%"
    return (
        f"{result['rate']:7.0f}/s  per send p50 {ms(result['p50'])} p99 {ms(result['p99'])} max {ms(result['max'])}; "
        f"CPU: hub{'s' if len(result['hub_pcts']) > 1 else ''} {hubs}%{pg}, generator {result['generator_pct']:.0f}%, "
        f"rest {result['rest_pct']:.0f}%; machine busy {result['machine_busy_pct']:.0f}%"
    )


def workloads(params: Params) -> list[tuple[int, bool]]:
    """(senders, each to its own recipient?): throughput.py's runs (one recipient for all), then the extra ones."""
    return [(n, False) for n in params.sender_counts] + [(n, True) for n in params.own_recipient_counts]


def label(senders: int, own: bool) -> str:
    return f"{senders}own" if own else f"{senders}"


def one_load(setup: Setup, senders: int, own: bool, number: int, params: Params) -> dict:
    """One run: ``senders`` agents ``sN-i`` (``oN-i`` with recipients of their own) send to
    ``rcpt-rR-sN`` (``rcpt-rR-oN-i``); afterwards the recipients' newest sequence numbers, read
    through the first hub, must add up to the 2xx answers."""
    prefix = f"o{senders}" if own else f"s{senders}"
    agents = [f"{prefix}-{i}" for i in range(senders)]
    recipients = [f"rcpt-r{number}-{a}" for a in agents] if own else [f"rcpt-r{number}-s{senders}"] * senders
    bodies = [json.dumps({"to": r, "text": TEXT}, separators=(",", ":")).encode() for r in recipients]
    result = spread_load(setup.hubs, list(zip(agents, bodies, strict=True)), params, setup.database is not None)
    stored = sum(newest_seq(setup.first, r) for r in sorted(set(recipients)))
    if stored != result["ok"]:
        raise BenchFailure(
            f"the recipients' newest deliveries add up to {stored}, but {result['ok']} sends were answered 2xx"
        )
    return result


def measure_throughput(setups: list[Setup], params: Params, failures: list[str]) -> dict[str, float]:
    print(
        f"\n[1] durable sends/s: closed-loop senders, each its own keep-alive connection; {params.rounds} round(s) x "
        f"({params.warmup_s:g} s warm-up + {params.duration_s:g} s counted) per configuration and workload; "
        f"'to one' = all to one recipient (as throughput.py), 'to own' = each sender to a recipient of its own"
    )
    runs: dict[tuple[str, str], list[dict]] = {}
    for number in range(1, params.rounds + 1):
        for senders, own in workloads(params):
            for setup in setups:
                what = f"{senders:2d} sender(s) to {'own' if own else 'one'}"
                try:
                    result = one_load(setup, senders, own, number, params)
                except BenchFailure as failure:
                    print(f"FAIL: round {number}, {what}, {setup.key}: {failure}")
                    failures.append(f"{setup.key} {what} round {number}: {str(failure).splitlines()[0]}")
                    dead = [h for h in setup.hubs if h.process.poll() is not None]
                    if dead:
                        raise BenchFailure(f"{dead[0].name} died:\n{dead[0].log_tail()}") from None
                    continue
                runs.setdefault((setup.key, label(senders, own)), []).append(result)
                print(
                    f"    round {number}, {what}, {setup.key:6s} {describe_load(result)} "
                    f"(mailboxes hold all {result['ok']})"
                )

    figures: dict[str, float] = {}
    print()
    for senders, own in workloads(params):
        for setup in setups:
            n, key = label(senders, own), setup.key
            results = runs.get((key, n))
            if not results:
                continue
            rate = statistics.median(r["rate"] for r in results)
            figures[f"sends_per_second_{n}_{key}"] = rate
            figures[f"send_ms_p50_{n}_{key}"] = statistics.median(r["p50"] for r in results)
            figures[f"send_ms_p99_{n}_{key}"] = statistics.median(r["p99"] for r in results)
            figures[f"hub_cpu_pct_{n}_{key}"] = statistics.median(r["hub_pct"] for r in results)
            figures[f"hub_cpu_us_per_send_{n}_{key}"] = statistics.median(
                r["hub_pct"] * 1e4 / max(r["rate"], 1e-9) for r in results
            )
            line = (
                f"  {senders:2d} sender(s) to {'own' if own else 'one'}, {setup.title}: {rate:.0f} durable sends/s, "
                f"send p50 {ms(figures[f'send_ms_p50_{n}_{key}'])}, p99 {ms(figures[f'send_ms_p99_{n}_{key}'])}; "
                f"hub CPU {figures[f'hub_cpu_us_per_send_{n}_{key}']:.0f} us per send"
            )
            if setup.database is not None:
                figures[f"postgres_cpu_pct_{n}_{key}"] = statistics.median(r["postgres_pct"] for r in results)
                figures[f"postgres_cpu_us_per_send_{n}_{key}"] = statistics.median(
                    r["postgres_pct"] * 1e4 / max(r["rate"], 1e-9) for r in results
                )
                line += f", postgres CPU {figures[f'postgres_cpu_us_per_send_{n}_{key}']:.0f} us per send"
            print(line + " (medians over rounds)")
    for senders, own in workloads(params):
        if senders == 1:
            continue
        n = label(senders, own)
        for a, b in (("pg1", "sqlite"), ("pg3", "pg1"), ("pg3", "sqlite")):
            if f"sends_per_second_{n}_{a}" in figures and f"sends_per_second_{n}_{b}" in figures:
                ratio = figures[f"sends_per_second_{n}_{a}"] / figures[f"sends_per_second_{n}_{b}"]
                figures[f"sends_ratio_{n}_{a}_over_{b}"] = ratio
                print(f"  {senders} senders to {'own' if own else 'one'}: {a} / {b} = {ratio:.2f}")
    return figures


# --- 2. send -> SSE receive latency --------------------------------------------------------------


async def measure_latency(setups: list[Setup], params: Params, failures: list[str]) -> dict[str, float]:
    count = params.readers
    print(
        f"\n[2] latency: post to #{channel_of(count)} -> every one of {count} SSE readers has it; {params.rounds} round(s) x "
        f"{params.posts} posts after {params.warmup} warm-up, one at a time, {GAP_MS[0]:g}-{GAP_MS[1]:g} ms random pause"
    )
    for setup in list(setups):
        began = time.monotonic()
        try:
            await setup_channels(setup.first, [count])
        except BenchFailure as failure:
            print(f"FAIL: {setup.key}: setting up #{channel_of(count)}: {failure}")
            failures.append(f"{setup.key} latency setup: {str(failure).splitlines()[0]}")
            setups.remove(setup)
            continue
        where = (
            "poster and readers on the one hub"
            if len(setup.hubs) == 1
            else f"poster on {setup.hubs[0].name}, readers on {', '.join(h.name for h in setup.hubs[1:])} (cross-replica)"
        )
        print(f"    {setup.key}: #{channel_of(count)} set up in {time.monotonic() - began:.1f} s; {where}")
    rng = random.Random(1234)
    runs: dict[str, list[dict]] = {}
    for number in range(1, params.rounds + 1):
        for setup in setups:
            began = time.monotonic()
            try:
                result = await latency_round(setup.first, count, params, rng, stream_hubs=setup.hubs[1:])
            except BenchFailure as failure:
                print(f"FAIL: round {number}, {setup.key}: {failure}")
                failures.append(f"{setup.key} latency round {number}: {str(failure).splitlines()[0]}")
                dead = [h for h in setup.hubs if h.process.poll() is not None]
                if dead:
                    raise BenchFailure(f"{dead[0].name} died:\n{dead[0].log_tail()}") from None
                continue
            result["hub_cpu_ms_per_post"] = sum(per_post_ms(c, params) for c in result["cpu_by_hub"])
            runs.setdefault(setup.key, []).append(result)
            per_hub = " + ".join(f"{per_post_ms(c, params):.1f}" for c in result["cpu_by_hub"])
            print(
                f"    round {number}, {setup.key:6s}: p50 {ms(result['p50'])}  p99 {ms(result['p99'])}  "
                f"max {ms(result['max'])}  ({result['n']} receipts); poster's answer p50 {ms(result['answer_p50'])}; "
                f"hub CPU per post {per_hub} ms, client {result['client_cpu_ms_per_post']:.1f} ms; "
                f"round took {time.monotonic() - began:.1f} s"
            )
            await asyncio.sleep(0.5)  # let the hubs drop the closed streams
    print()
    figures: dict[str, float] = {}
    for setup in setups:
        results = runs.get(setup.key)
        if not results:
            continue
        key = setup.key
        p50 = statistics.median(r["p50"] for r in results)
        p99 = statistics.median(r["p99"] for r in results)
        figures[f"latency_ms_p50_{count}_{key}"] = p50
        figures[f"latency_ms_p99_{count}_{key}"] = p99
        figures[f"latency_ms_max_{count}_{key}"] = max(r["max"] for r in results)
        figures[f"post_answer_ms_p50_{count}_{key}"] = statistics.median(r["answer_p50"] for r in results)
        figures[f"hub_cpu_ms_per_post_{count}_{key}"] = statistics.median(r["hub_cpu_ms_per_post"] for r in results)
        verdict = ""
        if len(setup.hubs) > 1:
            meets = p99 < CROSS_REPLICA_P99_AIM_MS
            verdict = (
                f"; {'meets' if meets else 'MISSES'} the cross-replica p99 < {CROSS_REPLICA_P99_AIM_MS:g} ms target"
                + ("" if count == 100 else f" (which is for 100 readers; {count} here)")
            )
        print(
            f"  latency with {count} readers, {setup.title}: p50 {ms(p50)}, p99 {ms(p99)} (median over rounds), "
            f"max {ms(figures[f'latency_ms_max_{count}_{key}'])}{verdict}"
        )
    return figures


# --- main ----------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs, for a smoke check")
    parser.add_argument("--dir", help="make the temporary folder (and the SQLite hub's database) here")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("CALLBOARD_TEST_POSTGRES", "").strip() or DEFAULT_POSTGRES,
        help=f"the PostgreSQL server to make the fresh databases on (default {DEFAULT_POSTGRES})",
    )
    args = parser.parse_args(argv)
    params = QUICK if args.quick else FULL
    raise_fd_limit()  # before the hubs start: they inherit the limit

    figures: dict[str, object] = {"cores": os.cpu_count(), **versions(), "loop": event_loop_name(), "quick": args.quick}
    print(f"Callboard hub replicas benchmark: SQLite vs PostgreSQL with 1 and {params.replicas} replicas")
    print(f"({'quick' if args.quick else 'full'}) machine: {os.cpu_count()} cores, {platform.platform()}")
    failures: list[str] = []
    try:
        import psycopg

        figures["psycopg"] = psycopg.__version__
        pg = postgres_settings(args.postgres)
        figures.update(pg)
        figures["postgres_filesystem"] = (
            filesystem_of(Path(pg["data_directory"])) if pg["data_directory"] != "unknown" else "unknown"
        )
    except Exception as error:  # noqa: BLE001  (the SQLite part still runs)
        pg = {}
        print(f"FAIL: PostgreSQL at {args.postgres}: {type(error).__name__}: {error}")
        failures.append(f"PostgreSQL unavailable: {type(error).__name__}: {str(error).splitlines()[0]}")
    print(
        "versions: "
        + ", ".join(f"{k} {v}" for k, v in versions().items())
        + (f", postgres {pg['postgres']}, psycopg {figures['psycopg']}" if pg else "")
        + f"; clients on {event_loop_name()}"
    )
    if pg:
        print(
            f"postgres: {args.postgres}; fsync {pg['fsync']}, synchronous_commit {pg['synchronous_commit']}, "
            f"wal_sync_method {pg['wal_sync_method']}, max_connections {pg['max_connections']}, shared_buffers "
            f"{pg['shared_buffers']}; data on {figures['postgres_filesystem']}"
        )
    print(f"parameters: {asdict(params)}")

    began = time.monotonic()
    setups: list[Setup] = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="callboard-bench-", dir=args.dir) as tmp:
        folder = Path(tmp)
        figures["filesystem"] = filesystem_of(folder)
        try:
            sqlite = Setup("sqlite", "SQLite hub")
            setups.append(sqlite)
            sqlite.hubs.append(start_hub(folder / "sqlite"))
            sqlite.first.name = "sqlite hub"
            print(f"{sqlite.title}: {sqlite.first.url} (pid {sqlite.first.pid}); database on {figures['filesystem']}")
            if pg:
                for key, count, title in (
                    ("pg1", 1, "PostgreSQL, 1 replica"),
                    ("pg3", params.replicas, f"PostgreSQL, {params.replicas} replicas"),
                ):
                    setup = Setup(key, title)
                    setups.append(setup)
                    try:
                        start_postgres_setup(folder, setup, args.postgres, count)
                    except Exception as failure:  # noqa: BLE001  (BenchFailure, or psycopg's: the others still run)
                        print(f"FAIL: {title}: {failure}")
                        failures.append(f"{key} did not start: {str(failure).splitlines()[0]}")
                        stop_setup(setup, args.postgres, failed=True)
                        setups.remove(setup)
                for setup in setups:
                    if setup.database is not None:
                        print(
                            f"    {setup.key}: {connections_to(args.postgres, setup.database)} connections to its database"
                        )
            running = list(setups)
            figures.update(measure_throughput(running, params, failures))
            figures.update(run_async(measure_latency(running, params, failures)))
        except BenchFailure as failure:
            print(f"FAIL: {failure}")
            failures.append(str(failure).splitlines()[0])
        except BaseException:
            failed = True
            raise
        finally:
            print()
            for setup in setups:
                stop_setup(setup, args.postgres, failed)
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
