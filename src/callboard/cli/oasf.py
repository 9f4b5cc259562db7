"""The directory as OASF records: what ``callboard agent export`` writes, so that another
directory (AGNTCY's, which speaks the Open Agentic Schema Framework) can import our agents.

One JSON document: ``{"format": "oasf", "schema_version", "exported_at", "source", "records"}``,
each record an OASF 1.x ``record`` object: name, version, schema_version, description, authors,
created_at, skills, domains, locators, modules (OASF 1.x's name for the older ``extensions``) and
annotations. Our skills are free words (``agent describe --skill``), not OASF taxonomy classes,
so a skill carries its name only (its A2A skill id is in the card). Each record locates the
agent's A2A card and carries it whole in an ``integration/a2a`` module: the card the a2a face
builds (``a2a.cards``), as the hub serves it. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

from callboard import __version__
from callboard.a2a.server.cards import PROTOCOL_VERSION, agent_path
from callboard.model import Agent

SCHEMA_VERSION = "1.0.0"  # the OASF schema release these records follow
A2A_MODULE = "integration/a2a"
A2A_MODULE_ID = 203  # OASF's uid for it: module category integration (2), module a2a (3)


def card_url(base: str, agent: Agent) -> str:
    """Where the hub at ``base`` serves the agent's A2A card."""
    return base.rstrip("/") + agent_path(agent.workspace, agent.name) + AGENT_CARD_WELL_KNOWN_PATH


def export_document(
    agents: Sequence[Agent], cards: Mapping[str, dict[str, Any]], *, base_url: str, now: datetime | None = None
) -> dict[str, Any]:
    """The export of ``agents`` (one workspace's), each with its card (``cards``: by agent name,
    the card JSON as the hub at ``base_url`` serves it)."""
    now = now or datetime.now(UTC)
    workspaces = sorted({agent.workspace for agent in agents})
    return {
        "format": "oasf",
        "schema_version": SCHEMA_VERSION,
        "exported_at": _rfc3339(now),
        "source": {"callboard_version": __version__, "hub": base_url, "workspaces": workspaces},
        "records": [record(agent, cards[agent.name], base_url) for agent in agents],
    }


def record(agent: Agent, card: dict[str, Any], base_url: str) -> dict[str, Any]:
    """One agent as an OASF record, locating and carrying its A2A card."""
    url = card_url(base_url, agent)
    return {
        "schema_version": SCHEMA_VERSION,
        "name": agent.name,
        "version": card.get("version") or __version__,
        # OASF requires a description: the card's, which says what an agent without one is.
        "description": card.get("description") or f"Callboard agent {agent.name}.",
        "authors": [f"Callboard workspace {agent.workspace}"],
        "created_at": _rfc3339(agent.created_at),
        "skills": [{"name": skill} for skill in agent.skills],
        "domains": [],
        "locators": [{"type": "url", "urls": [url], "annotations": {"a2a.card": "true"}}],
        "modules": [
            {
                "name": A2A_MODULE,
                "id": A2A_MODULE_ID,
                "data": {"card_schema_version": PROTOCOL_VERSION, "card_url": url, "card_data": card},
            }
        ],
        "annotations": {"callboard.workspace": agent.workspace, "callboard.agent": agent.name, "a2a.card_url": url},
    }


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
