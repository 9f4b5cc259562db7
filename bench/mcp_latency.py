"""Benchmark of the MCP tool calls: send_message and read_messages, over stdio and over HTTP.

Each call is timed from the official ``mcp`` client (``Client.call_tool``) to its result, so a
figure includes the client's own work (it validates each result against the tool's output
schema), the transport, the tool and the durable store write. One call at a time.

- stdio: two ``callboard mcp`` subprocesses (agents ``alice`` and ``bob``) on one fresh
  embedded store in a temporary folder, each driven by its own client.
- HTTP: ``callboard up`` on a fresh store (as in ``throughput.py``); the clients speak
  Streamable HTTP to ``/mcp`` with the admin token and ``X-Callboard-Agent``.
- stdio through the hub: ``callboard mcp`` subprocesses logged in to that hub
  (``CALLBOARD_HUB``, ``CALLBOARD_TOKEN``: the admin token, each as its own agent), as an
  agent CLI runs it on a machine of a team. ``send_message`` with 1 agent, then with 16 agents
  sending at once (each a closed loop of ``calls`` sends): p50 / p99 over all their calls.

Per transport and protocol era (``legacy``: the initialize handshake that current agent CLIs
use; ``2026-07-28``: the sessionless era): ``warmup`` calls, then ``calls`` rounds of alice's
``send_message`` to bob followed by bob's ``read_messages`` (which must return that message).
Reported: p50 / p99 of each tool's call time, and ``wake``: with bob waiting in
``read_messages(wait_seconds=10)``, the time from alice's ``send_message`` returning to bob's
read returning with it (``wakes`` rounds; the requirement is within 100 ms). For scale, the same run times a REST send to the
same hub (``POST /v1/messages``, one keep-alive connection) — what the transport and tool layer
add on top of it. Aim: median send_message under 5 ms (the best-known open peer publishes about
118 ms mean). Through the hub: 1 agent's p50 within 1.5x the REST send's (a tool call is one
request), 16 agents' p99 under 10x their p50 (no call periodically slow).

Run from the project root:  .venv/bin/python bench/mcp_latency.py [--quick] [--dir FOLDER]
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx2  # noqa: E402  (the mcp SDK's HTTP client)
from common import BenchFailure, ms, report, summary  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from throughput import ServerProcess, start_hub, versions  # noqa: E402

ERAS = ("legacy", "2026-07-28")
HUB_AGENTS = 16  # stdio servers sending at once through the hub
CALL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Params:
    warmup: int = 20
    calls: int = 300
    wakes: int = 30


QUICK = Params(warmup=5, calls=30, wakes=5)


def stdio_server(home: Path, agent: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALLBOARD_")}
    env.update(CALLBOARD_HOME=str(home), CALLBOARD_AGENT=agent)
    return StdioServerParameters(command=sys.executable, args=["-m", "callboard", "mcp"], env=env, cwd=str(home))


@asynccontextmanager
async def http_client(url: str, token: str, agent: str, era: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}", "X-Callboard-Agent": agent}
    async with httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT_S) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=era) as client:
            yield client


async def timed_rounds(alice: Client, bob: Client, params: Params, label: str) -> dict[str, list[float]]:
    """``warmup`` + ``calls`` rounds of send (alice → bob) then read (bob); each checked."""
    sends: list[float] = []
    reads: list[float] = []
    await bob.call_tool("who", {})  # bob exists before the first send
    for i in range(params.warmup + params.calls):
        text = f"{label} {i}"
        began = time.perf_counter()
        sent = await alice.call_tool("send_message", {"to": "bob", "message": text})
        middle = time.perf_counter()
        got = await bob.call_tool("read_messages", {})
        ended = time.perf_counter()
        if sent.is_error or got.is_error:
            raise BenchFailure(f"{label}: a call failed: {sent.content if sent.is_error else got.content}")
        messages = (got.structured_content or {}).get("messages", [])
        if len(messages) != 1 or f"\n{text}\n" not in messages[0]["message"]:
            raise BenchFailure(f"{label}: bob read {messages!r}, not [{text!r}]")
        if i >= params.warmup:
            sends.append(middle - began)
            reads.append(ended - middle)
    return {"send": sends, "read": reads}


async def wake_rounds(alice: Client, bob: Client, rounds: int, label: str) -> list[float]:
    """bob waits in read_messages(wait_seconds); alice sends: the time from alice's call
    returning to bob's returning with the message."""
    wakes: list[float] = []
    for i in range(rounds):
        text = f"{label} wake {i}"
        waiting = asyncio.ensure_future(bob.call_tool("read_messages", {"wait_seconds": 10}))
        await asyncio.sleep(0.05)  # let bob's call reach its wait (a benchmark, not a test)
        await alice.call_tool("send_message", {"to": "bob", "message": text})
        sent = time.perf_counter()
        got = await asyncio.wait_for(waiting, CALL_TIMEOUT_S)
        woken = time.perf_counter()
        if [f"\n{text}\n" in m["message"] for m in (got.structured_content or {}).get("messages", [])] != [True]:
            raise BenchFailure(f"{label}: the waiting read returned {got.structured_content!r}")
        wakes.append(woken - sent)
    return wakes


def hub_stdio_server(home: Path, hub: ServerProcess, agent: str) -> StdioServerParameters:
    """``callboard mcp`` as ``agent``, logged in to ``hub`` (its own home: no embedded store)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALLBOARD_")}
    env.update(
        CALLBOARD_HOME=str(home),
        CALLBOARD_AGENT=agent,
        CALLBOARD_HUB=hub.url,
        CALLBOARD_TOKEN=hub.token,
        CALLBOARD_SEND_RETRY_SECONDS="0",
    )
    return StdioServerParameters(command=sys.executable, args=["-m", "callboard", "mcp"], env=env, cwd=str(home))


async def sends_through_hub(folder: Path, hub: ServerProcess, agents: int, params: Params) -> list[float]:
    """``agents`` stdio servers logged in to ``hub``, all sending at once: each a closed loop of
    ``warmup`` sends (not counted), then ``calls`` timed ones, to one recipient."""
    folder.mkdir()
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(Client(hub_stdio_server(folder, hub, f"m{i}"), mode="legacy"))
            for i in range(agents)
        ]
        for client in clients:  # each agent exists, and its server is warm, before the timing
            await client.call_tool("who", {})
        times: list[float] = []

        async def sender(index: int, client: Client) -> None:
            for i in range(params.warmup + params.calls):
                began = time.perf_counter()
                sent = await client.call_tool("send_message", {"to": "sink", "message": f"m{index} {i}"})
                if sent.is_error:
                    raise BenchFailure(f"through the hub, m{index}: send_message failed: {sent.content}")
                if i >= params.warmup:
                    times.append(time.perf_counter() - began)

        await asyncio.gather(*(sender(i, c) for i, c in enumerate(clients)))
    return times


async def pings_through_hub(folder: Path, hub: ServerProcess, params: Params) -> list[float]:
    """The MCP SDK's own floor: a ping answered by the same kind of server (``callboard mcp``
    logged in to ``hub``), a round trip over its stdio that does no work of ours."""
    folder.mkdir()
    times: list[float] = []
    async with Client(hub_stdio_server(folder, hub, "pinger"), mode="legacy") as client:
        for i in range(params.warmup + params.calls):
            began = time.perf_counter()
            await client.send_ping()
            if i >= params.warmup:
                times.append(time.perf_counter() - began)
    return times


async def rest_sends(url: str, token: str, params: Params) -> list[float]:
    """REST sends to the same hub, for scale: one keep-alive connection, one at a time."""
    times: list[float] = []
    headers = {"Authorization": f"Bearer {token}", "X-Callboard-Agent": "alice"}
    async with httpx2.AsyncClient(base_url=url, headers=headers, timeout=CALL_TIMEOUT_S) as http:
        for i in range(params.warmup + params.calls):
            began = time.perf_counter()
            answer = await http.post("/v1/messages", json={"to": "carol", "text": f"rest {i}"})
            if answer.status_code != 201:
                raise BenchFailure(f"REST send answered {answer.status_code}: {answer.text[:200]}")
            if i >= params.warmup:
                times.append(time.perf_counter() - began)
    return times


def record(figures: dict[str, object], key: str, times: list[float]) -> None:
    s = summary(times)
    figures[f"{key}_ms_p50"] = s["p50"] * 1000
    figures[f"{key}_ms_p99"] = s["p99"] * 1000
    print(f"  {key}: p50 {ms(s['p50'] * 1000)}  p99 {ms(s['p99'] * 1000)}  ({s['n']} calls)")


async def run(params: Params, folder: Path) -> dict[str, object]:
    figures: dict[str, object] = {}
    print("[1] stdio: two 'callboard mcp' processes on one embedded store")
    for era in ERAS:
        home = folder / f"stdio-{era}"
        home.mkdir()
        async with (
            Client(stdio_server(home, "alice"), mode=era) as alice,
            Client(stdio_server(home, "bob"), mode=era) as bob,
        ):
            measured = await timed_rounds(alice, bob, params, f"stdio {era}")
            measured["wake"] = await wake_rounds(alice, bob, params.wakes, f"stdio {era}")
        for tool, times in measured.items():
            record(figures, f"stdio_{era.replace('-', '_')}_{tool}", times)

    print("[2] HTTP: the hub's /mcp (and, for scale, its REST send)")
    hub = start_hub(folder / "hub")
    try:
        for era in ERAS:
            async with (
                http_client(hub.url, hub.token, "alice", era) as alice,
                http_client(hub.url, hub.token, "bob", era) as bob,
            ):
                measured = await timed_rounds(alice, bob, params, f"http {era}")
                measured["wake"] = await wake_rounds(alice, bob, params.wakes, f"http {era}")
            for tool, times in measured.items():
                record(figures, f"http_{era.replace('-', '_')}_{tool}", times)
        record(figures, "rest_send", await rest_sends(hub.url, hub.token, params))
        print("[3] stdio through the hub: 'callboard mcp' logged in to it")
        record(figures, "hub_mcp_ping", await pings_through_hub(folder / "through-hub-ping", hub, params))
        for agents in (1, HUB_AGENTS):
            times = await sends_through_hub(folder / f"through-hub-{agents}", hub, agents, params)
            record(figures, f"hub_{agents}_agent{'s' if agents > 1 else ''}_send", times)
    finally:
        print(f"  {hub.stop()}")
    return figures


def through_hub(figures: dict[str, object]) -> None:
    """The aims through the hub, as ratios: 1 agent against the REST send, 16 agents' tail."""
    one, rest = figures.get("hub_1_agent_send_ms_p50"), figures.get("rest_send_ms_p50")
    p50, p99 = figures.get(f"hub_{HUB_AGENTS}_agents_send_ms_p50"), figures.get(f"hub_{HUB_AGENTS}_agents_send_ms_p99")
    if isinstance(one, float) and isinstance(rest, float):
        figures["hub_1_agent_vs_rest_send"] = one / rest
        print(f"\nthrough the hub, 1 agent: send_message p50 {one / rest:.2f}x the REST send's; aim within 1.5x")
        ping = figures.get("hub_mcp_ping_ms_p50")
        if isinstance(ping, float):  # what the send adds to the SDK's bare round trip
            figures["hub_1_agent_over_ping_vs_rest_send"] = (one - ping) / rest
            print(f"  less the MCP SDK's own stdio round trip (a ping, p50 {ms(ping)}): {(one - ping) / rest:.2f}x")
    if isinstance(p50, float) and isinstance(p99, float):
        figures[f"hub_{HUB_AGENTS}_agents_p99_vs_p50"] = p99 / p50
        print(f"through the hub, {HUB_AGENTS} agents at once: p99 {p99 / p50:.2f}x p50; aim under 10x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few calls, for a smoke check")
    parser.add_argument("--dir", help="make the temporary folder (and the stores) here")
    args = parser.parse_args()
    params = QUICK if args.quick else Params()
    began = time.monotonic()
    print(f"cores: {os.cpu_count()}; {versions()}; params {params}")
    failures: list[str] = []
    figures: dict[str, object] = {"cores": os.cpu_count(), **versions(), "quick": args.quick}
    with tempfile.TemporaryDirectory(prefix="callboard-mcp-bench-", dir=args.dir) as folder:
        try:
            figures.update(asyncio.run(run(params, Path(folder))))
        except BenchFailure as failure:
            print(f"FAIL: {failure}")
            failures.append(str(failure))
    sends = [v for k, v in figures.items() if k.endswith("_send_ms_p50") and k.split("_")[0] in ("stdio", "http")]
    through_hub(figures)
    if sends:
        worst = max(sends)  # type: ignore[type-var]
        print(f"\nmedian send_message: worst of the four {worst:.2f} ms; aim under 5 ms")
    return report(figures, failures, params, began)


if __name__ == "__main__":
    sys.exit(main())
