"""Our errors as the SDK's A2A errors, so every binding answers them with A2A's codes.

The SDK's dispatchers answer an ``A2AError`` with its JSON-RPC code or HTTP status and turn
anything else into an internal error (logged with a traceback). So no Callboard error leaves
the handler as itself: ``a2a_errors`` maps each family once, keeping its sentence.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from a2a.utils.errors import (
    A2AError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from callboard.errors import CallboardError, Invalid, NotFound, Refused, TaskFinished, Unavailable


def a2a_error(error: CallboardError, *, canceling: bool = False) -> A2AError:
    """The A2A error answering ``error``; ``canceling``: it answers a CancelTask."""
    message = f"{error.message} ({error.code})"
    if isinstance(error, NotFound):
        # A task of another workspace or owner is "not found", never "not yours".
        return TaskNotFoundError(message=message)
    if isinstance(error, TaskFinished):
        return TaskNotCancelableError(message=message) if canceling else UnsupportedOperationError(message=message)
    if isinstance(error, Refused):
        return TaskNotCancelableError(message=message) if canceling else InvalidRequestError(message=message)
    if isinstance(error, Invalid):
        return InvalidParamsError(message=message)
    if isinstance(error, Unavailable):
        return InternalError(message=message)
    return InvalidRequestError(message=message)


@contextmanager
def a2a_errors(*, canceling: bool = False) -> Iterator[None]:
    """Raise a Callboard error raised inside as its A2A error."""
    try:
        yield
    except CallboardError as error:
        raise a2a_error(error, canceling=canceling) from None
