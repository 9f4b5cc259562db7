"""bench/a2a.py's last figure: an outside A2A client's task → a live Claude Code session's model request.

A real Claude Code (the version pinned in tests/agent_clis_e2e/conftest.py as CLAUDE_CODE_CURRENT,
from the npm cache the client tests use; installed there if missing) runs headless with its
stdin open against the local mock model (tests/support/mock_model.py), with alice's
``callboard mcp`` logged in to the benchmark's hub (CALLBOARD_HUB / CALLBOARD_TOKEN), as
tests/agent_clis_e2e/test_claude_code_a2a.py sets it up. After its first turn it sits idle. Then,
alternating, one message at a time:

- ``a2a``: the official ``a2a-sdk`` client sends alice a task (JSON-RPC ``SendMessage``,
  ``returnImmediately``) with a token that names an outside caller: hub → alice's mail → her
  server → the session's messaging socket → a turn;
- ``frame``: this process writes the raw frame straight into the same session's socket
  (bench/claude_wake.py's ``without``): Claude Code's own latency, the floor.

Latency: just before the send (or the write) → the mock model reading the request that carries
the text. Before each, the session's previous turn has finished, its registry says ``idle``, and
a random 20-80 ms pause has passed (bench/claude_wake.py's ``wait_idle``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageConfiguration, SendMessageRequest
from common import BenchFailure, ms, percentile

ROOT = Path(__file__).resolve().parent.parent
AGENT = "alice"
SERVER = "callboard"
# Outside callers in turn: one sender's 20 messages a minute to one agent would be a flood the
# guards hold back (guards.py); this measures delivery, not the guard.
CALLERS = ("outside-1", "outside-2", "outside-3", "outside-4")
PATHS = ("a2a", "frame")
WAKE_TIMEOUT_S = 30.0
FIRST_TURN_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Rounds:
    warmup: int  # per path, not counted
    messages: int  # per path


def missing_tools() -> list[str]:
    """What the real Claude Code needs and this machine lacks (node, npm)."""
    return [tool for tool in ("node", "npm") if shutil.which(tool) is None]


def measure_claude(hub_url: str, token_for: Callable[[str], str], rounds: Rounds, folder: Path) -> dict[str, Any]:
    """The figures of both paths (p50, p95, max, n in ms) and their ratio; raises BenchFailure."""
    # The client-test machinery (tests/…) imports from the project root; bench/claude_wake.py
    # (for its waits) from bench/. Appended, not prepended: bench/a2a.py would shadow the SDK.
    for path in (str(ROOT), str(Path(__file__).resolve().parent)):
        if path not in sys.path:
            sys.path.append(path)
    import pytest
    from claude_wake import HEADLESS, Lane, first_turn, socket_path_of, wait, wait_idle

    from callboard.integrations.claude_code import sessions as claude_sessions
    from tests.agent_clis_e2e.conftest import CLAUDE_CODE_CURRENT, Machine, claude_code_env, install
    from tests.support.mock_model import MockModel

    try:
        claude = install(CLAUDE_CODE_CURRENT)
    except pytest.fail.Exception as error:
        raise BenchFailure(f"Claude Code {CLAUDE_CODE_CURRENT.version} is not installed: {error}") from None
    machine = Machine(folder / "claude-machine")
    sock_tmp = Path(tempfile.mkdtemp(prefix="cb-cc-"))  # short: a socket path has ~100 bytes
    tokens = {caller: token_for(caller) for caller in CALLERS}
    times: dict[str, list[float]] = {path: [] for path in PATHS}
    with MockModel(tool_input=None) as model:
        try:
            server = machine.mcp_server(AGENT)
            server["env"] = {**server["env"], "CALLBOARD_HUB": hub_url, "CALLBOARD_TOKEN": token_for(AGENT)}
            config = {"mcpServers": {SERVER: {"type": "stdio", **server}}}
            argv = [claude, *HEADLESS, "--mcp-config", json.dumps(config), "--strict-mcp-config"]
            session = machine.start(argv, claude_code_env(machine, model, {"TMPDIR": str(sock_tmp)}))
            lane = Lane("alice", first_turn(session), machine)
            socket_path = socket_path_of(session)
            if not socket_path:
                raise BenchFailure("the Claude Code session has no messaging socket")
            card_url = f"{hub_url}/a2a/default/{AGENT}/.well-known/agent-card.json"
            wait(
                lambda: _card_served(card_url), FIRST_TURN_TIMEOUT_S, f"{AGENT}'s card (her server in the hub)", session
            )
            init = next(e for e in session.events() if e.get("subtype") == "init")
            print(f"Claude Code {init.get('claude_code_version')} (pid {session.pid}), {AGENT}'s server on the hub")
            send = _Sender(card_url)
            try:
                for i in range(len(PATHS) * (rounds.warmup + rounds.messages)):
                    path = PATHS[i % len(PATHS)]
                    nonce = f"cc-{i}-{uuid.uuid4().hex[:8]}"
                    text = f"Task {nonce} for you."
                    wait_idle(lane)
                    began = time.monotonic()
                    if path == "a2a":
                        send(tokens[CALLERS[(i // len(PATHS)) % len(CALLERS)]], text)
                    else:
                        claude_sessions.write_frame(socket_path, text)
                    request = wait(
                        lambda nonce=nonce: model.requests_mentioning(nonce),
                        WAKE_TIMEOUT_S,
                        f"the model request for {nonce} ({path})",
                        session,
                    )[0]
                    lane.turns += 1
                    latency_ms = (request.at - began) * 1000
                    if i // len(PATHS) >= rounds.warmup:
                        times[path].append(latency_ms)
                    print(f"  {path:5s} {nonce}: {ms(latency_ms)}")
            finally:
                send.close()
            wait(lambda: len(session.results()) >= lane.turns, WAKE_TIMEOUT_S, "the last turn", session)
            if session.close() != 0:
                raise BenchFailure(f"Claude Code exited {session.process.returncode}{session.transcript()[-2000:]}")
        except BaseException:
            machine.stop_all()
            raise
        finally:
            shutil.rmtree(sock_tmp, ignore_errors=True)
    return _figures(times, CLAUDE_CODE_CURRENT.version)


def _figures(times: dict[str, list[float]], version: str) -> dict[str, Any]:
    figures: dict[str, Any] = {"claude_code": version}
    for path, values in times.items():
        p50, p95 = percentile(values, 50), percentile(values, 95)
        figures.update({f"claude_{path}_p50": p50, f"claude_{path}_p95": p95, f"claude_{path}_max": max(values)})
        figures[f"claude_{path}_n"] = len(values)
    figures["claude_a2a_over_frame_p50"] = figures["claude_a2a_p50"] / figures["claude_frame_p50"]
    figures["claude_a2a_over_frame_p95"] = figures["claude_a2a_p95"] / figures["claude_frame_p95"]
    return figures


def _card_served(card_url: str) -> bool:
    """Whether the hub serves the agent's card: her server has entered her in the hub."""
    try:
        with urllib.request.urlopen(card_url, timeout=5) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


class _Sender:
    """The outside A2A client: one event loop and one connection pool for every send."""

    def __init__(self, card_url: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._http = httpx.AsyncClient(timeout=WAKE_TIMEOUT_S)
        resolver = A2ACardResolver(self._http, card_url, agent_card_path="")
        card = self._loop.run_until_complete(resolver.get_agent_card())
        config = ClientConfig(httpx_client=self._http, streaming=False, supported_protocol_bindings=["JSONRPC"])
        self._client = ClientFactory(config).create(card)

    def __call__(self, token: str, text: str) -> None:
        """SendMessage as ``token``'s caller; back once the hub has stored the task (it answers
        at once: ``returnImmediately``), not when the task is done."""
        self._loop.run_until_complete(self._send(token, text))

    async def _send(self, token: str, text: str) -> None:
        request = SendMessageRequest(
            message=Message(role=Role.ROLE_USER, message_id=f"bench-{uuid.uuid4().hex}", parts=[Part(text=text)]),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        self._http.headers["Authorization"] = f"Bearer {token}"
        async for event in self._client.send_message(request):
            if not event.HasField("task"):
                raise BenchFailure(f"the send answered {event.WhichOneof('payload')}, not a task")

    def close(self) -> None:
        self._loop.run_until_complete(self._http.aclose())
        self._loop.close()
