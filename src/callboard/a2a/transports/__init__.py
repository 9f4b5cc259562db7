"""How an outside A2A agent is reached: the one place a transport is chosen.

A transport fetches an agent's card from where the agent is (its address) and opens the SDK's
client to it from its card. HTTP (``http.py``: the SDK's JSON-RPC and HTTP+JSON bindings over
httpx) is the only one today; a second one (SLIM, a later issue) is one module beside it and
one line in ``transport_for``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from callboard.errors import BadAddress

if TYPE_CHECKING:
    from a2a.client import Client
    from a2a.types import AgentCard

    from callboard.a2a.remote.timeouts import RemoteTimeouts


class Opened(Protocol):
    """An SDK client open to one agent, and how to let its connections go."""

    @property
    def client(self) -> Client: ...

    async def close(self) -> None: ...


class Transport(Protocol):
    """One way of carrying A2A to outside agents."""

    bindings: tuple[str, ...]  # the A2A protocol bindings (a card's interfaces) it speaks

    def card_url(self, url: str) -> str:
        """Where the card of the agent at ``url`` is (what a failure to fetch it names)."""
        ...

    async def fetch_card(self, url: str, *, token: str | None, timeouts: RemoteTimeouts) -> AgentCard:
        """The card of the agent at ``url`` (its base address, or the card's own), unchecked."""
        ...

    def open(self, card: AgentCard, *, token: str | None, timeouts: RemoteTimeouts, streaming: bool) -> Opened:
        """The SDK's client to the agent ``card`` describes (SDK errors pass through)."""
        ...


def transport_for(url: str) -> Transport:
    """The transport that reaches the agent at ``url``, or why none does."""
    scheme = urlsplit(url).scheme
    if scheme in ("http", "https") and urlsplit(url).hostname:
        from callboard.a2a.transports.http import HTTP

        return HTTP
    raise BadAddress(f"{url!r} is not an A2A agent's URL: give its http:// or https:// address (where its card is).")


def spoken_bindings() -> tuple[str, ...]:
    """Every A2A protocol binding some transport speaks (a card must offer one of them)."""
    from callboard.a2a.transports.http import HTTP

    return HTTP.bindings
