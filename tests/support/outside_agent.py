"""A real outside A2A agent for the tests: the a2a-sdk's own server (DefaultRequestHandler,
InMemoryTaskStore, its route factories) on uvicorn on 127.0.0.1, run as a subprocess so a test
can kill it mid-stream or start it late.

What it does is chosen by the first word of the message it gets:

    complete ...  working, an artifact "result: <text>", completed
    ask ...       working, input-required "which branch?"; the follow-up: an artifact
                  "answer: <follow-up text>", completed
    restate ...   as ask, but the follow-up's events open with the stored task as it stands
                  (still input-required, the question its status message): a stream that
                  starts with a snapshot, a send that returns before the answer is taken up
    nag ...       as ask, but the follow-up is asked the same question again (no working)
    chunks ...    an artifact in two chunks (the second appended), completed
    hang ...      working, then nothing ever again
    stall ...     nothing at all (the request is never answered)
    die ...       working, then the process exits (a stream cut mid-way)
    Round ...     a Callboard round's phase prompt: proposes (an artifact, as above), or in a vote
                  phase completes saying "vote: <the first proposer named>"
    reply ...     a plain message and no task

Every message id it receives (and every task it is asked to cancel, as ``{"canceled": id}``)
is appended, one JSON line each, to ``--seen FILE``.
``--mode garbage`` serves a valid card whose endpoint answers junk; ``--mode garbage-card``
serves junk as the card; ``--require-token T`` answers its endpoint only to that bearer token. ``OutsideAgent`` is the test-side handle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

RESULT_PREFIX = "result: "


def _card(base: str, streaming: bool):  # noqa: ANN202 (a2a types are imported lazily, in the child)
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

    return AgentCard(
        name="outside-echo",
        description="an outside A2A agent for the tests",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="answers", tags=["test"])],
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=f"{base}/rpc")],
    )


def _executor(seen: Path):  # noqa: ANN202
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.tasks import TaskUpdater
    from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus

    class ScriptedExecutor(AgentExecutor):
        async def execute(self, ctx, queue) -> None:  # noqa: ANN001
            text = ctx.get_user_input()
            with seen.open("a") as log:
                log.write(
                    json.dumps({"message_id": ctx.message.message_id, "task_id": ctx.task_id, "text": text}) + "\n"
                )
            word = text.split(" ", 1)[0]
            if word == "stall":
                await asyncio.Event().wait()
            if word == "reply":
                await queue.enqueue_event(
                    Message(
                        role=Role.ROLE_AGENT, message_id=f"r-{ctx.message.message_id}", parts=[Part(text=f"hi: {text}")]
                    )
                )
                return
            context_id = ctx.current_task.context_id if ctx.current_task else ctx.context_id
            if ctx.current_task is None:
                opened = Task(
                    id=ctx.task_id, context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
                )
                opened.metadata.update({"word": word})  # what the follow-up goes by
                await queue.enqueue_event(opened)
            up = TaskUpdater(queue, ctx.task_id, context_id)
            if ctx.current_task is not None and ctx.current_task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
                if ctx.current_task.metadata["word"] == "nag":
                    await up.requires_input(up.new_agent_message([Part(text="which branch?")]))
                    return
                if ctx.current_task.metadata["word"] == "restate":
                    await queue.enqueue_event(ctx.current_task)
                    await asyncio.sleep(0.3)  # what a send that returns at once, or a poll, sees first
                await up.add_artifact([Part(text=f"answer: {text}")], name="answer", last_chunk=True)
                await up.complete(up.new_agent_message([Part(text="done")]))
                return
            await up.start_work(up.new_agent_message([Part(text="on it")]))
            if word == "Round" and "vote phase" in text and "Proposals by: " in text:
                first = text.split("Proposals by: ", 1)[1].split(",")[0].split(".")[0].strip()
                await up.complete(up.new_agent_message([Part(text=f"vote: {first}, the first one")]))
            elif word in ("ask", "restate", "nag"):
                await up.requires_input(up.new_agent_message([Part(text="which branch?")]))
            elif word == "hang":
                await asyncio.Event().wait()
            elif word == "die":
                await asyncio.sleep(0.3)
                os._exit(3)
            elif word == "chunks":
                await up.add_artifact([Part(text="part one")], artifact_id="a1", name="chunked", last_chunk=False)
                await up.add_artifact([Part(text="part two")], artifact_id="a1", append=True, last_chunk=True)
                await up.complete()
            else:
                await up.add_artifact([Part(text=RESULT_PREFIX + text)], name="result", last_chunk=True)
                await up.complete(up.new_agent_message([Part(text="done")]))

        async def cancel(self, ctx, queue) -> None:  # noqa: ANN001
            with seen.open("a") as log:
                log.write(json.dumps({"canceled": ctx.task_id}) + "\n")
            await TaskUpdater(queue, ctx.task_id or "", ctx.context_id or "").cancel()

    return ScriptedExecutor()


def _a2a_app(base: str, streaming: bool, seen: Path):  # noqa: ANN202
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from starlette.applications import Starlette

    card = _card(base, streaming)
    handler = DefaultRequestHandler(agent_executor=_executor(seen), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/rpc")])


def _guarded(app, token: str):  # noqa: ANN001, ANN202
    """``app`` answering its endpoint only to ``Authorization: Bearer <token>`` (its card stays public)."""
    from starlette.responses import JSONResponse

    async def guarded(scope, receive, send) -> None:  # noqa: ANN001
        headers = dict(scope.get("headers") or [])
        if (
            scope["type"] == "http"
            and scope["path"] == "/rpc"
            and headers.get(b"authorization") != f"Bearer {token}".encode()
        ):
            await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded


def _garbage_app(base: str, junk_card: bool):  # noqa: ANN202
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    async def card(request) -> object:  # noqa: ANN001
        if junk_card:
            return PlainTextResponse("<html>this is not a card</html>", media_type="application/json")
        return JSONResponse(agent_card_to_dict(_card(base, streaming=False)))

    async def rpc(request) -> object:  # noqa: ANN001
        return JSONResponse({"hello": "this is not JSON-RPC"})

    return Starlette(routes=[Route("/.well-known/agent-card.json", card), Route("/rpc", rpc, methods=["POST"])])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seen", type=Path, required=True)
    parser.add_argument("--mode", choices=["a2a", "garbage", "garbage-card"], default="a2a")
    parser.add_argument("--no-streaming", action="store_true")
    parser.add_argument("--require-token", default=None)
    args = parser.parse_args()
    import uvicorn

    base = f"http://127.0.0.1:{args.port}"
    if args.mode == "a2a":
        app = _a2a_app(base, not args.no_streaming, args.seen)
    else:
        app = _garbage_app(base, args.mode == "garbage-card")
    if args.require_token:
        app = _guarded(app, args.require_token)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


# --- the test side ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OutsideAgent:
    """One outside agent process on a port chosen up front (so it can be started late, or
    started again after it died, at the same URL)."""

    def __init__(self, root: Path, *, mode: str = "a2a", streaming: bool = True, token: str | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.seen_path = root / f"seen-{self.port}.jsonl"
        self.seen_path.touch()
        self.log_path = root / f"outside-{self.port}.log"
        self.mode = mode
        self.streaming = streaming
        self.token = token  # its endpoint answers only with this bearer token
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> OutsideAgent:
        from tests.support.waiting import wait_until

        argv = [sys.executable, __file__, "--port", str(self.port), "--seen", str(self.seen_path), "--mode", self.mode]
        if not self.streaming:
            argv.append("--no-streaming")
        if self.token:
            argv += ["--require-token", self.token]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        wait_until(self._answers, 30, f"the outside agent on port {self.port} to answer")
        return self

    def _answers(self) -> bool:
        import httpx

        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(
                f"the outside agent exited {self.proc.returncode}: {self.log_path.read_text()[-2000:]}"
            )
        try:
            return httpx.get(f"{self.url}/.well-known/agent-card.json", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def seen(self) -> list[dict[str, str]]:
        """The messages it received, oldest first."""
        return [r for r in self._log() if "message_id" in r]

    def canceled(self) -> list[str]:
        """The ids of the tasks it was asked to cancel."""
        return [r["canceled"] for r in self._log() if "canceled" in r]

    def _log(self) -> list[dict[str, str]]:
        return [json.loads(line) for line in self.seen_path.read_text().splitlines() if line.strip()]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


if __name__ == "__main__":
    main()
