"""Tasks: mail with an A2A lifecycle, between a requester and a worker of one workspace.

Every move of a task is mail in the task's thread (its context), to the other party, naming the
task: a requester opens a task by mailing the worker, and follows one up the same way; a
worker's update (a new state, a message, artifacts) is mail to the requester, and a cancel is
mail to the worker. So an agent that tasked another sees its progress by the mail it already
reads, and the worker learns of a cancel the same way. The task's row and its events are
written in the mail's own transaction (``TaskWrite``): both commit, or neither.

Whose move it is, and which moves a state allows, is tasks.py's rule; who may see a task is
this module's: its requester and its worker, in its workspace. Anyone else is told there is no
such task (never that it exists elsewhere). A move is optimistic: it is written only if the
task is still at the generation it was read at, and read again and retried when another move
came first.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from callboard.address import AgentAddress, json_problem, parse_addresses
from callboard.errors import BadRequest, Forbidden, TaskBusy, TooLarge, UnknownTask
from callboard.limits import HISTORY_MAX, PAGE_SIZE_MAX, PUSH_CONFIGS_MAX, Limits
from callboard.model import Caller, Message, Part, SendResult, built, new_id
from callboard.requests import SendRequest, TaskListQuery, TaskRequest
from callboard.rounds import ROUND_METADATA
from callboard.service.content import check_idempotency_key, check_text
from callboard.service.events import AsyncSubscription, MailboxEvents
from callboard.service.identity_gate import AgentCaller, as_agent
from callboard.service.push_targets import check_webhook
from callboard.service.sending import Sending
from callboard.service.task_changes import (
    checked_artifacts,
    checked_parts,
    mail_words,
    move_write,
    new_task_write,
)
from callboard.store.base import Store
from callboard.store.records import TaskConflict, TaskQuery, TaskWrite
from callboard.tasks import (
    TASK_KEY_PREFIX,
    PushConfig,
    Task,
    TaskArtifact,
    TaskEvent,
    TaskPage,
    TaskSent,
    TaskState,
    moved_past,
    parse_state,
    requester_answers,
    requester_cancels,
    taken_up,
    worker_moves,
    worker_notes,
)

log = logging.getLogger(__name__)

# A move that lost the race to another reads the task again and tries again, this many times.
MOVE_ATTEMPTS = 8
# An A2A client's message id is its retries' idempotency key, under this prefix.
A2A_KEY_PREFIX = "a2a:"


class Tasking:
    """Opening, moving, reading and following tasks; push-notification configs."""

    def __init__(
        self,
        store: Store,
        sending: Sending,
        events: MailboxEvents,
        limits: Limits,
        clock: Callable[[], datetime],
        *,
        allow_private_webhooks: bool = False,
    ) -> None:
        self.store = store
        self.sending = sending
        self.events = events
        self.limits = limits
        self.clock = clock
        self.allow_private_webhooks = allow_private_webhooks
        # Told of each move a worker makes, after it committed (the service sets it: rounds).
        self.worker_moved: Callable[[AgentCaller, Task], None] | None = None

    # --- the requester's moves -------------------------------------------------------------

    def open_task(self, caller: Caller, request: TaskRequest) -> TaskSent:
        """A new task for ``request.to`` (no ``task_id``), or the requester's follow-up on one.
        ``message_id``: the requester's id for this message (an A2A client's), its retries' key."""
        caller = as_agent(caller)
        worker, task_id, context_id, subject = request.to, request.task_id, request.context_id, request.subject
        a2a_message_id, metadata = request.message_id, request.metadata
        parts = ([built(Part, text=request.text)] if request.text is not None else []) + request.parts
        key = _a2a_key(a2a_message_id, self.limits)
        _check_metadata(metadata, self.limits)
        if task_id is not None:
            return self._follow_up(caller, task_id, parts, context_id, a2a_message_id, key, subject)
        new_task = new_id()
        worker_name = _worker_name(worker)
        written: list[TaskWrite] = []

        def write(message: Message) -> TaskWrite:
            change = new_task_write(
                message, task_id=new_task, worker=worker_name, metadata=metadata, a2a_message_id=a2a_message_id
            )
            written.append(change)
            return change

        mail = SendRequest(to=worker, parts=list(parts), subject=subject, thread_id=context_id, idempotency_key=key)
        sent = self.sending.submit(caller, mail, task=write, task_id=new_task).result()
        return self._task_sent(caller, sent, new_task, written)

    def _follow_up(
        self,
        caller: Caller,
        task_id: str,
        parts: Sequence[Part | dict],
        context_id: str | None,
        a2a_message_id: str | None,
        key: str | None,
        subject: str | None,
    ) -> TaskSent:
        for _ in range(MOVE_ATTEMPTS):
            task = self._party_task(caller, task_id)
            _requester_only(caller, task, "follow it up")
            if context_id is not None and context_id != task.context_id:
                raise BadRequest(
                    f"task {task_id} is in context {task.context_id}, not {context_id}: give its own context, or none."
                )
            state = requester_answers(task_id, task.state)
            written: list[TaskWrite] = []

            def write(
                message: Message, task: Task = task, state: TaskState = state, written: list[TaskWrite] = written
            ) -> TaskWrite:
                change = move_write(task, message, state, status_parts=None, a2a_message_id=a2a_message_id)
                written.append(change)
                return change

            try:
                mail = SendRequest(
                    to=task.worker, parts=list(parts), subject=subject, thread_id=task.context_id, idempotency_key=key
                )
                sent = self.sending.submit(caller, mail, task=write, task_id=task_id).result()
            except TaskConflict:
                continue
            return self._task_sent(caller, sent, task_id, written)
        raise _busy(task_id)

    def cancel_task(self, caller: Caller, task_id: str) -> Task:
        """The requester's cancel: the task is canceled, and its worker told by mail."""
        caller = as_agent(caller)
        for _ in range(MOVE_ATTEMPTS):
            task = self._party_task(caller, task_id)
            _requester_only(caller, task, "cancel it")
            state = requester_cancels(task_id, task.state)
            words = [built(Part, text=f"task {task_id}: canceled by {caller.agent}.")]
            moved = self._move(caller, task, task.worker, words, state, status_parts=None)
            if moved is not None:
                return moved
        raise _busy(task_id)

    # --- the worker's moves ----------------------------------------------------------------

    def update_task(
        self,
        caller: Caller,
        task_id: str,
        *,
        state: TaskState | str | None = None,
        parts: Sequence[Part | dict] = (),
        artifacts: Sequence[TaskArtifact | dict[str, Any]] = (),
        append: bool = False,
        last_chunk: bool = True,
    ) -> Task:
        """The worker's move: a new state, a status message, artifacts; mail to the requester."""
        caller = as_agent(caller)
        wanted = parse_state(state) if isinstance(state, str) and not isinstance(state, TaskState) else state
        status_parts = checked_parts(parts, self.limits)
        new_artifacts = checked_artifacts(artifacts, self.limits)
        if wanted is None and not status_parts and not new_artifacts:
            raise BadRequest("an update gives a state, a message or an artifact; this one gives none.")
        for _ in range(MOVE_ATTEMPTS):
            task = self._party_task(caller, task_id)
            if caller.agent != task.worker:
                raise Forbidden(
                    f"task {task_id} is worked on by {task.worker}: only it updates the task. You asked "
                    "for it: you may cancel it, or answer it when it asks for input."
                )
            moved_to = (
                worker_moves(task_id, task.state, wanted) if wanted is not None else worker_notes(task_id, task.state)
            )
            words = mail_words(task_id, moved_to, status_parts, new_artifacts)
            # An answer to a task nobody saw its worker take up: it was taken up first (an
            # event of its own, in the same write), so a subscriber sees working, then the answer.
            take_up = wanted not in (None, TaskState.WORKING) and taken_up(task.state) is not None
            moved = self._move(
                caller,
                task,
                task.requester,
                words,
                moved_to,
                status_parts=status_parts if status_parts or wanted is not None else None,
                artifacts=new_artifacts,
                append=append,
                last_chunk=last_chunk,
                take_up=take_up,
            )
            if moved is not None:
                self._worker_moved(caller, moved)
                return moved
        raise _busy(task_id)

    def _worker_moved(self, caller: AgentCaller, task: Task) -> None:
        """Tell the worker's move to whoever watches them (a round, for its phase tasks)."""
        if self.worker_moved is None:
            return
        try:
            self.worker_moved(caller, task)
        except Exception:  # the move stands whatever a watcher makes of it
            log.exception("a watcher of task %s's move failed", task.id)

    def taken_up(self, caller: Caller, task_ids: Sequence[str | None]) -> None:
        """The caller's agent has these tasks' mail in its model's context now (surfaced): a task
        it works on that still waits to be taken up (submitted) is working, and its requester
        hears so, without the agent having to say it. Best effort: surfacing has committed
        already, and a task moved on meanwhile (by its worker, a cancel) keeps that move. A round's
        phase task is left as it is: its answer is the participant's act, and a "working" notice
        per participant and phase would only fill the coordinator's mailbox."""
        for task_id in dict.fromkeys(t for t in task_ids if t):
            task = self.store.tasks.get_task(caller.workspace, task_id)
            if task is not None and ROUND_METADATA in (task.metadata or {}):
                continue
            moved_to = taken_up(task.state) if task is not None and task.worker == caller.agent else None
            if task is not None and moved_to is not None:
                words = mail_words(task_id, moved_to, [], [])
                self._move(caller, task, task.requester, words, moved_to, status_parts=[])

    def _move(
        self,
        caller: Caller,
        task: Task,
        to: str,
        words: list[Part],
        state: TaskState,
        *,
        status_parts: list[Part] | None,
        artifacts: Sequence[TaskArtifact] = (),
        append: bool = False,
        last_chunk: bool = True,
        take_up: bool = False,
    ) -> Task | None:
        """Mail ``words`` to ``to`` in the task's thread, moving the task with it; the task as
        moved, or None when another move came first (read it again and retry)."""
        written: list[TaskWrite] = []

        def write(message: Message) -> TaskWrite:
            change = move_write(
                task,
                message,
                state,
                status_parts=status_parts,
                artifacts=artifacts,
                append=append,
                last_chunk=last_chunk,
                take_up=take_up,
            )
            written.append(change)
            return change

        try:
            mail = SendRequest(to=to, parts=list(words), thread_id=task.context_id)
            self.sending.submit(caller, mail, task=write, task_id=task.id).result()
        except TaskConflict:
            return None
        return written[0].task

    # --- reading and following -------------------------------------------------------------

    def get_task(
        self,
        caller: Caller,
        task_id: str,
        *,
        history_length: int | None = None,
        after_generation: int | None = None,
        wait: float = 0.0,
    ) -> Task:
        """The task, for its requester or worker; ``history_length``: its newest messages with it
        (None or 0: none). Followed: with ``after_generation`` (a generation the caller saw),
        blocks up to ``wait`` seconds until the task moves past it or is final (a long-poll)."""
        caller = as_agent(caller)
        self.check_follow(after_generation, wait)
        task = self._party_task(caller, task_id)
        if after_generation is not None:
            _check_generation(task, after_generation)
            if wait > 0 and not moved_past(task, after_generation):
                task = self._followed(caller, task, after_generation, wait)
        return self._with_history(task, history_length)

    def check_follow(self, after_generation: int | None, wait: float) -> None:
        """A follow's options, checked before anything is looked up or waited on."""
        if after_generation is not None and (
            isinstance(after_generation, bool) or not isinstance(after_generation, int) or after_generation < 0
        ):
            raise BadRequest(f"after_generation is a generation you saw (0 or more), not {after_generation!r}.")
        if not 0 <= wait <= self.limits.wait_seconds:  # False for NaN too
            raise BadRequest(f"wait must be 0-{self.limits.wait_seconds:g} seconds.")
        if wait > 0 and after_generation is None:
            raise BadRequest("wait follows a task past a generation: give after_generation too (0 for its start).")

    def _followed(self, caller: AgentCaller, task: Task, after_generation: int, wait: float) -> Task:
        deadline = time.monotonic() + wait
        with self.events.subscribe(caller.workspace, TASK_KEY_PREFIX + task.id) as changes:
            while True:  # subscribed first, then looked: a change in between still wakes it
                task = self._party_task(caller, task.id)
                remaining = deadline - time.monotonic()
                if moved_past(task, after_generation) or remaining <= 0 or self.events.closed:
                    return task
                changes.wait(remaining)

    def list_tasks(self, caller: Caller, query: TaskListQuery = TaskListQuery()) -> TaskPage:
        """The caller's tasks (as requester or worker; ``with_agent``: only those between it and
        that agent), newest updated first, a page at a time."""
        caller = as_agent(caller)
        page_size, history_length = query.page_size, query.history_length
        if not 1 <= page_size <= PAGE_SIZE_MAX:
            raise BadRequest(f"page size {page_size}: give 1-{PAGE_SIZE_MAX}.")
        _check_history_length(history_length)
        state = query.state
        wanted = parse_state(state) if isinstance(state, str) and not isinstance(state, TaskState) else state
        stored = TaskQuery(
            workspace=caller.workspace,
            agent=caller.agent,
            limit=page_size + 1,  # one more tells whether another page follows
            context_id=query.context_id,
            state=wanted.value if wanted is not None else None,
            updated_after=query.updated_after.timestamp() if query.updated_after is not None else None,
            after=_page_position(query.page_token),
            with_agent=query.with_agent,
        )
        tasks, total = self.store.tasks.list_tasks(stored)
        more, tasks = len(tasks) > page_size, tasks[:page_size]
        token = _page_token(tasks[-1]) if more else ""
        shown = [
            self._with_history(t if query.include_artifacts else t.model_copy(update={"artifacts": []}), history_length)
            for t in tasks
        ]
        return TaskPage(tasks=shown, next_page_token=token, page_size=page_size, total_size=total)

    def task_events(self, caller: Caller, task_id: str, after_generation: int) -> list[TaskEvent]:
        """The task's events past ``after_generation``, oldest first: what a subscriber missed.
        A generation the task has not reached (or below 0) is no place to resume from: Invalid,
        not an empty list that would leave the subscriber waiting for events it has seen."""
        caller = as_agent(caller)
        task = self._party_task(caller, task_id)
        if isinstance(after_generation, bool) or not isinstance(after_generation, int) or after_generation < 0:
            raise BadRequest(f"a generation to resume after is a whole number 0 or more, not {after_generation!r}.")
        _check_generation(task, after_generation)
        return self.store.tasks.task_events(caller.workspace, task_id, after_generation)

    def subscribe_task(self, workspace: str, task_id: str) -> AbstractContextManager[AsyncSubscription]:
        """A waiter woken on every change of the task, from this process or any other (create it
        before reading the task, so no change is missed)."""
        return self.events.subscribe_async(workspace, TASK_KEY_PREFIX + task_id)

    # --- push-notification configs ---------------------------------------------------------

    def set_push_config(
        self,
        caller: Caller,
        task_id: str,
        url: str,
        *,
        config_id: str | None = None,
        token: str | None = None,
        auth_scheme: str | None = None,
        auth_credentials: str | None = None,
    ) -> PushConfig:
        """Post the task's updates to ``url`` (checked: see push_targets); the id defaults to the task's."""
        caller = as_agent(caller)
        task = self._party_task(caller, task_id)
        target = check_webhook(url, allow_private=self.allow_private_webhooks)
        config_id = config_id if config_id is not None else task.id
        check_text(config_id, 200, "the push config id")
        check_text(token, 4096, "the push token")
        check_text(auth_scheme, 100, "the push authentication scheme")
        check_text(auth_credentials, 4096, "the push credentials")
        existing = self.store.tasks.list_push_configs(caller.workspace, task.id)
        if len(existing) >= PUSH_CONFIGS_MAX and all(c.id != config_id for c in existing):
            raise BadRequest(f"task {task.id} has {len(existing)} push configs, the most it may; delete one first.")
        config = PushConfig(
            id=config_id,
            task_id=task.id,
            url=target,
            token=token,
            auth_scheme=auth_scheme,
            auth_credentials=auth_credentials,
            created_at=self.clock(),
        )
        return self.store.tasks.set_push_config(caller.workspace, config)

    def get_push_config(self, caller: Caller, task_id: str, config_id: str) -> PushConfig:
        caller = as_agent(caller)
        self._party_task(caller, task_id)
        config = self.store.tasks.get_push_config(caller.workspace, task_id, config_id)
        if config is None:
            raise UnknownTask(f"task {task_id} has no push config {config_id!r}.", task_id=task_id)
        return config

    def list_push_configs(self, caller: Caller, task_id: str) -> list[PushConfig]:
        caller = as_agent(caller)
        self._party_task(caller, task_id)
        return self.store.tasks.list_push_configs(caller.workspace, task_id)

    def delete_push_config(self, caller: Caller, task_id: str, config_id: str) -> None:
        caller = as_agent(caller)
        self._party_task(caller, task_id)
        if not self.store.tasks.delete_push_config(caller.workspace, task_id, config_id):
            raise UnknownTask(f"task {task_id} has no push config {config_id!r}.", task_id=task_id)

    # --- helpers ---------------------------------------------------------------------------

    def _party_task(self, caller: Caller, task_id: str) -> Task:
        """The task, when the caller is its requester or its worker; else UnknownTask."""
        task = self.store.tasks.get_task(caller.workspace, task_id) if isinstance(task_id, str) else None
        if task is None or caller.agent not in (task.requester, task.worker):
            raise UnknownTask(
                f"no task {task_id!r} asked by or of {caller.agent}; list yours with `callboard task list`.",
                task_id=task_id,
            )
        return task

    def _with_history(self, task: Task, history_length: int | None) -> Task:
        _check_history_length(history_length)
        if not history_length:
            return task
        history = self.store.tasks.task_messages(task.workspace, task.id, history_length)
        return task.model_copy(update={"history": history})

    def _task_sent(self, caller: Caller, sent: SendResult, task_id: str, written: list[TaskWrite]) -> TaskSent:
        """The task and its mail: as this send's transaction committed it (the last write the
        writer ran), not read back; for a retried A2A message, the task the first one went to."""
        if written and not sent.duplicate:
            return TaskSent(task=written[-1].task, send=sent)
        if sent.duplicate:
            first = self.store.sent.get_message(caller.workspace, sent.message_id)
            task_id = first.task_id if first is not None and first.task_id else task_id
        task = self.store.tasks.get_task(caller.workspace, task_id)
        if task is None:
            raise UnknownTask(f"the message {sent.message_id} went to no task.", task_id=task_id)
        return TaskSent(task=task, send=sent)


def _worker_name(worker: str) -> str:
    """The agent a task goes to: one agent (an exact session of it may be named), not a channel."""
    addresses = parse_addresses(worker)
    if len(addresses) != 1 or not isinstance(addresses[0], AgentAddress):
        raise BadRequest(f"a task goes to one agent; {worker!r} is not one agent's address.")
    return addresses[0].name


def _requester_only(caller: Caller, task: Task, what: str) -> None:
    if caller.agent != task.requester:
        raise Forbidden(
            f"task {task.id} was asked by {task.requester}: only it may {what}. You work on it: move it "
            "with update_task (to failed or rejected to stop)."
        )


def _a2a_key(a2a_message_id: str | None, limits: Limits) -> str | None:
    if a2a_message_id is None:
        return None
    key = A2A_KEY_PREFIX + a2a_message_id
    check_idempotency_key(key, limits)
    return key


def _check_metadata(metadata: dict[str, Any] | None, limits: Limits) -> None:
    """A task's metadata: a JSON object that reads back the same, no larger than a message."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise BadRequest("a task's metadata is a JSON object.")
    problem = json_problem(metadata, "metadata")
    if problem is not None:
        raise BadRequest(f"the task's {problem}; give only what JSON can carry.")
    if len(json.dumps(metadata)) > limits.message_bytes:
        raise TooLarge(f"the task's metadata is larger than a message may be ({limits.message_bytes} bytes).")


def _check_generation(task: Task, generation: int) -> None:
    """A generation to follow or resume from is one the task has reached."""
    if generation > task.generation:
        raise BadRequest(
            f"task {task.id} is at generation {task.generation}, not {generation}: "
            f"resume after a generation you saw (0 to {task.generation})."
        )


def _check_history_length(history_length: int | None) -> None:
    if history_length is not None and not 0 <= history_length <= HISTORY_MAX:
        raise BadRequest(f"history length {history_length}: give 0-{HISTORY_MAX}.")


def _busy(task_id: str) -> TaskBusy:
    return TaskBusy(f"task {task_id} kept changing while this move was written (others moved it); try again.")


def _page_token(last: Task) -> str:
    """Where the next page starts, opaque to the caller: the last task's (updated_at, id)."""
    raw = json.dumps([last.updated_at.timestamp(), last.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _page_position(token: str | None) -> tuple[float, str] | None:
    if not token:
        return None
    try:
        at, task_id = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if isinstance(at, int | float) and isinstance(task_id, str):
            return float(at), task_id
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        pass
    raise BadRequest(f"page token {token[:40]!r} is not one a task list gave; start again without it.")
