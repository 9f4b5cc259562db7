"""The remote outbox, the pump's side of it: mail to outside A2A agents claimed under a lease,
what sending one takes, and where each stands (what ``status`` shows of it).

A row is written with its message (``remotes``). A pump (``a2a/remote/pump``, in the hub, in
``callboard mcp`` and inline in a CLI send) claims due rows, sends each, and tells this module
how it went: the remote took it (its delivery is then read by the remote; the row follows the
remote's task), try again later, or settled (done; failed with the reason).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from callboard.limits import REMOTE_ERROR_CHARS
from callboard.model import Caller, Message, MessageStatus, RemoteSendStatus, built
from callboard.remotes import RemoteAgent
from callboard.service.remotes import Remotes
from callboard.store.base import Store
from callboard.store.records import RemoteSend
from callboard.tasks import WAITING_ON_REQUESTER, Task, TaskEvent


@dataclass(frozen=True, slots=True)
class Outgoing:
    """Everything a pump needs to send one outbox row."""

    send: RemoteSend
    message: Message
    task: Task
    remote: RemoteAgent
    token: str | None

    @property
    def worker(self) -> Caller:
        """The outside agent as the task's worker: its updates are mail from it."""
        return Caller(workspace=self.send.workspace, agent=self.remote.name, person=False)


class RemoteOutbox:
    """Claiming, reading and settling the rows of the remote outbox."""

    def __init__(self, store: Store, remotes: Remotes, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.remotes = remotes
        self.clock = clock

    def claim(self, lease_seconds: float, limit: int) -> list[RemoteSend]:
        """Due rows, leased to the caller for ``lease_seconds`` (renew while working on one)."""
        return self.store.remotes.claim_remote_sends(self.clock(), lease_seconds, limit)

    def renew(self, send: RemoteSend, lease_seconds: float) -> None:
        self.store.remotes.renew_remote_send(
            send.workspace, send.message_id, self.clock() + timedelta(seconds=lease_seconds)
        )

    def outgoing(self, send: RemoteSend) -> Outgoing | None:
        """What sending the row takes; None (and the row failed) when its message, task or
        remote is gone."""
        message = self.store.sent.get_message(send.workspace, send.message_id)
        task = self.store.tasks.get_task(send.workspace, send.task_id)
        found = self.remotes.credentials(send.workspace, send.remote)
        if message is None or task is None or found is None:
            gone = "outside agent" if found is None else "message" if message is None else "task"
            self.settle(send, f"its {gone} is gone; nothing was sent.")
            return None
        return Outgoing(send, message, task, found[0], found[1])

    def of_message(self, workspace: str, message_id: str) -> RemoteSend | None:
        rows = self.store.remotes.remote_sends(workspace, message_id=message_id)
        return rows[0] if rows else None

    def remote_task_of(self, send: RemoteSend) -> tuple[str, str] | None:
        """The remote's task id and context id for the row's task, as an earlier row of the same
        task (the message a follow-up answers) or this row found them."""
        if send.remote_task_id:
            return send.remote_task_id, send.remote_context_id or ""
        earlier = self.store.remotes.remote_sends(send.workspace, task_id=send.task_id)
        for row in reversed(earlier):  # the latest that knows it
            if row.remote_task_id:
                return row.remote_task_id, row.remote_context_id or ""
        return None

    def question_answered(self, send: RemoteSend) -> TaskEvent | None:
        """The remote's question the row's message answers: the task's last status before the
        message, when it waited on its requester; None for a message that answers none."""
        statuses: list[TaskEvent] = []
        for event in self.store.tasks.task_events(send.workspace, send.task_id, 0):
            if event.message_id == send.message_id:
                break
            if event.kind == "status":
                statuses.append(event)
        return statuses[-1] if statuses and statuses[-1].state in WAITING_ON_REQUESTER else None

    def superseded(self, send: RemoteSend) -> bool:
        """Whether a later message of the same task went out after this one (a follow-up): that
        one's row follows the remote task from then on, not this one."""
        rows = self.store.remotes.remote_sends(send.workspace, task_id=send.task_id)
        return bool(rows) and rows[-1].message_id != send.message_id

    def taken(self, send: RemoteSend, remote_task_id: str, remote_context_id: str) -> None:
        """The remote took the message: its delivery is read (by the remote), its task followed."""
        self.store.remotes.remote_send_started(send.workspace, send.message_id, remote_task_id, remote_context_id)
        self.store.mailbox.mark_read(send.workspace, send.remote, [send.message_id], self.clock())

    def retry(self, send: RemoteSend, error: str | None, after_seconds: float) -> None:
        """Let the row go, due again after ``after_seconds``; ``error``: why the try failed
        (None: it did not, another pump goes on with it)."""
        retry_at = self.clock() + timedelta(seconds=after_seconds)
        self.store.remotes.remote_send_retry(
            send.workspace, send.message_id, error[:REMOTE_ERROR_CHARS] if error else None, retry_at
        )

    def settle(self, send: RemoteSend, error: str | None = None) -> None:
        """Done (no error) or failed: never claimed again; its delivery is acknowledged, so the
        outside agent's mailbox holds nothing unread."""
        state = "failed" if error else "done"
        self.store.remotes.remote_send_finished(
            send.workspace, send.message_id, state, error[:REMOTE_ERROR_CHARS] if error else None
        )
        self.store.mailbox.ack(send.workspace, send.remote, [send.message_id], self.clock())

    def status(self, caller: Caller, status: MessageStatus) -> MessageStatus:
        """The message's status with its task's state and, for mail to an outside agent, how
        its sending stands."""
        message = self.store.sent.get_message(caller.workspace, status.message_id)
        if message is None or not message.task_id:
            return status
        task = self.store.tasks.get_task(caller.workspace, message.task_id)
        sends = self.store.remotes.remote_sends(caller.workspace, message_id=status.message_id)
        update: dict[str, object] = {"task_id": message.task_id, "task_state": task.state if task else None}
        if sends:
            row = sends[0]
            update["remote"] = built(
                RemoteSendStatus,
                remote=row.remote,
                state=row.state,
                attempts=row.attempts,
                last_error=row.last_error,
                remote_task_id=row.remote_task_id,
            )
        return status.model_copy(update=update)
