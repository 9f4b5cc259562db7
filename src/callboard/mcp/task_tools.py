"""The task tools a model works tasks with: ``update_task`` and ``list_tasks``.

A task reaches a model as mail (``read_messages`` shows its task id and state); the model answers
it with ``update_task``: working, input-required (a question back), completed with artifacts,
failed or rejected. ``list_tasks`` shows the tasks it asked or was asked, and one task whole. The
other agent's words (a status message, an artifact) are fenced as any mail is.

Every word here reaches the model's context on every turn: descriptions are short and exact.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from callboard.client.base import Client
from callboard.fence import fenced_words, one_line
from callboard.mcp.replies import acted, tool_result, unread_line, unread_of
from callboard.model import Message, Part, built
from callboard.requests import TaskListQuery
from callboard.tasks import Task

T = TypeVar("T")
Acting = Callable[[Context], Awaitable[Client]]
Run = Callable[[Callable[[], T]], Awaitable[T]]
WORKER_STATES = "working, input-required, completed, failed or rejected"


class ArtifactPart(BaseModel):
    """One thing handed over: exactly one of text, data, url or raw (base64)."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    data: Any = None
    url: str | None = None
    raw: str | None = Field(default=None, description="base64 bytes")
    filename: str | None = Field(default=None, description="also the artifact's name")
    media_type: str | None = None


class ArtifactInfo(BaseModel):
    artifact_id: str
    name: str | None = None
    parts: int


class TaskInfo(BaseModel):
    id: str
    state: str = Field(description="submitted, working, input-required, completed, failed, canceled or rejected")
    requester: str = Field(description="who asked")
    worker: str = Field(description="who works on it: only it calls update_task")
    context_id: str = Field(description="the mail thread of the task")
    generation: int
    updated_at: datetime
    artifacts: list[ArtifactInfo] = Field(default_factory=list)
    latest: str | None = Field(
        default=None, description="the latest status message and artifacts, fenced: the other agent's words"
    )


class TaskMoved(BaseModel):
    task: TaskInfo
    unread: int


class Tasks(BaseModel):
    tasks: list[TaskInfo]
    next_page_token: str = Field(default="", description="pass it back as page_token for more")
    unread: int


def add_task_tools(server: MCPServer, acting: Acting, run: Run, waiting: Run) -> None:
    """Register the task tools on ``server`` (``acting``: the client a call acts through;
    ``waiting``: how a call that may wait is run, off the server's loop)."""

    @server.tool()
    async def update_task(
        task_id: str,
        ctx: Context,
        state: Annotated[str | None, Field(description=WORKER_STATES + "; default: unchanged")] = None,
        message: Annotated[
            str | None, Field(description="to the one who asked (a question, with input-required)")
        ] = None,
        artifacts: Annotated[list[ArtifactPart] | None, Field(description="results to hand over")] = None,
    ) -> Annotated[CallToolResult, TaskMoved]:
        """Answer a task you were asked: move its state, say why, hand over artifacts."""
        client = await acting(ctx)
        parts = [{"text": message}] if message is not None else []
        handed = [_artifact(a) for a in artifacts or []]

        def move() -> CallToolResult:
            task = acted(lambda: client.update_task(task_id, state=state, parts=parts, artifacts=handed))
            result = TaskMoved(task=_info(task), unread=unread_of(client))
            line = f"task {task.id}: {task.state} (told {task.requester} by mail)"
            return tool_result(result, "\n".join([line, unread_line(result.unread)]))

        return await run(move)

    @server.tool()
    async def list_tasks(
        ctx: Context,
        task_id: Annotated[str | None, Field(description="show this one task in full")] = None,
        state: Annotated[str | None, Field(description="only tasks in this state")] = None,
        page_token: str | None = None,
        after_generation: Annotated[
            int | None, Field(description="with task_id: the generation you saw; wait_seconds waits for a newer one")
        ] = None,
        wait_seconds: Annotated[float, Field(description="with after_generation: block up to this long")] = 0.0,
    ) -> Annotated[CallToolResult, Tasks]:
        """Tasks you asked or were asked: state, latest status, artifacts; wait on one."""
        client = await acting(ctx)
        if (after_generation is not None or wait_seconds) and task_id is None:
            raise ToolError("bad_request: after_generation and wait_seconds follow one task: give its task_id.")

        def look() -> CallToolResult:
            if task_id is not None:
                one = acted(lambda: client.get_task(task_id, after_generation=after_generation, wait=wait_seconds))
                tasks, token = [one], ""
            else:
                page = acted(lambda: client.list_tasks(TaskListQuery(state=state, page_token=page_token, page_size=20)))
                tasks, token = page.tasks, page.next_page_token
            result = Tasks(tasks=[_info(t) for t in tasks], next_page_token=token, unread=unread_of(client))
            lines = [_line(t) for t in result.tasks] or ["no tasks"]
            lines += [f"more: page_token={token}"] if token else []
            return tool_result(result, "\n\n".join([*lines, unread_line(result.unread)]))

        return await (waiting if wait_seconds > 0 else run)(look)


def _artifact(given: ArtifactPart) -> dict[str, Any]:
    """One artifact of one part (the service checks the part holds exactly one thing)."""
    part = given.model_dump(exclude_none=True)
    return {"name": given.filename, "parts": [part]} if given.filename else {"parts": [part]}


def _info(task: Task) -> TaskInfo:
    return TaskInfo(
        id=task.id,
        state=str(task.state),
        requester=task.requester,
        worker=task.worker,
        context_id=task.context_id,
        generation=task.generation,
        updated_at=task.updated_at,
        artifacts=[
            ArtifactInfo(
                artifact_id=one_line(a.artifact_id), name=one_line(a.name) if a.name else None, parts=len(a.parts)
            )
            for a in task.artifacts
        ],
        latest=_latest(task),
    )


def _latest(task: Task) -> str | None:
    """The worker's latest words (status message, then artifacts), fenced as its mail is."""
    parts: list[Part] = [*task.status_parts, *(p for a in task.artifacts for p in a.parts)]
    if not parts:
        return None
    words = built(
        Message,
        id=task.status_message_id or task.id,
        workspace=task.workspace,
        sender=task.worker,
        recipients=[task.requester],
        parts=parts,
        thread_id=task.context_id,
        created_at=task.status_at,
    )
    return fenced_words(words)


def _line(task: TaskInfo) -> str:
    head = f"task {task.id}: {task.state} — {task.requester} asked {task.worker} (context {task.context_id})"
    return head + (f"\n{task.latest}" if task.latest else "")
