"""A2A over HTTP: the SDK's JSON-RPC and HTTP+JSON bindings on an httpx client per remote.

Every request carries the remote's bearer token (when it has one) and a deadline; redirects are
not followed (a card names where its agent listens).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

from callboard.a2a.remote.timeouts import RemoteTimeouts


@dataclass(frozen=True)
class _Opened:
    client: Client
    http: httpx.AsyncClient

    async def close(self) -> None:
        await self.http.aclose()


class HttpTransport:
    """A2A's HTTP bindings (gRPC would need the SDK's extra)."""

    bindings: tuple[str, ...] = ("JSONRPC", "HTTP+JSON")

    @staticmethod
    def card_url(url: str) -> str:
        """Where the card of the agent at ``url`` is: the URL itself when it ends in ``.json``,
        else the well-known path under it."""
        return url if urlsplit(url).path.endswith(".json") else url + AGENT_CARD_WELL_KNOWN_PATH

    async def fetch_card(self, url: str, *, token: str | None, timeouts: RemoteTimeouts) -> AgentCard:
        own = urlsplit(url).path.endswith(".json")
        async with _http(token, timeouts) as http:
            # "/" asks the resolver for base_url itself, the card's own URL.
            return await A2ACardResolver(http, url).get_agent_card(relative_card_path="/" if own else None)

    def open(self, card: AgentCard, *, token: str | None, timeouts: RemoteTimeouts, streaming: bool) -> _Opened:
        http = _http(token, timeouts)
        config = ClientConfig(
            httpx_client=http,
            streaming=streaming,
            # Without a stream, SendMessage returns at once and the task is polled: a blocking
            # send would hold one request open for the whole task, past any sane call deadline.
            polling=not streaming,
            supported_protocol_bindings=list(self.bindings),
        )
        return _Opened(ClientFactory(config).create(card), http)


def _http(token: str | None, timeouts: RemoteTimeouts) -> httpx.AsyncClient:
    """The HTTP client for one remote: its bearer token (if it has one) on every request, and
    no request without a deadline."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx.Timeout(timeouts.call, connect=timeouts.connect)
    return httpx.AsyncClient(headers=headers, timeout=timeout, follow_redirects=False)


HTTP = HttpTransport()
