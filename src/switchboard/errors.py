"""The errors a user, a script or a model can see, each with a stable code.

Every error names what went wrong and what to do next in one sentence. Faces turn them into
an exit status 2 (CLI) or a 4xx JSON body (hub); the ``code`` never changes once published.
"""

from __future__ import annotations


def listed(names: list[str], most: int = 5) -> str:
    """Names for a sentence: all of a few, or the first ``most`` and how many more (a channel
    can have a thousand members; the full list goes in the error's details)."""
    if len(names) <= most:
        return ", ".join(names)
    return f"{', '.join(names[:most])} and {len(names) - most} more"


class SwitchboardError(Exception):
    """Base of every user-facing error. ``code`` is stable; ``http_status`` is for the hub."""

    code = "error"
    http_status = 400

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class BadRequest(SwitchboardError):
    code = "bad_request"


class BadName(SwitchboardError):
    code = "bad_name"


class BadAddress(SwitchboardError):
    code = "bad_address"


class TooLarge(SwitchboardError):
    code = "too_large"
    http_status = 413


class NoIdentity(SwitchboardError):
    code = "no_identity"


class UnknownRecipient(SwitchboardError):
    code = "unknown_recipient"
    http_status = 404


class NoLiveSession(SwitchboardError):
    code = "no_live_session"
    http_status = 409


class NotMember(SwitchboardError):
    code = "not_member"
    http_status = 403


class UnknownMessage(SwitchboardError):
    code = "unknown_message"
    http_status = 404


class UnknownAgent(SwitchboardError):
    code = "unknown_agent"
    http_status = 404


class UnknownChannel(SwitchboardError):
    code = "unknown_channel"
    http_status = 404


class UnknownSession(SwitchboardError):
    code = "unknown_session"
    http_status = 404


class UnknownWorkspace(SwitchboardError):
    code = "unknown_workspace"
    http_status = 404


class AlreadyExists(SwitchboardError):
    code = "already_exists"
    http_status = 409


class HasUnreadMail(SwitchboardError):
    code = "has_unread_mail"
    http_status = 409


class IdempotencyConflict(SwitchboardError):
    code = "idempotency_conflict"
    http_status = 409


class StoreUnavailable(SwitchboardError):
    code = "store_unavailable"
    http_status = 503


class UnknownToken(SwitchboardError):
    code = "unknown_token"
    http_status = 404


class Unauthorized(SwitchboardError):
    code = "unauthorized"
    http_status = 401


class Forbidden(SwitchboardError):
    code = "forbidden"
    http_status = 403


class RateLimited(SwitchboardError):
    code = "rate_limited"
    http_status = 429


class TooManyStreams(RateLimited):
    """Over the open streams and waiting long-polls one credential may hold (``up --max-streams``)."""

    code = "too_many_streams"


class HeadersTooLarge(SwitchboardError):
    code = "headers_too_large"
    http_status = 431


class RequestTimeout(SwitchboardError):
    code = "request_timeout"
    http_status = 408


class HubUnavailable(SwitchboardError):
    code = "hub_unavailable"
    http_status = 503


def error_class(code: str) -> type[SwitchboardError]:
    """The error class for a stable code (a HubClient raises what the hub answered)."""
    return _BY_CODE.get(code, SwitchboardError)


def _all_subclasses(cls: type[SwitchboardError]) -> list[type[SwitchboardError]]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_all_subclasses(direct))]


_BY_CODE = {cls.code: cls for cls in _all_subclasses(SwitchboardError)}
