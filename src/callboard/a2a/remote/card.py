"""An outside A2A agent's card: fetched through its transport with deadlines, checked, and kept as JSON.

The card is what `agent add-remote` registers: it says where the agent listens (its
interfaces), whether it streams, and what it is called. It is stored as the JSON the remote
served, and parsed again by the SDK each time a client is made from it.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from typing import Any

from a2a.client.card_resolver import parse_agent_card
from a2a.types import AgentCard
from google.protobuf.json_format import MessageToDict

from callboard.a2a.remote.errors import card_problem, remote_problem
from callboard.a2a.remote.timeouts import RemoteTimeouts
from callboard.a2a.transports import spoken_bindings, transport_for
from callboard.errors import BadRemoteAnswer
from callboard.model import built
from callboard.remotes import OutsideCard


def agent_card_of(card: OutsideCard) -> AgentCard:
    """The SDK's card from a checked one (parsed again: the store keeps the JSON)."""
    return parse_agent_card(copy.deepcopy(card.card))


def check_url(url: str) -> str:
    """An outside agent's URL as given, or why it cannot be one (no transport reaches it)."""
    text = url.strip()
    transport_for(text)
    return text.rstrip("/")


async def fetch_card(url: str, *, token: str | None = None, timeouts: RemoteTimeouts = RemoteTimeouts()) -> OutsideCard:
    """Fetch and check the card of the agent at ``url``: its base URL (the card is then at
    ``/.well-known/agent-card.json`` under it) or the card's own URL (ending in ``.json``)."""
    url = check_url(url)
    transport = transport_for(url)
    fetching = transport.fetch_card(url, token=token, timeouts=timeouts)
    try:
        card = await asyncio.wait_for(fetching, timeouts.card)
    except Exception as exc:  # every failure becomes one sentence (remote/errors.py sorts them)
        raise card_problem(exc, transport.card_url(url), timeouts.card) from exc
    return checked_card(url, card)


def checked_card(url: str, card: AgentCard) -> OutsideCard:
    """The card if our client can talk to the agent it describes, else why not."""
    if not card.name.strip():
        raise BadRemoteAnswer(f"the agent card at {url} has no name; it is not an A2A 1.0 card.")
    bindings = [i.protocol_binding for i in card.supported_interfaces if i.url]
    spoken = spoken_bindings()
    if not any(binding in spoken for binding in bindings):
        offered = ", ".join(bindings) or "none"
        raise BadRemoteAnswer(
            f"the agent at {url} offers no interface Callboard speaks (it offers {offered}; "
            f"Callboard speaks {', '.join(spoken)})."
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
