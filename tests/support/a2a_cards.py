"""An agent card as an older A2A client sees it."""

from __future__ import annotations

from a2a.types import AgentCard, AgentInterface


def only_0_3(card: AgentCard) -> AgentCard:
    """The card as a 0.3 client uses it: its 0.3 JSON-RPC interface alone."""
    old = AgentCard()
    old.CopyFrom(card)
    del old.supported_interfaces[:]
    old.supported_interfaces.extend(
        AgentInterface(url=i.url, protocol_binding=i.protocol_binding, protocol_version=i.protocol_version)
        for i in card.supported_interfaces
        if i.protocol_version == "0.3"
    )
    return old
