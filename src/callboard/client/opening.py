"""Which client a command gets: the hub this machine is logged in to, or the embedded store."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from callboard.client.background import RemotePumping
from callboard.client.base import Client
from callboard.client.hub import HubClient
from callboard.client.local import LocalClient
from callboard.config import Settings, workspace_override
from callboard.errors import NoIdentity, Unauthorized
from callboard.identity import (
    SessionHint,
    resolve_agent,
)
from callboard.service.remotes import CardSource


def open_client(
    settings: Settings,
    env: Mapping[str, str] = os.environ,
    cwd: Path | None = None,
    card_source: CardSource | None = None,
    on_wait: Callable[[str], None] | None = None,
    remote_pumping: RemotePumping | None = None,
) -> Client:
    """The hub when this machine is logged in to one (and no database was named), else the
    embedded store (``card_source``: how it fetches outside A2A agents' cards, ``remote_pumping``:
    how it sends them mail; a hub has its own; ``on_wait``: told when a call is about to wait for
    the hub, see HubClient)."""
    if not settings.uses_hub:
        return LocalClient.open(settings, env=env, cwd=cwd, card_source=card_source, remote_pumping=remote_pumping)
    assert settings.hub is not None
    try:
        identity = resolve_agent(env, cwd or Path.cwd(), settings.agent)
    except NoIdentity:  # an agent token needs no name: the hub knows its agent
        agent, source = None, "the token"
    else:
        agent, source = identity.name, identity.source
    return hub_client(settings, agent, env, source, on_wait=on_wait)


def admin_client(settings: Settings, env: Mapping[str, str] = os.environ) -> HubClient:
    """The hub's admin token, for a command given ``--as-admin`` (never any other): at the hub
    it belongs to, across workspaces unless ``CALLBOARD_WORKSPACE`` names one."""
    if settings.admin_token is None or settings.admin_hub is None:
        where = f" for {settings.hub}" if settings.hub else ""
        raise Unauthorized(
            f"no admin token is kept on this machine{where}: --as-admin works on the hub's own machine, "
            "where its first 'callboard up' kept it (admin_token, under [stores] in config.toml); "
            "elsewhere give the admin token as CALLBOARD_TOKEN for that one command."
        )
    return HubClient(
        settings.admin_hub,
        settings.admin_token,
        None,
        workspace_override(env),
        "the admin token",
        ca_cert=settings.ca_cert,
    )


def hub_client(
    settings: Settings,
    agent: str | None,
    env: Mapping[str, str] = os.environ,
    source: str = "given",
    *,
    on_wait: Callable[[str], None] | None = None,
) -> HubClient:
    """A HubClient for the hub this machine is logged in to, acting as ``agent`` (None: the
    agent token's own) in the workspace ``CALLBOARD_WORKSPACE`` or the config names."""
    assert settings.hub is not None
    return HubClient(
        settings.hub,
        settings.token,
        agent,
        settings.named_workspace(env),
        source,
        ca_cert=settings.ca_cert,
        session=SessionHint.from_env(env),
        on_wait=on_wait,
    )
