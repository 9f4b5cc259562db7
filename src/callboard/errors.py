"""The errors a user, a script or a model can see, each with a stable code.

Every error names what went wrong and what to do next in one sentence. Faces turn them into
an exit status 2 (CLI) or a 4xx JSON body (hub); the ``code`` never changes once published.
Each error belongs to one of four families (``NotFound``, ``Refused``, ``Invalid``,
``Unavailable``); what a family means over HTTP is the hub's business (``hub/errors.py``).
"""

from __future__ import annotations


def listed(names: list[str], most: int = 5) -> str:
    """Names for a sentence: all of a few, or the first ``most`` and how many more (a channel
    can have a thousand members; the full list goes in the error's details)."""
    if len(names) <= most:
        return ", ".join(names)
    return f"{', '.join(names[:most])} and {len(names) - most} more"


class CallboardError(Exception):
    """Base of every user-facing error. ``code`` is stable."""

    code = "error"

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class NotFound(CallboardError):
    """What the request names does not exist (or is not the caller's to see)."""


class Refused(CallboardError):
    """The request is well formed, and the mailbox's rules or the credential say no."""


class Invalid(CallboardError):
    """The request itself is malformed or too large: sending it again unchanged will not help."""


class Unavailable(CallboardError):
    """Something the request needs is not answering now: trying again later may work."""


class BadRequest(Invalid):
    code = "bad_request"


class BadName(Invalid):
    code = "bad_name"


class BadAddress(Invalid):
    code = "bad_address"


class TooLarge(Invalid):
    code = "too_large"


class NoIdentity(Invalid):
    code = "no_identity"


class UnknownRecipient(NotFound):
    code = "unknown_recipient"


class NoLiveSession(Refused):
    code = "no_live_session"


class NotMember(Refused):
    code = "not_member"


class UnknownMessage(NotFound):
    code = "unknown_message"


class UnknownAgent(NotFound):
    code = "unknown_agent"


class UnknownChannel(NotFound):
    code = "unknown_channel"


class UnknownSession(NotFound):
    code = "unknown_session"


class UnknownWorkspace(NotFound):
    code = "unknown_workspace"


class AlreadyExists(Refused):
    code = "already_exists"


class HasUnreadMail(Refused):
    code = "has_unread_mail"


class IdempotencyConflict(Refused):
    code = "idempotency_conflict"


class UnknownTask(NotFound):
    code = "unknown_task"


class TaskFinished(Refused):
    """The task is completed, failed, canceled or rejected: nothing moves it any more."""

    code = "task_finished"


class BadTaskState(Invalid):
    code = "bad_task_state"


class RemoteUnreachable(Unavailable):
    """An outside A2A agent did not answer (down, refused the connection, 5xx): the message is
    kept and sent again, with the same id, until the remote's deadline."""

    code = "remote_unreachable"


class RemoteTimedOut(RemoteUnreachable):
    """An outside A2A agent took longer than its deadline to answer a call or to finish a task."""

    code = "remote_timeout"


class RemoteRefused(Refused):
    """An outside A2A agent answered with an A2A error (unknown task, not allowed, unsupported)."""

    code = "remote_refused"


class BadRemoteAnswer(Invalid):
    """An outside A2A agent answered something that is not A2A 1.0 (a broken card, junk JSON)."""

    code = "bad_remote_answer"


class UnknownRound(NotFound):
    """No such round, or not one the caller takes part in or opened."""

    code = "unknown_round"


class TimedOut(Unavailable):
    """What a command waited for (a task's end, a reply) did not come within its timeout."""

    code = "timed_out"


class TaskBusy(Unavailable):
    """The task kept changing while an update of it was being written (other updates won)."""

    code = "task_busy"


class BadWebhook(Invalid):
    """A push-notification URL the hub will not post to (not http(s), or a private target)."""

    code = "bad_webhook"


class StoreUnavailable(Unavailable):
    code = "store_unavailable"


class StoreInUse(Refused):
    """Another hub already serves this embedded store (one hub per SQLite file)."""

    code = "store_in_use"


class UnknownToken(NotFound):
    code = "unknown_token"


class Unauthorized(Refused):
    code = "unauthorized"


class Forbidden(Refused):
    code = "forbidden"


class RateLimited(Refused):
    code = "rate_limited"


class TooManyStreams(RateLimited):
    """Over the open streams and waiting long-polls one credential may hold (``up --max-streams``)."""

    code = "too_many_streams"


class HeadersTooLarge(Invalid):
    code = "headers_too_large"


class RequestTimeout(Invalid):
    code = "request_timeout"


class HubUnavailable(Unavailable):
    code = "hub_unavailable"


def error_class(code: str) -> type[CallboardError]:
    """The error class for a stable code (a HubClient raises what the hub answered)."""
    return _BY_CODE.get(code, CallboardError)


def _all_subclasses(cls: type[CallboardError]) -> list[type[CallboardError]]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_all_subclasses(direct))]


# The families share the base's code: only a class that names its own code is found by it.
_BY_CODE = {cls.code: cls for cls in _all_subclasses(CallboardError) if "code" in vars(cls)}
