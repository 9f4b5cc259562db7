"""What ``callboard up`` is asked to serve, checked, and its socket bound, before the hub's code
loads: bad options, a taken port or a store another hub serves fail at once, in one line, while
loading the hub (seconds on a slow machine) is said on stderr.

Light: the standard library and the core only.
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from callboard.address import is_loopback
from callboard.errors import BadRequest, HubUnavailable
from callboard.limits import DEFAULT_WINDOW_SECONDS

DEFAULT_RATE_LIMIT = 2000.0  # requests per second per credential
DEFAULT_MAX_STREAMS = 4000  # per credential: the benchmarks hold 2,000 streams with one token


@dataclass(frozen=True)
class HubOptions:
    host: str = "127.0.0.1"
    port: int = 8465
    rate_limit: float = DEFAULT_RATE_LIMIT
    tls_cert: Path | None = None  # with tls_key: serve HTTPS
    tls_key: Path | None = None
    insecure: bool = False  # serve plain HTTP beyond loopback, knowingly
    liveness_seconds: float = DEFAULT_WINDOW_SECONDS
    max_streams: int = DEFAULT_MAX_STREAMS  # per credential: SSE streams and waiting reads open at once
    public_url: str | None = None  # the hub as A2A callers reach it (agent cards' URLs)
    a2a_compat_0_3: bool = False  # A2A 0.3 clients answered too
    allow_private_webhooks: bool = False  # A2A push notifications may go to loopback and private addresses
    allow_private_remotes: bool = False  # outside A2A agents on private addresses (always on loopback)


def check_options(options: HubOptions) -> None:
    """Refuse bounds out of range, a public URL that is none, half a TLS pair, a pair that does not load, and plain HTTP beyond loopback unless
    ``insecure`` asks for it."""
    cert, key = options.tls_cert, options.tls_key
    if not 1 <= options.liveness_seconds <= 86_400:
        raise BadRequest("--liveness-seconds must be 1-86400: sessions heartbeat well inside it.")
    if not 1 <= options.max_streams <= 1_000_000:
        raise BadRequest("--max-streams must be 1-1000000 (SSE streams and waiting reads per credential).")
    if options.public_url is not None:
        public = urlsplit(options.public_url)
        if public.scheme not in ("http", "https") or not public.hostname or public.query or public.fragment:
            raise BadRequest(
                f"--public-url {options.public_url!r} is not a URL like https://hub.example.com: "
                "give the scheme and host (and port) callers reach this hub by."
            )
    if (cert is None) != (key is None):
        raise BadRequest("--tls-cert and --tls-key go together: give both (a certificate and its key), or neither.")
    if cert is not None and key is not None:
        try:
            # An empty password: an encrypted key fails here instead of prompting on the terminal.
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key, password="")
        except ssl.SSLError as error:
            raise BadRequest(
                f"the TLS certificate {cert} and key {key} cannot be used ({error.reason or error}): "
                "give a PEM certificate and its own unencrypted private key."
            ) from None
        except OSError as error:
            raise BadRequest(
                f"cannot read the TLS files {cert} and {key} ({error.strerror or error}); check --tls-cert and --tls-key."
            ) from None
    elif not is_loopback(options.host) and not options.insecure:
        raise BadRequest(
            f"refusing to serve plain HTTP on {options.host}, which other machines can reach: give "
            "--tls-cert FILE --tls-key FILE to serve HTTPS, or --insecure to serve plain HTTP knowingly."
        )


def listen(host: str, port: int) -> socket.socket:
    """The hub's listening socket, bound here so that a taken port is a clear error (exit 2)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        raise HubUnavailable(
            f"cannot listen on {host}:{port} ({error.strerror or error}); "
            "choose another --port, or stop what is using it."
        ) from None
    listener.set_inheritable(True)
    return listener


def hub_url(address: tuple[Any, ...], tls: bool) -> str:
    """The URL of a listening socket's ``getsockname()``."""
    host, port = address[0], address[1]
    return f"{'https' if tls else 'http'}://{'[' + host + ']' if ':' in host else host}:{port}"
