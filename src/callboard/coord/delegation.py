"""Following a task to its end: the requester's side of a delegation that waits.

The follower long-polls the task past the last generation it saw (``Client.get_task`` with
``after_generation``), tells each move to ``on_move`` (a state, a status message, an artifact),
and returns the task once it is final. When the timeout passes first, it cancels the task, so
the worker is told by mail and stops, and raises TimedOut: nothing is left running that nobody
waits for. A task that waits on its requester (input-required) is told like any move and
followed on: the requester may answer it from elsewhere (``task send --answer``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from callboard.client.base import Client
from callboard.errors import BadRequest, TaskFinished, TimedOut
from callboard.limits import TIMEOUT_MAX
from callboard.tasks import FINAL, Task

LONG_POLL_SECONDS = 25.0  # one waiting look; well under proxies' idle timeouts


def check_timeout(timeout: float) -> None:
    """A command's ``--timeout``: 0-TIMEOUT_MAX seconds (NaN refused), checked before it sends."""
    if not 0 < timeout <= TIMEOUT_MAX:  # False for NaN too
        raise BadRequest(f"--timeout is 0-{TIMEOUT_MAX:g} seconds, not {timeout:g}.")


def follow_task(client: Client, task: Task, timeout: float, on_move: Callable[[Task], None] | None = None) -> Task:
    """``task`` (as last seen) followed until it is final; TimedOut (after canceling it) when
    ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while task.state not in FINAL:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _cancel(client, task, timeout, on_move)
        moved = client.get_task(task.id, after_generation=task.generation, wait=min(remaining, LONG_POLL_SECONDS))
        if moved.generation > task.generation and on_move is not None:
            on_move(moved)
        task = moved
    return task


def _cancel(client: Client, task: Task, timeout: float, on_move: Callable[[Task], None] | None) -> Task:
    try:
        client.cancel_task(task.id)
    except TaskFinished:  # it ended just now: that end is the answer after all
        ended = client.get_task(task.id)
        if on_move is not None and ended.generation > task.generation:
            on_move(ended)
        return ended
    raise TimedOut(
        f"task {task.id} did not end within {timeout:g} s (it was {task.state}); it was canceled "
        f"and {task.worker} was told. Give a longer --timeout to wait more.",
        task_id=task.id,
        state=str(task.state),
    )
