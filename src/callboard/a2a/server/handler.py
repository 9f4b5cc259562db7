"""Every A2A method over the Service: a task is mail.

``SendMessage`` opens a task (or follows one up) with ``Service.open_task``, which mails its
message to the agent the URL names by every path that agent has; the worker answers with its own
tools (``update_task``), and this handler reads the task back: once, or as a stream of its
events. Nothing here keeps a task in memory: any hub replica answers for any task, and a stream
follows the task's events in the store, woken by ``Service.subscribe_task`` (in this process, from
other replicas through PostgreSQL, from other processes on SQLite).

The caller and the agent addressed come from the call context (``context.py``); the hub's door
(hub/a2a_endpoint.py) has authenticated the caller and checked the agent exists in its workspace.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import nullcontext
from datetime import UTC
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler, validate_request_params
from a2a.types import (
    AgentCard,
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from a2a.types import Task as A2ATask
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError
from a2a.utils.task import validate_page_size

from callboard.a2a.server.cards import GENERATION_AFTER
from callboard.a2a.server.context import CALLER_STATE, WORKER_STATE
from callboard.a2a.server.convert import a2a_event, a2a_part, a2a_task, dict_of, our_parts, our_state
from callboard.a2a.server.errors import a2a_errors
from callboard.errors import UnknownTask
from callboard.model import Caller, new_id
from callboard.model import Message as OurMessage
from callboard.requests import TaskListQuery, TaskRequest
from callboard.service.door import Service
from callboard.service.events import AsyncSubscription
from callboard.tasks import FINAL, WAITING_ON_REQUESTER, PushConfig, Task, TaskSent

Run = Callable[..., Awaitable[Any]]  # runs a blocking service call off the event loop

# A blocking SendMessage waits this long for the worker to finish or ask back; then it answers
# with the task as it is, and the client follows it (GetTask, SubscribeToTask, push).
BLOCKING_WAIT_SECONDS = 3.0
# A stream looks at the store at least this often even with no signal (a missed wake costs delay only).
STREAM_RECHECK_SECONDS = 15.0
SETTLED = FINAL | WAITING_ON_REQUESTER  # where a blocking send or a stream stops: the task waits on others
DEFAULT_PAGE_SIZE = 50
# A task's messages a Task carries when the client names no historyLength (A2A: the server's choice).
DEFAULT_HISTORY = 100
CONTEXT_NAMESPACE = uuid.UUID("6f1c2b0e-5a3d-4c8e-9b7a-2d4e6f8a0c1e")  # A2A contexts named by clients


class CallboardRequestHandler(RequestHandler):
    """The SDK's request handler interface, answered by the Service."""

    def __init__(self, service: Service, run: Run, *, blocking_wait: float = BLOCKING_WAIT_SECONDS) -> None:
        self._service = service
        self._run = run
        self._blocking_wait = blocking_wait

    # --- sending -----------------------------------------------------------------------------

    @validate_request_params  # the proto's required fields, as the SDK's own handler checks them
    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> A2ATask | Message:
        caller, worker = _parties(context)
        assert caller.agent is not None, "the hub's door identifies an agent (identify_by)"
        config = params.configuration
        history = config.history_length if config.HasField("history_length") else DEFAULT_HISTORY
        if history < 0:
            raise InvalidParamsError(message="historyLength must be 0 or more.")
        blocking = not config.return_immediately
        # Where the caller's mailbox stands before the send: a plain reply after it answers the send.
        cursor = await self._run(self._service.mailbox.mailbox_position, caller) if blocking else 0
        # Subscribed before the send: a move of the task after its commit wakes the wait below.
        waiting = (
            self._service.subscriptions.subscribe_async(caller.workspace, caller.agent) if blocking else nullcontext()
        )
        with waiting as mail:
            ours = int(mail is not None and caller.agent == worker)  # a task to oneself: not a reader
            sent, reachable = await self._open(params, caller, worker, ours=ours)
            task = sent.task
            if mail is not None and reachable and task.state not in SETTLED:
                answer = await self._answered(caller, sent, cursor, history, mail)
                if isinstance(answer, Message):
                    return answer
                return a2a_task(answer)  # read with its history already
        if history:
            with a2a_errors():
                task = await self._run(self._service.tasking.get_task, caller, task.id, history_length=history)
        return a2a_task(task)

    @validate_request_params
    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        caller, worker = _parties(context)
        sent, _ = await self._open(params, caller, worker)
        async for event in self._follow(caller, sent.task, stop_at_snapshot=True):
            yield event

    async def _open(
        self, params: SendMessageRequest, caller: Caller, worker: str, *, ours: int = 0
    ) -> tuple[TaskSent, bool]:
        """The task the message opens or follows up, and whether its worker can take it now (a
        live session, or a stream open on its mailbox in this hub; ``ours`` of those waiters
        are the caller's own blocking wait)."""
        message = params.message
        # A read waiting on the worker's mailbox now is woken by the commit and leaves the
        # waiters before the send returns: counted after the send only, it would be missed.
        streaming = self._service.subscriptions.waiting(caller.workspace, worker) > ours
        with a2a_errors():
            parts = our_parts(message.parts)
            metadata = dict_of(message.metadata) if message.HasField("metadata") else None
            if message.task_id:
                await self._own_task(caller, worker, message.task_id, message.context_id)
            sent = await self._run(
                self._service.tasking.open_task,
                caller,
                TaskRequest(
                    to=worker,
                    parts=parts,
                    task_id=message.task_id or None,
                    context_id=thread_of(caller, message.context_id),
                    message_id=sent_id(message),
                    metadata=metadata,
                ),
            )
        if params.configuration.HasField("task_push_notification_config"):
            push = params.configuration.task_push_notification_config
            await self._set_push(caller, sent.task.id, push)
        outcome = sent.send.recipients[0] if sent.send.recipients else None
        live = outcome is not None and (outcome.state == "delivered" or bool(outcome.sessions))
        streaming = streaming or self._service.subscriptions.waiting(caller.workspace, worker) > ours
        return sent, live or streaming

    async def _own_task(self, caller: Caller, worker: str, task_id: str, context_id: str) -> Task:
        """The task a follow-up names: the caller's, worked on by the agent addressed, in the
        context the message names (if it names one)."""
        task = await self._run(self._service.tasking.get_task, caller, task_id)
        if task.worker != worker:
            raise TaskNotFoundError(message=f"no task {task_id!r} of agent {worker}; ask the agent that has it.")
        if context_id and thread_of(caller, context_id) != task.context_id:
            raise InvalidParamsError(
                message=f"context {context_id} is not the context of task {task_id} ({task.context_id})."
            )
        return task

    async def _answered(
        self, caller: Caller, sent: TaskSent, cursor: int, history: int, mail: AsyncSubscription
    ) -> Task | Message:
        """What answers a blocking send: the task once it is final or waits on its requester, or
        the worker's plain reply to the task's mail (A2A's direct Message answer); else, after the
        blocking wait, the task as it is (with its ``history`` newest messages). Every move of the
        task is mail to its requester too, so the requester's mailbox (``mail``, subscribed before
        the send) wakes this wait for both: the task as sent is current until it does."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._blocking_wait
        task = sent.task
        while True:
            left = deadline - loop.time()
            if left <= 0 or self._service.subscriptions.closed:
                break
            await mail.wait(left)
            with a2a_errors():
                task, reply, cursor = await self._run(self._look, caller, task.id, history, cursor, sent)
            if task.state in SETTLED:
                return task
            if reply is not None:
                return a2a_reply(reply, task.context_id)
        with a2a_errors():
            return await self._run(self._service.tasking.get_task, caller, task.id, history_length=history)

    def _look(
        self, caller: Caller, task_id: str, history: int, cursor: int, sent: TaskSent
    ) -> tuple[Task, OurMessage | None, int]:
        """The task (with its history once settled: the answer) and the worker's plain reply past
        ``cursor``, in one trip off the event loop. The requester's every mail wakes its blocking
        sends, so most looks find their task unmoved: they read no history."""
        task = self._service.tasking.get_task(caller, task_id)
        if task.state in SETTLED and history:
            task = self._service.tasking.get_task(caller, task_id, history_length=history)
        reply, cursor = self._reply(caller, cursor, sent.send.message_id, task.worker)
        return task, reply, cursor

    def _reply(self, caller: Caller, cursor: int, asked: str, worker: str) -> tuple[OurMessage | None, int]:
        """The worker's plain reply (no task move) to the mail ``asked`` among the caller's mail
        past ``cursor``, and the cursor past what was looked at."""
        items = self._service.mailbox.deliveries_since(caller, cursor)
        for item in items:
            message = item.message
            if message.reply_to == asked and message.task_id is None and message.sender == worker:
                return message, item.seq
        return None, max((item.seq for item in items), default=cursor)

    async def _follow(
        self, caller: Caller, task: Task, *, stop_at_snapshot: bool, after: int | None = None
    ) -> AsyncGenerator[Event, None]:
        """The task, then each of its events after it (after generation ``after`` if given: a
        subscriber resuming gets what it missed), until it is final or waits on its requester (or
        the hub stops). Subscribed before the store is read, so nothing is missed."""
        yield a2a_task(task)
        if stop_at_snapshot and task.state in SETTLED:
            return
        generation = task.generation if after is None else after
        with self._service.tasking.subscribe_task(caller.workspace, task.id) as changes:
            while not self._service.subscriptions.closed:
                with a2a_errors():
                    events = await self._run(self._service.tasking.task_events, caller, task.id, generation)
                for event in events:
                    yield a2a_event(event, task.context_id)
                    generation = event.generation
                    # A replayed question (before the task as sent) was answered since: go on past it.
                    if event.kind == "status" and event.state in SETTLED and generation >= task.generation:
                        return
                if not events:
                    await changes.wait(STREAM_RECHECK_SECONDS)

    # --- reading and canceling ---------------------------------------------------------------

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> A2ATask | None:
        caller, worker = _parties(context)
        history = params.history_length if params.HasField("history_length") else DEFAULT_HISTORY
        if history < 0:
            raise InvalidParamsError(message="historyLength must be 0 or more.")
        task = await self._agents_task(caller, worker, params.id, history)
        return a2a_task(task)

    async def _agents_task(self, caller: Caller, agent: str, task_id: str, history: int | None = None) -> Task:
        """The caller's task (requester or worker), if it is one of the agent the URL addresses:
        an agent's endpoint answers for its own tasks only."""
        with a2a_errors():
            task = await self._run(self._service.tasking.get_task, caller, task_id, history_length=history)
        if agent not in (task.worker, task.requester):
            raise TaskNotFoundError(message=f"no task {task_id!r} of agent {agent}; ask the agent that has it.")
        return task

    @validate_request_params
    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        caller, agent = _parties(context)  # an agent's endpoint lists the caller's tasks with that agent
        if params.HasField("page_size"):
            validate_page_size(params.page_size)
        history = params.history_length if params.HasField("history_length") else 0
        if history < 0:
            raise InvalidParamsError(message="historyLength must be 0 or more.")
        after = (
            params.status_timestamp_after.ToDatetime(tzinfo=UTC) if params.HasField("status_timestamp_after") else None
        )
        with a2a_errors():
            page = await self._run(
                self._service.tasking.list_tasks,
                caller,
                TaskListQuery(
                    context_id=thread_of(caller, params.context_id),
                    state=our_state(params.status),
                    page_size=params.page_size if params.HasField("page_size") else DEFAULT_PAGE_SIZE,
                    page_token=params.page_token or None,
                    updated_after=after,
                    history_length=history,
                    include_artifacts=params.include_artifacts,
                    with_agent=agent,
                ),
            )
        return ListTasksResponse(
            tasks=[a2a_task(task, include_artifacts=params.include_artifacts) for task in page.tasks],
            next_page_token=page.next_page_token,
            page_size=page.page_size,
            total_size=page.total_size,
        )

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> A2ATask | None:
        caller, agent = _parties(context)
        await self._agents_task(caller, agent, params.id)
        with a2a_errors(canceling=True):
            task = await self._run(self._service.tasking.cancel_task, caller, params.id)
        return a2a_task(task)

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        caller, agent = _parties(context)
        task = await self._agents_task(caller, agent, params.id)
        after = resume_after(context)
        if after is not None:  # the service's rule on where one may resume, checked before the stream starts
            with a2a_errors():
                await self._run(self._service.tasking.task_events, caller, task.id, after)
        if task.state in FINAL and (after is None or after == task.generation):
            raise UnsupportedOperationError(
                message=f"task {task.id} is {task.state.value}: nothing more will happen to it; GetTask reads it."
            )
        async for event in self._follow(caller, task, stop_at_snapshot=False, after=after):
            yield event

    # --- push-notification configs ----------------------------------------------------------

    @validate_request_params
    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        caller, _ = _parties(context)
        return await self._set_push(caller, params.task_id, params)

    async def _set_push(
        self, caller: Caller, task_id: str, params: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        with a2a_errors():
            auth = params.authentication if params.HasField("authentication") else None
            config = await self._run(
                self._service.tasking.set_push_config,
                caller,
                task_id,
                params.url,
                config_id=params.id or None,
                token=params.token or None,
                auth_scheme=auth.scheme if auth is not None and auth.scheme else None,
                auth_credentials=auth.credentials if auth is not None and auth.credentials else None,
            )
        return a2a_push_config(config)

    @validate_request_params
    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        caller, _ = _parties(context)
        with a2a_errors():
            config = await self._run(self._service.tasking.get_push_config, caller, params.task_id, params.id)
        return a2a_push_config(config)

    @validate_request_params
    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        caller, _ = _parties(context)
        with a2a_errors():
            configs = await self._run(self._service.tasking.list_push_configs, caller, params.task_id)
        return ListTaskPushNotificationConfigsResponse(configs=[a2a_push_config(config) for config in configs])

    @validate_request_params
    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        caller, _ = _parties(context)
        with a2a_errors():
            await self._run(self._service.tasking.get_task, caller, params.task_id)  # an unknown task is not found
        try:  # A2A: deleting a config that is gone already is no error
            await self._run(self._service.tasking.delete_push_config, caller, params.task_id, params.id)
        except UnknownTask:
            pass

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        # The public card says all there is: no card holds more for an authenticated caller.
        raise UnsupportedOperationError(message="this agent has no extended card; its public card is complete.")


def sent_id(message: Message) -> str | None:
    """The A2A message id as the mail keeps it: with a suffix of its own per send. A2A asks a
    client for a new id per message, but clients reuse them (the TCK sends the same message, id
    and all, for one test after another, each expecting a task of its own), so an inbound id
    cannot be a retry key; kept beside the mail, it still names the client's message."""
    return f"{message.message_id}#{new_id()}" if message.message_id else None


def resume_after(context: ServerCallContext) -> int | None:
    """The generation a resuming subscriber saw last (the extension's service parameter), if it
    names one; a value that is no whole number is refused, not taken for "from now"."""
    headers = context.state.get("headers") or {}
    raw = headers.get(GENERATION_AFTER.lower())
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        raise InvalidParamsError(
            message=f"{GENERATION_AFTER} is the generation you saw last, a whole number; not {raw[:40]!r}."
        ) from None


def thread_of(caller: Caller, context_id: str) -> str | None:
    """The mail thread an A2A contextId names. Our threads are UUIDs; a client may name its own
    context with any string, which is mapped to a thread of its own, the same every time for the
    same caller (so the client's later messages in that context join it)."""
    if not context_id:
        return None
    try:
        uuid.UUID(context_id)
        return context_id
    except ValueError:
        return str(uuid.uuid5(CONTEXT_NAMESPACE, f"{caller.workspace}/{caller.agent}/{context_id}"))


def a2a_reply(message: OurMessage, context_id: str) -> Message:
    """The worker's plain reply as A2A's direct Message answer."""
    return Message(
        message_id=message.id,
        context_id=context_id,
        role=Role.ROLE_AGENT,
        parts=[a2a_part(part) for part in message.parts],
    )


def a2a_push_config(config: PushConfig) -> TaskPushNotificationConfig:
    out = TaskPushNotificationConfig(id=config.id, task_id=config.task_id, url=config.url, token=config.token or "")
    if config.auth_scheme:
        out.authentication.CopyFrom(
            AuthenticationInfo(scheme=config.auth_scheme, credentials=config.auth_credentials or "")
        )
    return out


def _parties(context: ServerCallContext) -> tuple[Caller, str]:
    """Who calls, and the agent the URL addresses (set by the door and the context builder)."""
    caller = context.state.get(CALLER_STATE)
    worker = context.state.get(WORKER_STATE)
    if not isinstance(caller, Caller) or not isinstance(worker, str):  # only a request past the door gets here
        raise TaskNotFoundError(message="this request came without a caller.")
    return caller, worker
