"""An agent's A2A card: who it is (name, description, skills from ``agent describe``), where it
is reached (one interface per binding under the hub), what it can do (streaming, push, our task
generation) and how a caller authenticates (a Callboard bearer token).

The card is built from the directory each time it is asked for, so it changes when the agent's
description or skills do; its JSON is the SDK's own (``agent_card_to_dict``).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from callboard.model import Agent

PROTOCOL_VERSION = "1.0"
PROTOCOL_VERSION_0_3 = "0.3"
JSONRPC = "JSONRPC"
HTTP_JSON = "HTTP+JSON"
# Our extension: every task carries a generation (the A2A 1.1 draft's), +1 per event, in the
# metadata of the task and of each update event, so a subscriber that reconnects knows what it missed.
GENERATION_EXTENSION = "https://callboard.dev/a2a/extensions/task-generation/v1"
GENERATION_KEY = "generation"
# The extension's service parameter (an HTTP header, as A2A carries service parameters): a
# SubscribeToTask with it streams the task's events after that generation, the ones the
# subscriber missed, before the live ones. SubscribeToTaskRequest has no metadata to carry it.
GENERATION_AFTER = "Callboard-Generation-After"
BEARER = "bearer"
# What a part may hold: text, JSON data, a file by value or by URL.
MODES = ["text/plain", "application/json", "application/octet-stream"]


def agent_path(workspace: str, agent: str) -> str:
    """Where an agent is served under the hub: its card, JSON-RPC and HTTP+JSON sit below it."""
    return f"/a2a/{workspace}/{agent}"


def build_card(agent: Agent, base_url: str, *, compat_0_3: bool = False) -> AgentCard:
    """``agent``'s card, its interfaces under ``base_url`` (the hub as its callers reach it);
    ``compat_0_3``: the hub answers A2A 0.3 clients too, on the same JSON-RPC endpoint."""
    from callboard import __version__  # looked up lazily (importlib.metadata is slow)

    base = base_url.rstrip("/") + agent_path(agent.workspace, agent.name)
    card = AgentCard(
        name=agent.name,
        description=agent.description or f"Callboard agent {agent.name} of workspace {agent.workspace}.",
        version=__version__,
        provider=AgentProvider(organization="Callboard", url=base_url.rstrip("/")),
        supported_interfaces=[
            AgentInterface(url=f"{base}/jsonrpc", protocol_binding=JSONRPC, protocol_version=PROTOCOL_VERSION),
            AgentInterface(url=f"{base}/rest", protocol_binding=HTTP_JSON, protocol_version=PROTOCOL_VERSION),
        ],
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=True,
            extensions=[
                AgentExtension(
                    uri=GENERATION_EXTENSION,
                    description=(
                        "Tasks and update events carry metadata.generation, +1 per event of the task; "
                        f"SubscribeToTask with the service parameter {GENERATION_AFTER}: N resumes after N."
                    ),
                    required=False,
                )
            ],
        ),
        security_schemes={
            BEARER: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="bearer", description="A Callboard token (callboard token create --agent NAME)."
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList()})],
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=skills_of(agent),
    )
    if compat_0_3:  # listed last: a 1.0 client prefers the first interface it supports
        card.supported_interfaces.append(
            AgentInterface(url=f"{base}/jsonrpc", protocol_binding=JSONRPC, protocol_version=PROTOCOL_VERSION_0_3)
        )
    return card


def skills_of(agent: Agent) -> list[AgentSkill]:
    """The agent's skills as A2A skills; an agent that names none still offers one (A2A requires
    a skill): taking messages and tasks."""
    if not agent.skills:
        return [
            AgentSkill(
                id="mailbox",
                name="mailbox",
                description=f"Takes messages and tasks for {agent.name}.",
                tags=["messaging", "tasks"],
            )
        ]
    return [
        AgentSkill(id=_skill_id(skill), name=skill, description=f"{agent.name}: {skill}", tags=[skill])
        for skill in agent.skills
    ]


def _skill_id(skill: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", skill.lower()).strip("-") or "skill"


def card_document(card: AgentCard) -> dict[str, Any]:
    """The card's JSON as the SDK serves it (camelCase, with 0.3 clients' fields merged in when
    the hub answers 0.3 too). Without ``--a2a-compat-0-3`` it is a 1.0 card and nothing more (the
    1.0 schema takes no other field): a 0.3 client that reaches an endpoint is told there what the
    hub speaks, and which flag lets 0.3 in (a2a/server/versions.py)."""
    return agent_card_to_dict(card)


def card_etag(document: dict[str, Any]) -> str:
    """A weak ETag of the card's content: it changes exactly when the card does."""
    body = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return f'W/"{hashlib.sha256(body.encode()).hexdigest()[:32]}"'
