"""What went wrong talking to an outside A2A agent, as one of our errors with one clear sentence.

Whatever the SDK, httpx or protobuf raise is sorted into four outcomes, because the caller acts
on each differently: ``RemoteUnreachable`` and ``RemoteTimedOut`` are tried again later (the
message is kept), ``RemoteRefused`` and ``BadRemoteAnswer`` fail the task with the reason.
"""

from __future__ import annotations

import json

import httpx
from a2a.client import A2AClientError, A2AClientTimeoutError, AgentCardResolutionError
from a2a.utils.errors import A2AError
from google.protobuf.json_format import ParseError

from callboard.errors import BadRemoteAnswer, CallboardError, RemoteRefused, RemoteTimedOut, RemoteUnreachable

# HTTP statuses that say "not now" rather than "no": the remote may answer a later try.
_TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_DENIED_STATUS = frozenset({401, 403})


def remote_problem(exc: BaseException, remote: str, doing: str) -> CallboardError:
    """Our error for ``exc``, raised while ``doing`` something with ``remote`` (a name or URL)."""
    if isinstance(exc, CallboardError):
        return exc
    cause = exc.__cause__
    if isinstance(exc, A2AClientTimeoutError | httpx.TimeoutException) or isinstance(cause, httpx.TimeoutException):
        return RemoteTimedOut(f"remote agent {remote} did not answer in time while {doing}; it will be tried again.")
    status = _status_of(exc)
    if status in _DENIED_STATUS:
        return RemoteRefused(
            f"remote agent {remote} refused the request while {doing} (HTTP {status}): check its token "
            "(callboard agent add-remote NAME URL --token T)."
        )
    if status in _TRANSIENT_STATUS or (status is not None and status >= 500):
        return RemoteUnreachable(f"remote agent {remote} answered HTTP {status} while {doing}; it will be tried again.")
    if isinstance(exc, httpx.RequestError) or isinstance(cause, httpx.RequestError):
        return RemoteUnreachable(
            f"remote agent {remote} could not be reached while {doing} ({_first_line(cause or exc)}); "
            "it will be tried again."
        )
    if status is not None:
        return RemoteRefused(f"remote agent {remote} answered HTTP {status} while {doing}.")
    if isinstance(exc, AgentCardResolutionError | ParseError | json.JSONDecodeError | ValueError | TypeError):
        return BadRemoteAnswer(
            f"remote agent {remote} answered something that is not A2A 1.0 while {doing}: {_first_line(exc)}."
        )
    if isinstance(exc, A2AClientError):
        return BadRemoteAnswer(f"remote agent {remote} gave a broken answer while {doing}: {_first_line(exc)}.")
    if isinstance(exc, A2AError):
        # An A2A error the remote sent on purpose (task not found, unsupported operation, ...).
        return RemoteRefused(f"remote agent {remote} refused while {doing}: {_first_line(exc)}.")
    return BadRemoteAnswer(f"remote agent {remote} failed while {doing}: {type(exc).__name__}: {_first_line(exc)}.")


def card_problem(exc: BaseException, card_url: str, seconds: float) -> CallboardError:
    """Our error for a card that did not come from ``card_url`` within ``seconds`` (``agent
    add-remote``, an ``a2a:`` address used the first time): said of the card, with what to
    check, and nothing promised to be tried again (nothing is: the command failed)."""
    if isinstance(exc, CallboardError):
        return exc
    missing = f"the agent card at {card_url} did not arrive"
    cause = exc.__cause__
    timed_out = (TimeoutError, A2AClientTimeoutError, httpx.TimeoutException)
    if isinstance(exc, timed_out) or isinstance(cause, timed_out):
        return RemoteTimedOut(
            f"{missing} within {seconds:g} s (the server there took the request and sent no card in time); "
            "check the URL, or try again once the agent answers."
        )
    status = _status_of(exc)
    if status in _DENIED_STATUS:
        return RemoteRefused(
            f"{missing}: the server answered HTTP {status}; if it wants a token, give it with --token T."
        )
    if status in _TRANSIENT_STATUS or (status is not None and status >= 500):
        return RemoteUnreachable(f"{missing}: the server answered HTTP {status}; try again later.")
    if status is not None:
        there = " (no card there)" if status in (404, 410) else ""
        return BadRemoteAnswer(
            f"{missing}: the server answered HTTP {status}{there}. Give the agent's base URL (its card is at "
            "/.well-known/agent-card.json under it) or the card's own .json URL."
        )
    if isinstance(cause, httpx.RequestError) or isinstance(exc, httpx.RequestError):
        return RemoteUnreachable(
            f"{missing}: nothing answered there ({_first_line(cause or exc)}); check the URL and that the agent runs."
        )
    what = "it is not JSON" if isinstance(cause, json.JSONDecodeError) else _first_line(cause or exc)
    return BadRemoteAnswer(f"what {card_url} served is not an A2A agent card: {what}.")


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    for candidate in (exc, exc.__cause__):
        if isinstance(candidate, httpx.HTTPStatusError):
            return candidate.response.status_code
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    line = text.splitlines()[0]
    return line if len(line) <= 200 else line[:197] + "..."
