"""One row of the remote outbox sent: its message to the outside agent, its task followed, and
every update the remote sends written as the task's update by the outside agent.

Loaded by the pump (``pump``) when it first has a row in hand: this is where the A2A SDK comes
in, so a process that never has mail for an outside agent never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from callboard.a2a.remote.card import card_from_json
from callboard.a2a.remote.client import RemoteConnection
from callboard.a2a.remote.timeouts import RemoteTimeouts
from callboard.a2a.remote.tracking import Answered, RemoteUpdate, TaskTracker
from callboard.errors import CallboardError, RemoteUnreachable, TaskFinished
from callboard.model import Part, built, utcnow
from callboard.service.door import Service
from callboard.service.remote_outbox import Outgoing
from callboard.store.records import RemoteSend
from callboard.tasks import FINAL, WORKER_STATES, TaskState


class RowSender:
    """Sends rows of one service's remote outbox (the pump claims them and keeps their lease)."""

    def __init__(self, service: Service, timeouts: RemoteTimeouts, backoff: Callable[[RemoteSend], float]) -> None:
        self.service = service
        self.outbox = service.remote_outbox
        self.timeouts = timeouts
        self.backoff = backoff  # how long an unreachable remote is left before the next try

    async def send_and_follow(self, send: RemoteSend, first_answer_only: bool) -> None:
        """Send the row's message (or follow its task), writing what the remote answers as the
        task's updates; settle the row, or let it come due again later."""
        out = await asyncio.to_thread(self.outbox.outgoing, send)
        if out is None:
            return
        known = await asyncio.to_thread(self.outbox.remote_task_of, send)
        if bool(send.remote_task_id) and await asyncio.to_thread(self.outbox.superseded, send):
            await asyncio.to_thread(self.outbox.settle, send)  # a follow-up's row follows the task now
            return
        if out.task.state in FINAL:  # canceled by its requester (this row may be the cancel's mail)
            if out.task.state is TaskState.CANCELED and known:
                await self._cancel_remote_task(out, known[0])
            await asyncio.to_thread(self.outbox.settle, send)
            return
        question = await asyncio.to_thread(self.outbox.question_answered, send) if known else None
        tracker = TaskTracker(
            out.remote.name,
            task_id=known[0] if known else "",
            context_id=known[1] if known else "",
            state=out.task.state,
            artifact_parts={a.artifact_id: len(a.parts) for a in out.task.artifacts},
            answered=Answered(question.state, question.parts) if question else None,
        )
        until = self._until(send)
        try:
            card = card_from_json(out.remote.url, out.remote.card)
            async with RemoteConnection(out.remote.name, card, token=out.token, timeouts=self.timeouts) as conn:
                following = bool(send.remote_task_id)
                updates = (
                    conn.follow(tracker, until=until)
                    if following
                    else conn.send(out.message.id, out.message.parts, tracker=tracker, until=until)
                )
                async for update in updates:
                    if not await asyncio.to_thread(self._apply, out, update):
                        await self._cancel_remote(conn, tracker)  # canceled here: tell the remote
                        break
                    if first_answer_only and update.kind != "taken" and not tracker.settled:
                        await asyncio.to_thread(self.outbox.retry, send, None, 0)  # the next pump follows
                        return
        except RemoteUnreachable as problem:
            if time.monotonic() < until:
                await asyncio.to_thread(self.outbox.retry, send, problem.message, self.backoff(send))
                return
            await asyncio.to_thread(self._fail, out, problem.message)
            return
        except CallboardError as problem:
            await asyncio.to_thread(self._fail, out, problem.message)
            return
        await asyncio.to_thread(self.outbox.settle, send)

    def _apply(self, out: Outgoing, update: RemoteUpdate) -> bool:
        """Write one update as the outside agent's move; False when the task is final here
        (its requester canceled it), so there is nothing more to follow."""
        if update.kind == "taken":
            self.outbox.taken(out.send, update.remote_task_id, update.context_id)
            return True
        try:
            if update.kind == "artifact" and update.artifact is not None:
                self.service.tasking.update_task(
                    out.worker,
                    out.task.id,
                    artifacts=[update.artifact],
                    append=update.append,
                    last_chunk=update.last_chunk,
                )
            else:
                self._status(out, update)
        except TaskFinished:
            return False
        return True

    def _status(self, out: Outgoing, update: RemoteUpdate) -> None:
        state: TaskState | None = update.state
        parts = list(update.parts)
        if update.state is TaskState.CANCELED:  # the remote gave up on its own: failed, here
            state = TaskState.FAILED
            parts.insert(0, built(Part, text=f"{out.remote.name} canceled the task."))
        elif state not in WORKER_STATES:  # submitted again: nothing moves, a message is news
            state = None
        if state is None and not parts:
            return
        self.service.tasking.update_task(out.worker, out.task.id, state=state, parts=parts)

    def _fail(self, out: Outgoing, reason: str) -> None:
        """The task failed with the reason, told to its sender by mail; the row settled."""
        with contextlib.suppress(TaskFinished):
            text = f"task {out.task.id} failed: {reason}"
            self.service.tasking.update_task(
                out.worker, out.task.id, state=TaskState.FAILED, parts=[built(Part, text=text)]
            )
        self.outbox.settle(out.send, reason)

    async def _cancel_remote_task(self, out: Outgoing, remote_task_id: str) -> None:
        """Tell the remote its task was canceled here; what it answers (or that it is down) is
        its business: the task is canceled here either way."""
        with contextlib.suppress(CallboardError):
            card = card_from_json(out.remote.url, out.remote.card)
            async with RemoteConnection(out.remote.name, card, token=out.token, timeouts=self.timeouts) as conn:
                await conn.cancel(remote_task_id)

    async def _cancel_remote(self, conn: RemoteConnection, tracker: TaskTracker) -> None:
        if tracker.task_id:
            with contextlib.suppress(CallboardError):
                await conn.cancel(tracker.task_id)

    def _until(self, send: RemoteSend) -> float:
        """The row's deadline on this process's monotonic clock: from when the mail was sent."""
        left = send.created_at.timestamp() + self.timeouts.deadline - utcnow().timestamp()
        return time.monotonic() + left
