"""demo --scenario a2a: tasks between agents, one of them an outside A2A agent.

Everything runs in this process, on a throwaway embedded store: two Callboard agents (``lead``
and ``writer``) and an outside A2A agent (``translator``: the a2a-sdk's own server on a loopback
port, which knows nothing of Callboard). ``lead`` gives ``writer`` a task; ``writer`` registers
the translator by its agent card and tasks it; the translator asks a question back
(input-required), ``writer`` answers in the thread, the translator completes with an artifact,
and ``writer`` completes lead's task with it. Each step is what the CLI and the MCP tools do.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from callboard.cli import render
from callboard.client.base import Client
from callboard.model import MailItem, Part
from callboard.requests import ReadQuery, SendRequest, TaskRequest
from callboard.tasks import TaskArtifact, TaskState

TRANSLATION = "Les commandes indiquent désormais leur devise."
QUESTION = "Formal or informal French?"
MAIL_WAIT_SECONDS = 15.0


def _translator_app(url: str):  # noqa: ANN202 — a2a's server parts are imported only for this scene
    """The outside agent: the SDK's own server, asking one question back before it answers."""
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Task, TaskStatus
    from a2a.types import Part as A2APart
    from a2a.types import TaskState as A2AState
    from starlette.applications import Starlette

    class Translator(AgentExecutor):
        async def execute(self, context: RequestContext, queue: EventQueue) -> None:
            task = context.current_task
            context_id = task.context_id if task else context.context_id
            if task is None:
                status = TaskStatus(state=A2AState.TASK_STATE_SUBMITTED)
                await queue.enqueue_event(Task(id=context.task_id, context_id=context_id, status=status))
            assert context.task_id is not None and context_id is not None, "the SDK names both before it executes"
            updater = TaskUpdater(queue, context.task_id, context_id)
            if task is None or task.status.state != A2AState.TASK_STATE_INPUT_REQUIRED:
                await updater.start_work()
                await updater.requires_input(updater.new_agent_message([A2APart(text=QUESTION)]))
                return
            await updater.add_artifact([A2APart(text=TRANSLATION)], name="release-note.fr.txt", last_chunk=True)
            await updater.complete(updater.new_agent_message([A2APart(text="Voilà.")]))

        async def cancel(self, context: RequestContext, queue: EventQueue) -> None:
            await TaskUpdater(queue, context.task_id or "", context.context_id or "").cancel()

    card = AgentCard(
        name="translator",
        description="translates release notes into French (an outside A2A agent)",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="translate", name="translate", description="English to French", tags=["french"])],
        supported_interfaces=[AgentInterface(url=f"{url}/rpc", protocol_binding="JSONRPC", protocol_version="1.0")],
    )
    handler = DefaultRequestHandler(agent_executor=Translator(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/rpc")])


@contextmanager
def outside_translator() -> Iterator[str]:
    """The translator listening on a loopback port of this process; yields its URL."""
    import uvicorn

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(_translator_app(url), log_level="warning", access_log=False))
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[listener])), name="demo-translator", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(10)


def _mail_from(client: Client, sender: str, *, until: TaskState) -> list[MailItem]:
    """Wait for mail from ``sender`` about a task in state ``until``; print each on the way, and
    return them all (the last says ``until``)."""
    deadline = time.monotonic() + MAIL_WAIT_SECONDS
    seen: list[MailItem] = []
    while time.monotonic() < deadline:
        batch = client.read(ReadQuery(wait=1.0)).items  # read once: every item of it is shown
        for item in batch:
            render.mail_item(item)
        seen += batch
        if any(item.message.sender == sender and item.task_state == until for item in batch):
            return seen
    raise TimeoutError(f"no mail from {sender} saying {until.value} within {MAIL_WAIT_SECONDS:g} s")


def run(lead: Client, writer: Client, step: Callable[[str], None]) -> None:
    """The scene, on two clients of one embedded store (``lead``'s opened it: its background
    work sends to the outside agent)."""
    with outside_translator() as url, _background(lead):
        step(f"an outside A2A agent is up at {url} (the a2a-sdk's own server; it knows nothing of Callboard)")
        step("writer registers it by its agent card: callboard agent add-remote translator URL")
        remote = writer.add_remote("translator", url)
        render.console.print(
            f"{render.peer(remote.name)}: {render.peer(remote.description or '')} (remote, {render.peer(remote.url)})"
        )

        step("lead gives writer a task: callboard task send writer '…'")
        asked = lead.open_task(TaskRequest(to="writer", text="Write the 1.4 release note, in French."))
        render.console.print(f"task {asked.task.id}: {render.task_state(asked.task.state.value)}")
        step("writer reads it (its mail says which task, and its state) and starts on it")
        for item in writer.read().items:
            render.mail_item(item)
        writer.update_task(asked.task.id, state=TaskState.WORKING, parts=[Part(text="On it.")])

        step("writer tasks the translator like any agent: callboard send translator '…' — an A2A task")
        render.send_result(writer.send(SendRequest(to="translator", text="Orders now carry a currency field.")))
        step("the translator asks a question back (input-required): it arrives as mail in writer's thread")
        question = _mail_from(writer, "translator", until=TaskState.INPUT_REQUIRED)[-1]
        step("writer answers in the thread: the same remote task goes on; the artifact comes back as mail")
        writer.send(SendRequest(to="translator", text="Formal, please.", thread_id=question.message.thread_id))
        answers = _mail_from(writer, "translator", until=TaskState.COMPLETED)
        translation = next(p.text for item in answers for p in item.message.parts if p.text == TRANSLATION)

        step("writer completes lead's task with the translation as its artifact: callboard task update …")
        artifact = TaskArtifact(artifact_id="note", name="release-note.fr.txt", parts=[Part(text=translation)])
        writer.update_task(asked.task.id, state=TaskState.COMPLETED, artifacts=[artifact])
        step("lead hears every move as mail, and the task holds the artifact: callboard task show ID")
        for item in lead.read().items:
            render.mail_item(item)
        render.task_detail(lead.get_task(asked.task.id))


@contextmanager
def _background(client: Client) -> Iterator[None]:
    """The store's background work on a thread of this process, as `callboard mcp` runs it."""
    stop = client.run_background()
    try:
        yield
    finally:
        stop()
