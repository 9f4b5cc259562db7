"""The directory as OASF records: what ``switchboard agent export`` writes, so that another
directory (AGNTCY's, which speaks the Open Agentic Schema Framework) can import our agents.

One JSON document: ``{"format": "oasf", "schema_version", "exported_at", "source", "records"}``,
each record an OASF 1.x ``record`` object: name, version, schema_version, description, authors,
created_at, skills, domains, locators, modules (OASF 1.x's name for the older ``extensions``) and
annotations. Our skills are free words (``agent describe --skill``), not OASF taxonomy classes,
so a skill carries its name only (and its A2A skill id in the card module). Where the hub's
address is known, each record locates the agent's A2A card and carries an ``integration/a2a``
module that names its card and interfaces. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from switchboard import __version__
from switchboard.model import Agent

SCHEMA_VERSION = "1.0.0"  # the OASF schema release these records follow
A2A_MODULE = "integration/a2a"
A2A_MODULE_ID = 203  # OASF's uid for it: module category integration (2), module a2a (3)
A2A_PROTOCOL_VERSION = "1.0"


def card_url(base: str, workspace: str, agent: str) -> str:
    """Where the hub at ``base`` serves the agent's A2A card (the a2a face's mount)."""
    return f"{base.rstrip('/')}/a2a/{workspace}/{agent}/.well-known/agent-card.json"


def skill_id(skill: str) -> str:
    """A skill's id as its A2A card names it: its words, lower case, joined by dashes."""
    return re.sub(r"[^a-z0-9]+", "-", skill.strip().casefold()).strip("-") or "skill"


def export_document(agents: Sequence[Agent], *, base_url: str | None, now: datetime | None = None) -> dict[str, Any]:
    """The export of ``agents`` (one workspace's): ``base_url`` is the hub's public address, or
    None where there is no hub (the records then locate no card)."""
    now = now or datetime.now(UTC)
    workspaces = sorted({agent.workspace for agent in agents})
    return {
        "format": "oasf",
        "schema_version": SCHEMA_VERSION,
        "exported_at": _rfc3339(now),
        "source": {"switchboard_version": __version__, "hub": base_url, "workspaces": workspaces},
        "records": [record(agent, base_url) for agent in agents],
    }


def record(agent: Agent, base_url: str | None) -> dict[str, Any]:
    """One agent as an OASF record."""
    description = agent.description.strip() if agent.description and agent.description.strip() else None
    annotations = {"switchboard.workspace": agent.workspace, "switchboard.agent": agent.name}
    found: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "name": agent.name,
        "version": __version__,
        # OASF requires a description: an agent that has none says what it is.
        "description": description or f"Switchboard agent {agent.name} of workspace {agent.workspace}.",
        "authors": [f"Switchboard workspace {agent.workspace}"],
        "created_at": _rfc3339(agent.created_at),
        "skills": [{"name": skill} for skill in agent.skills],
        "domains": [],
        "locators": [],
        "modules": [],
        "annotations": annotations,
    }
    if base_url:
        url = card_url(base_url, agent.workspace, agent.name)
        found["locators"] = [{"type": "url", "urls": [url], "annotations": {"a2a.card": "true"}}]
        found["modules"] = [_a2a_module(agent, found["description"], base_url, url)]
        annotations["a2a.card_url"] = url
    return found


def _a2a_module(agent: Agent, description: str, base_url: str, url: str) -> dict[str, Any]:
    """The ``integration/a2a`` module: the card's essentials (the hub serves the whole card at
    ``url``), in A2A 1.0's JSON names."""
    root = f"{base_url.rstrip('/')}/a2a/{agent.workspace}/{agent.name}"
    card = {
        "name": agent.name,
        "description": description,
        "version": __version__,
        "supportedInterfaces": [
            {"url": f"{root}/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": A2A_PROTOCOL_VERSION},
            {"url": f"{root}/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": A2A_PROTOCOL_VERSION},
        ],
        "capabilities": {"streaming": True, "pushNotifications": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {"id": skill_id(skill), "name": skill, "description": skill, "tags": [skill]} for skill in agent.skills
        ],
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "bearer"}}},
    }
    data = {"card_schema_version": A2A_PROTOCOL_VERSION, "card_url": url, "card_data": card}
    return {"name": A2A_MODULE, "id": A2A_MODULE_ID, "data": data}


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
