"""The A2A TCK's system under test, as a Callboard agent: it follows its mailbox and answers
each task by the A2A message id's prefix, as the TCK's scenarios say (its
``scenarios/*.feature``: ``tck-complete-task``, ``tck-artifact-*``, ``tck-input-required``,
``tck-reject-task``, ``tck-stream-*``, ``test-resubscribe-message-id`` …).

It answers as any Callboard worker does: with ``Service.update_task`` (what its MCP tools and
``callboard task update`` call). It runs on a thread beside an in-process hub, on the same
store; it holds its mailbox subscription open the whole time (a stream open on its mailbox, so
the hub knows a blocking send will be answered).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable

from callboard.model import Caller, MailItem, Message, Part
from callboard.requests import ReadQuery, SendRequest
from callboard.service.door import Service
from callboard.tasks import FINAL, TaskArtifact, TaskState

# How long test-resubscribe-message-id stays working: the TCK subscribes meanwhile (twice its
# streaming timeout, which is some seconds).
RESUBSCRIBE_WORKING_SECONDS = 6.0
FILE_BYTES = b"TCK file content"

Step = tuple[TaskState | None, list[Part], list[TaskArtifact], bool, bool]  # state, parts, artifacts, append, last


def _text(text: str) -> list[Part]:
    return [Part(text=text)]


def _artifact(artifact_id: str, parts: list[Part], name: str = "output") -> TaskArtifact:
    return TaskArtifact(artifact_id=artifact_id, name=name, parts=parts)


def _file_parts() -> list[Part]:
    return [Part(raw=base64.b64encode(FILE_BYTES).decode(), filename="output.txt", media_type="text/plain")]


def _url_parts() -> list[Part]:
    return [Part(url="https://example.com/output.txt", filename="output.txt", media_type="text/plain")]


def steps_for(message_id: str, task_id: str) -> list[Step]:
    """What the agent does for a message with this A2A message id, step by step."""
    done: Step = (TaskState.COMPLETED, [], [], False, True)
    working: Step = (TaskState.WORKING, [], [], False, True)

    def artifact(parts: list[Part]) -> Step:
        return (None, [], [_artifact(f"{task_id}-artifact", parts)], False, True)

    prefixes: list[tuple[str, list[Step]]] = [
        ("tck-complete-task", [(TaskState.COMPLETED, _text("Hello from TCK"), [], False, True)]),
        ("tck-artifact-text", [artifact(_text("Generated text content")), done]),
        ("tck-artifact-file-url", [artifact(_url_parts()), done]),
        ("tck-artifact-file", [artifact(_file_parts()), done]),
        ("tck-artifact-data", [artifact([Part(data={"key": "value", "count": 42})]), done]),
        ("tck-input-required", [(TaskState.INPUT_REQUIRED, _text("Please provide more input"), [], False, True)]),
        ("tck-reject-task", [(TaskState.REJECTED, _text("rejected"), [], False, True)]),
        ("tck-stream-001", [working, artifact(_text("Stream hello from TCK")), done]),
        ("tck-stream-002", [done]),
        ("tck-stream-003", [working, artifact(_text("Stream task lifecycle")), done]),
        ("tck-stream-ordering-001", [working, artifact(_text("Ordered output")), done]),
        ("tck-stream-artifact-text", [working, artifact(_text("Streamed text content")), done]),
        ("tck-stream-artifact-file", [working, artifact(_file_parts()), done]),
        (
            "tck-stream-artifact-chunked",
            [
                working,
                (None, [], [_artifact(f"{task_id}-chunked", _text("chunk-1 "))], False, False),
                (None, [], [_artifact(f"{task_id}-chunked", _text("chunk-2"))], True, True),
                done,
            ],
        ),
    ]
    for prefix, steps in prefixes:
        if message_id.startswith(prefix):
            return steps
    return [(TaskState.COMPLETED, _text("Hello from TCK"), [], False, True)]


class ConformanceAgent:
    """``with ConformanceAgent(service, caller, a2a_id_of):`` answers tasks until the block ends.

    ``a2a_id_of(message)``: the A2A client's message id of a mail (the store keeps it beside
    the message)."""

    def __init__(self, service: Service, caller: Caller, a2a_id_of: Callable[[Message], str | None]) -> None:
        self.service = service
        self.caller = caller
        self.a2a_id_of = a2a_id_of
        self.handled: list[str] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="a2a-conformance-agent", daemon=True)
        self._timers: list[threading.Timer] = []

    def __enter__(self) -> ConformanceAgent:
        self.service.directory.enter(self.caller)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for timer in self._timers:
            timer.cancel()
        self._thread.join(10)

    def _run(self) -> None:
        events = self.service.events
        with events.subscribe(self.caller.workspace, self.caller.agent) as mailbox:
            while not self._stop.is_set():
                for item in self.service.mailbox.read(self.caller, ReadQuery(limit=100)).items:
                    try:
                        self._answer(item)
                    except Exception as error:  # recorded: the test prints what went wrong
                        self.failures.append(f"{item.message.id}: {error!r}")
                mailbox.wait(0.5)

    def _answer(self, item: MailItem) -> None:
        message = item.message
        if message.task_id is None or message.sender == self.caller.agent:
            return
        task = self.service.tasking.get_task(self.caller, message.task_id)
        if task.state in FINAL or task.worker != self.caller.agent:
            return  # a cancel notice, or a task already answered
        message_id = self.a2a_id_of(message) or ""
        self.handled.append(message_id)
        if message_id.startswith("tck-message-response"):  # answered by a plain reply, not a task move
            self.service.sending.send(
                self.caller,
                SendRequest(
                    to=task.requester,
                    parts=_text("Direct message response"),
                    thread_id=task.context_id,
                    reply_to=message.id,
                ),
            )
            return
        if message_id.startswith("test-resubscribe-message-id"):
            self._move(task.id, (TaskState.WORKING, [], [], False, True))
            later = threading.Timer(
                RESUBSCRIBE_WORKING_SECONDS,
                self._move,
                args=(task.id, (TaskState.COMPLETED, _text("Resubscribe complete"), [], False, True)),
            )
            later.daemon = True
            self._timers.append(later)
            later.start()
            return
        for step in steps_for(message_id, task.id):
            self._move(task.id, step)

    def _move(self, task_id: str, step: Step) -> None:
        state, parts, artifacts, append, last_chunk = step
        try:
            self.service.tasking.update_task(
                self.caller,
                task_id,
                state=state,
                parts=parts,
                artifacts=artifacts,
                append=append,
                last_chunk=last_chunk,
            )
        except Exception as error:  # a canceled task refuses: recorded, the agent goes on
            self.failures.append(f"{task_id}: {error!r}")
