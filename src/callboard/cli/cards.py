"""``callboard agent card NAME``: an agent's A2A card, as outside A2A clients get it.

Through a hub, the hub's own card (``GET /v1/agents/{name}/card``, its URLs as the hub serves
them). On the embedded store there is no hub to reach the agent at: the card is built here with
the address ``callboard up`` listens on by default, and the command says so.
"""

from __future__ import annotations

from typing import Any

from callboard.a2a.server.cards import build_card, card_document
from callboard.cli import render
from callboard.client.base import Client

DEFAULT_HUB_URL = "http://127.0.0.1:8465"  # where `callboard up` listens unless told otherwise


def card_of(client: Client, name: str) -> tuple[dict[str, Any], str | None]:
    """The card's JSON, and a note for the person when it was not served by a hub."""
    served = client.agent_card(name)  # a hub's
    if served is not None:
        return served, None
    agent = client.describe_agent(name)
    note = (
        f"no hub: this card's URLs assume 'callboard up' on {DEFAULT_HUB_URL} "
        "(a hub serves it with its own address, or --public-url)."
    )
    return card_document(build_card(agent, DEFAULT_HUB_URL)), note


def print_card(document: dict[str, Any]) -> None:
    console = render.console
    console.print(f"[bold]{render.peer(document.get('name', ''))}[/]  {render.peer(document.get('description', ''))}")
    for interface in document.get("supportedInterfaces", []):
        console.print(f"  {render.peer(interface.get('protocolBinding'))}: {render.peer(interface.get('url'))}")
    skills = [skill.get("name", "") for skill in document.get("skills", [])]
    if skills:
        console.print("skills: " + ", ".join(render.peer(skill) for skill in skills))
    capabilities = document.get("capabilities", {})
    offered = [name for name in ("streaming", "pushNotifications") if capabilities.get(name)]
    console.print("capabilities: " + (", ".join(offered) or "none") + " · auth: bearer token")
