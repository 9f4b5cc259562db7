"""What a hub's failures mean to its caller: a request that failed on the way (``transport_error``:
not there, a certificate refused, taken and not answered in time) or an answer that is an error
(``answer_error``: the hub's own error code, as our error class). httpx loads with the first
request (see client/hub.py), so it is imported only inside."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from callboard.address import is_loopback
from callboard.errors import CallboardError, HubUnavailable, error_class

if TYPE_CHECKING:
    import ssl

    import httpx


def transport_error(url: str, error: BaseException) -> HubUnavailable:
    """The error for a request to the hub at ``url`` that failed in transport."""
    import httpx

    if (refused := unverified_certificate(error)) is not None:
        return HubUnavailable(
            f"cannot reach the hub at {url}: its certificate could not be verified "
            f"({refused.verify_message or refused.reason}); if its CA is your own, log in with "
            f"'callboard login {url} --ca-cert CA_FILE' (or set CALLBOARD_CA_CERT).",
            reached=False,
            lasting=True,  # no retry mends a certificate: say so at once
        )
    # A request that never connected certainly did nothing; one cut off later may have.
    reached = not isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout))
    if isinstance(error, httpx.ReadTimeout):  # the hub is up: it took the request, and is slow
        return HubUnavailable(
            f"the hub at {url} took the request but did not answer it in time; it is up, and "
            "busy or waiting on something: try again, or look at the hub's log.",
            reached=True,
        )
    # Only a hub on this machine is this machine's to start; another one's address may be wrong.
    here = is_loopback(urlsplit(url).hostname or "")
    remedy = "start it with 'callboard up'" if here else "check that it runs and that the address is right"
    return HubUnavailable(
        f"cannot reach the hub at {url} ({error or type(error).__name__}); {remedy}, "
        "or 'callboard logout' to use this machine's embedded store.",
        reached=reached,
    )


def unverified_certificate(error: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate check that failed under ``error`` (httpx wraps it), if that is what failed."""
    import ssl

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def answer_error(response: httpx.Response) -> CallboardError:
    """Our error for the hub's error answer (its code's class; an unknown code kept as it is)."""
    try:
        error = response.json()["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "hub_error", f"the hub answered {response.status_code}: {response.text[:200]}"
    cls = error_class(code)
    exception = cls(message)
    if cls is CallboardError:
        exception.code = code
    return exception
