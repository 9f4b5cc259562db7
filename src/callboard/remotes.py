"""An outside A2A agent, as this workspace knows it: its checked card, and its registration.

Mail to a registered outside agent's name becomes an A2A task to it (``a2a/remote``: the client;
``service.remotes``: the registry); the store keeps these records. Pure: no I/O.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from callboard.model import Model


class OutsideCard(Model):
    """An outside A2A agent's card as fetched and checked: where it was found, what it is
    called, whether it streams, and the card's JSON as the agent served it."""

    url: str
    name: str
    description: str = ""
    streaming: bool = False
    card: dict[str, Any]


class RemoteAgent(Model):
    """An outside A2A agent registered in a workspace: mail to its name becomes an A2A task,
    and its answers come back as mail from it."""

    workspace: str
    name: str
    url: str = Field(description="where its card was fetched (its a2a: address without the prefix)")
    description: str | None = None
    streaming: bool = Field(description="its card offers streaming (else its tasks are polled)")
    has_token: bool = Field(description="a bearer token is sent to it (the token itself is never shown)")
    card: dict[str, Any] = Field(description="its A2A agent card, as it served it")
    added_at: datetime
    card_fetched_at: datetime
