"""An outside A2A agent's card: fetched over HTTP with deadlines, checked, and kept as JSON.

The card is what `agent add-remote` registers: it says where the agent listens (its
interfaces), whether it streams, and what it is called. It is stored as the JSON the remote
served, and parsed again by the SDK each time a client is made from it.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from a2a.client import A2ACardResolver
from a2a.client.card_resolver import parse_agent_card
from a2a.types import AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from google.protobuf.json_format import MessageToDict

from callboard.a2a.remote_errors import card_problem, remote_problem
from callboard.errors import BadAddress, BadRemoteAnswer
from callboard.model import built
from callboard.remotes import OutsideCard

# The bindings our client speaks (the SDK's JSON-RPC and HTTP+JSON transports; gRPC needs an extra).
SPOKEN_BINDINGS = ("JSONRPC", "HTTP+JSON")


@dataclass(frozen=True)
class RemoteTimeouts:
    """How long each step with a remote may take. ``call`` bounds one request (for a stream:
    the silence between two events); ``deadline`` bounds a whole task, from the first try to
    its final state; polls start at ``poll_first`` and double up to ``poll_most``."""

    connect: float = 5.0
    card: float = 10.0  # the whole card fetch: well inside a hub client's 30 s, so it is the card's error it hears
    call: float = 30.0
    deadline: float = 600.0
    poll_first: float = 0.2
    poll_most: float = 5.0


def agent_card_of(card: OutsideCard) -> AgentCard:
    """The SDK's card from a checked one (parsed again: the store keeps the JSON)."""
    return parse_agent_card(copy.deepcopy(card.card))


def remote_http(token: str | None, timeouts: RemoteTimeouts) -> httpx.AsyncClient:
    """The HTTP client for one remote: its bearer token (if it has one) on every request, and
    no request without a deadline."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx.Timeout(timeouts.call, connect=timeouts.connect)
    return httpx.AsyncClient(headers=headers, timeout=timeout, follow_redirects=False)


def check_url(url: str) -> str:
    """An outside agent's URL as given, or why it cannot be one."""
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadAddress(
            f"{url!r} is not an A2A agent's URL: give its http:// or https:// address (where its card is)."
        )
    return text.rstrip("/")


async def fetch_card(url: str, *, token: str | None = None, timeouts: RemoteTimeouts = RemoteTimeouts()) -> OutsideCard:
    """Fetch and check the card of the agent at ``url``: its base URL (the card is then at
    ``/.well-known/agent-card.json`` under it) or the card's own URL (ending in ``.json``)."""
    url = check_url(url)
    own = urlsplit(url).path.endswith(".json")
    card_url = url if own else url + AGENT_CARD_WELL_KNOWN_PATH
    async with remote_http(token, timeouts) as http:
        # "/" asks the resolver for base_url itself, the card's own URL.
        fetching = A2ACardResolver(http, url).get_agent_card(relative_card_path="/" if own else None)
        try:
            card = await asyncio.wait_for(fetching, timeouts.card)
        except Exception as exc:  # every failure becomes one sentence (remote_errors sorts them)
            raise card_problem(exc, card_url, timeouts.card) from exc
    return checked_card(url, card)


def checked_card(url: str, card: AgentCard) -> OutsideCard:
    """The card if our client can talk to the agent it describes, else why not."""
    if not card.name.strip():
        raise BadRemoteAnswer(f"the agent card at {url} has no name; it is not an A2A 1.0 card.")
    bindings = [i.protocol_binding for i in card.supported_interfaces if i.url]
    if not any(binding in SPOKEN_BINDINGS for binding in bindings):
        offered = ", ".join(bindings) or "none"
        raise BadRemoteAnswer(
            f"the agent at {url} offers no interface Callboard speaks (it offers {offered}; "
            f"Callboard speaks {', '.join(SPOKEN_BINDINGS)})."
        )
    return built(
        OutsideCard,
        url=url,
        name=card.name,
        description=card.description,
        streaming=bool(card.capabilities.streaming),
        card=MessageToDict(card),
    )


def card_from_json(url: str, card: dict[str, Any]) -> OutsideCard:
    """A stored card, checked again (the store keeps the JSON, not our reading of it)."""
    try:
        parsed = parse_agent_card(copy.deepcopy(card))
    except Exception as exc:
        raise remote_problem(exc, url, "reading its stored card") from exc
    return checked_card(url, parsed)


def card_source(url: str, token: str | None) -> OutsideCard:
    """``fetch_card`` for code that is not async (the service's ``CardSource``): run on a thread
    of its own with its own event loop, so it works whether or not the caller runs a loop."""
    result: list[OutsideCard] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(asyncio.run(fetch_card(url, token=token)))
        except BaseException as error:  # handed to the caller's thread, raised there
            failure.append(error)

    thread = threading.Thread(target=run, name="callboard-card-fetch", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
