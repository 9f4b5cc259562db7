"""Push notifications: a task's updates posted to the webhooks its requester registered.

A webhook must be http(s) and, unless the hub is told otherwise (``up --allow-private-webhooks``),
reach neither this machine nor a private network: a token holder must not make the hub post into
the hub's own network (server-side request forgery). The target is checked when the config is
set and again before each post (a name may resolve elsewhere later).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

from switchboard.errors import BadRequest

WEBHOOK_SCHEMES = ("http", "https")


async def check_webhook_url(url: str, *, allow_private: bool) -> None:
    """Refuse a webhook URL the hub must not post to (BadRequest, saying why)."""
    parts = urlsplit(url)
    if parts.scheme not in WEBHOOK_SCHEMES or not parts.hostname:
        raise BadRequest(f"a webhook URL is http:// or https:// with a host; {url!r} is not.")
    if allow_private:
        return
    host = parts.hostname
    for address in await _addresses(host, parts.port):
        if not address.is_global:
            raise BadRequest(
                f"the webhook {url} reaches {address}, a loopback or private address; the hub posts only to "
                "public addresses unless it runs with --allow-private-webhooks."
            )


async def _addresses(host: str, port: int | None) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The addresses ``host`` stands for: itself if it is one, else what it resolves to."""
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return [ipaddress.ip_address("127.0.0.1")]
    try:
        found = await asyncio.get_running_loop().getaddrinfo(host, port or 443, type=socket.SOCK_STREAM)
    except OSError:
        raise BadRequest(f"the webhook host {host} does not resolve; give a host the hub can reach.") from None
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in found]
