"""``Pending``: the outcome of work that finishes on another thread or a later loop turn.

The part of ``concurrent.futures.Future`` that the store and the service use (result,
exception, done callbacks, cancelling before the work starts), at a fraction of its cost: a
hub makes two per send, and a Future's Condition (an RLock and Python-level lock methods) made
those a measurable share of a send. Waiting uses one plain lock, taken at creation and given
back when the outcome is set.
"""

from __future__ import annotations

import _thread
from collections.abc import Callable
from concurrent.futures import CancelledError, InvalidStateError
from concurrent.futures import TimeoutError as PendingTimeout
from typing import Generic, TypeVar

T = TypeVar("T")

_WAITING, _RUNNING, _CANCELLED, _DONE = range(4)

__all__ = ["Pending", "PendingTimeout", "completed"]


class Pending(Generic[T]):
    __slots__ = ("_state", "_value", "_error", "_callbacks", "_finished", "_guard")

    def __init__(self) -> None:
        self._state = _WAITING
        self._value: T | None = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Pending[T]], object]] = []
        self._finished = _thread.allocate_lock()
        self._finished.acquire()  # held until the outcome is set: waiters block on it
        self._guard = _thread.allocate_lock()  # orders state changes against new callbacks

    # --- the side that does the work -------------------------------------------------------

    def set_running_or_notify_cancel(self) -> bool:
        """Claim the work: False if the caller cancelled it already (then skip it)."""
        with self._guard:
            if self._state == _CANCELLED:
                return False
            if self._state != _WAITING:
                raise InvalidStateError("the work was claimed already")
            self._state = _RUNNING
            return True

    def set_result(self, value: T) -> None:
        self._finish(value, None)

    def set_exception(self, error: BaseException) -> None:
        self._finish(None, error)

    def _finish(self, value: T | None, error: BaseException | None) -> None:
        with self._guard:
            if self._state in (_DONE, _CANCELLED):
                raise InvalidStateError("the outcome was set already")
            self._value, self._error, self._state = value, error, _DONE
            callbacks, self._callbacks = self._callbacks, []
        self._finished.release()
        for callback in callbacks:
            callback(self)

    # --- the side that waits ---------------------------------------------------------------

    def cancel(self) -> bool:
        """Cancel work not yet started; False once it runs or is done."""
        with self._guard:
            if self._state == _CANCELLED:
                return True
            if self._state != _WAITING:
                return False
            self._state = _CANCELLED
            self._error = CancelledError()
            callbacks, self._callbacks = self._callbacks, []
        self._finished.release()
        for callback in callbacks:
            callback(self)
        return True

    def cancelled(self) -> bool:
        return self._state == _CANCELLED

    def done(self) -> bool:
        return self._state in (_DONE, _CANCELLED)

    def add_done_callback(self, callback: Callable[[Pending[T]], object]) -> None:
        """Call ``callback(self)`` once done: now if it is, else on the thread that finishes it."""
        with self._guard:
            if self._state not in (_DONE, _CANCELLED):
                self._callbacks.append(callback)
                return
        callback(self)

    def result(self, timeout: float | None = None) -> T:
        error = self.exception(timeout)
        if error is not None:
            raise error
        return self._value  # type: ignore[return-value]  # a T once done without an error (None only before)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state not in (_DONE, _CANCELLED):
            if not self._finished.acquire(timeout=-1 if timeout is None else max(timeout, 0.0)):
                raise PendingTimeout()
            self._finished.release()  # let the next waiter through too
        if self._state == _CANCELLED:
            raise CancelledError()
        return self._error


def completed(value: T) -> Pending[T]:
    """An outcome known already."""
    pending: Pending[T] = Pending()
    pending.set_running_or_notify_cancel()
    pending.set_result(value)
    return pending
