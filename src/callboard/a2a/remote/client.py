"""The outbound A2A client: one message to an outside agent, and the task it starts, followed.

Opened by the transport that reaches the agent (``transports``) from its stored card. A card that offers streaming is
streamed (each event passed on as it comes); otherwise the message is sent to return at once and
the task is polled with GetTask, the wait doubling up to a cap. A stream that breaks after the
task exists is followed by polling, so a remote dying mid-stream loses nothing it had stored.
Every call runs under a deadline and every failure comes out as one of four errors (see
remote/errors.py): nothing here hangs, and nothing raises a traceback at the user.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from types import TracebackType

from a2a.client import ClientCallContext
from a2a.types import CancelTaskRequest, GetTaskRequest, SendMessageRequest, StreamResponse

from callboard.a2a.remote.card import agent_card_of
from callboard.a2a.remote.errors import remote_problem
from callboard.a2a.remote.parts import user_message
from callboard.a2a.remote.timeouts import RemoteTimeouts
from callboard.a2a.remote.tracking import RemoteUpdate, TaskTracker
from callboard.a2a.transports import transport_for
from callboard.errors import BadRemoteAnswer, RemoteTimedOut, RemoteUnreachable
from callboard.model import Part
from callboard.remotes import OutsideCard


class RemoteConnection:
    """An open SDK client to one outside agent (``async with``)."""

    def __init__(
        self, name: str, card: OutsideCard, *, token: str | None = None, timeouts: RemoteTimeouts = RemoteTimeouts()
    ) -> None:
        self.name = name
        self.card = card
        self.timeouts = timeouts
        transport = transport_for(card.url)  # the card was stored from this address
        try:
            self._opened = transport.open(agent_card_of(card), token=token, timeouts=timeouts, streaming=card.streaming)
        except Exception as exc:
            raise BadRemoteAnswer(f"remote agent {name}'s card cannot be used: {exc}.") from exc
        self._client = self._opened.client

    async def __aenter__(self) -> RemoteConnection:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._opened.close()

    def deadline_from_now(self) -> float:
        """The monotonic time by which a task sent now must settle."""
        return time.monotonic() + self.timeouts.deadline

    async def send(
        self,
        message_id: str,
        parts: list[Part],
        *,
        tracker: TaskTracker | None = None,
        until: float | None = None,
    ) -> AsyncIterator[RemoteUpdate]:
        """Send one message and follow the task it starts (or, given a tracker that follows a
        task, continues) until the task is final or waits on us. Yields each update once."""
        tracker = tracker or TaskTracker(self.name)
        tracker.taken = False
        tracker.answer()  # a task that waits on us: this message answers it
        until = until if until is not None else self.deadline_from_now()
        message = user_message(
            message_id, parts, task_id=tracker.task_id or None, context_id=tracker.context_id or None
        )
        request = SendMessageRequest(message=message)
        stream = self._client.send_message(request, context=self._context(until)).__aiter__()
        try:
            while not tracker.settled:
                event = await self._next(stream, until, "sending the message")
                if event is None:
                    if self.card.streaming:
                        # The stream's end: the remote is done with our message, and what its
                        # task shows now is its word, even the question we answered (asked again).
                        tracker.answered = None
                    break
                for update in tracker.take(event):
                    yield update
        except RemoteUnreachable:
            if not tracker.task_id:
                raise  # nothing reached the remote that we know of: the caller sends again
            # The stream broke once the task existed: follow it by polling instead.
        finally:
            await _close(stream)
        async for update in self.follow(tracker, until=until):
            yield update

    async def follow(self, tracker: TaskTracker, *, until: float | None = None) -> AsyncIterator[RemoteUpdate]:
        """Poll the task with GetTask, backing off, until it is final or waits on us. A remote
        that does not answer a poll is polled again until ``until``; then RemoteTimedOut."""
        until = until if until is not None else self.deadline_from_now()
        delay = self.timeouts.poll_first
        problem: RemoteUnreachable | None = None
        # A remote shows the question we answered until it takes our answer up; one that still
        # shows it after a call's time asks it again.
        grace = time.monotonic() + self.timeouts.call
        while not tracker.settled:
            remaining = until - time.monotonic()
            if remaining <= 0:
                raise self._too_late(tracker, problem)
            if time.monotonic() > grace:
                tracker.answered = None
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, self.timeouts.poll_most)
            try:
                task = await self._client.get_task(GetTaskRequest(id=tracker.task_id), context=self._context(until))
            except Exception as exc:
                found = remote_problem(exc, self.name, f"asking about task {tracker.task_id}")
                if not isinstance(found, RemoteUnreachable):
                    raise found from exc
                problem = found
                continue
            for update in tracker.take_task(task):
                yield update

    async def cancel(self, remote_task_id: str) -> None:
        """Ask the remote to cancel its task; its answer (or silence) is its business."""
        until = time.monotonic() + self.timeouts.call
        try:
            await self._client.cancel_task(CancelTaskRequest(id=remote_task_id), context=self._context(until))
        except Exception as exc:
            raise remote_problem(exc, self.name, f"canceling task {remote_task_id}") from exc

    def _context(self, until: float) -> ClientCallContext:
        remaining = max(0.05, until - time.monotonic())
        return ClientCallContext(timeout=min(self.timeouts.call, remaining))

    async def _next(self, stream: AsyncIterator[StreamResponse], until: float, doing: str) -> StreamResponse | None:
        """The stream's next event, or None at its end; bounded by the task's deadline too (the
        call timeout bounds only the silence between two events)."""
        remaining = until - time.monotonic()
        if remaining <= 0:
            raise RemoteTimedOut(f"remote agent {self.name} did not finish within {self.timeouts.deadline:g} s.")
        try:
            return await asyncio.wait_for(anext(stream), timeout=remaining)
        except StopAsyncIteration:
            return None
        except TimeoutError as exc:
            raise RemoteTimedOut(
                f"remote agent {self.name} did not finish within {self.timeouts.deadline:g} s."
            ) from exc
        except Exception as exc:
            raise remote_problem(exc, self.name, doing) from exc

    def _too_late(self, tracker: TaskTracker, problem: RemoteUnreachable | None) -> RemoteTimedOut:
        last = f" (last: {problem.message})" if problem else ""
        return RemoteTimedOut(
            f"remote agent {self.name} left task {tracker.task_id} {tracker.state.value} for "
            f"{self.timeouts.deadline:g} s, past its deadline{last}."
        )


async def _close(stream: AsyncIterator) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:  # a broken stream may fail to close; it is dropped either way
            pass
