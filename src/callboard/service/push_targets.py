"""Which URLs a task's push notifications may be posted to: the rule once.

A push config names a URL the hub will post to on its own. Left open, that is a way into the
hub's network (its loopback services, its cloud's metadata address, the office LAN): so only
http and https, and no loopback, private, link-local, reserved or otherwise non-public target,
unless the hub was told to allow them (a hub whose agents all live on one private network).
The host's name is resolved now and every address it gives must pass, so a name cannot point
at 127.0.0.1 in disguise (the poster checks again when it posts: names move).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from callboard.address import shown
from callboard.errors import BadWebhook
from callboard.limits import WEBHOOK_URL_CHARS

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def check_webhook(url: str, *, allow_private: bool = False) -> str:
    """The URL, when a push may be posted to it; else BadWebhook saying why."""
    if not isinstance(url, str) or not url.strip():
        raise BadWebhook("give the webhook URL to post the task's updates to (http:// or https://).")
    if len(url) > WEBHOOK_URL_CHARS:
        raise BadWebhook(f"the webhook URL has {len(url)} characters; the limit is {WEBHOOK_URL_CHARS}.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as error:
        raise BadWebhook(f"{shown(url)!r} is not a URL ({error}).") from None
    if parts.scheme not in ("http", "https"):
        raise BadWebhook(f"{shown(url)!r}: a webhook is an http:// or https:// URL.")
    host = parts.hostname
    if not host:
        raise BadWebhook(f"{shown(url)!r} names no host.")
    if parts.username or parts.password:
        raise BadWebhook("put the webhook's credentials in the push config's token or authentication, not in its URL.")
    if not allow_private:
        for address in _addresses(host, port or (443 if parts.scheme == "https" else 80)):
            if not address.is_global or address.is_multicast:
                raise BadWebhook(
                    f"the webhook host {shown(host)!r} is {address}, a loopback, private, link-local or "
                    "reserved address: the hub posts only to public addresses (its operator may allow "
                    "private ones)."
                )
    return url.strip()


def _addresses(host: str, port: int) -> list[IPAddress]:
    """Every address the host stands for (itself when it is one)."""
    try:
        return [_unmapped(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as error:
        raise BadWebhook(f"the webhook host {shown(host)!r} cannot be resolved ({error}).") from None
    return [_unmapped(ipaddress.ip_address(str(info[4][0]).split("%")[0])) for info in infos]


def _unmapped(address: IPAddress) -> IPAddress:
    """An IPv4 address written as IPv6 (::ffff:127.0.0.1) is judged as the IPv4 one it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address
