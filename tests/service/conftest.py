"""The service suite's fixtures: clients of one Service (one store connection) on a fresh SQLite
file or PostgreSQL schema (``db``), acting as the agents alice, bob, carol and dave, and #team.

Time that liveness depends on comes from an injected clock moved by hand (``clock``). Tests that
name threads or processes make their own: processes are real (``python -c``) and open their
own store on the same database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from callboard.client.local import LocalClient
from callboard.service.door import Service
from callboard.store.opening import open_store
from tests.support.service_setup import LIVENESS, MACHINE, Clock, new_agent


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(db: str, clock: Clock) -> Iterator[Service]:
    store = open_store(db)
    try:
        yield Service(store, machine=MACHINE, liveness_seconds=LIVENESS, clock=clock)
    finally:
        store.close()


@pytest.fixture
def alice(service: Service) -> LocalClient:
    return new_agent(service, "alice")


@pytest.fixture
def bob(service: Service) -> LocalClient:
    return new_agent(service, "bob")


@pytest.fixture
def carol(service: Service) -> LocalClient:
    return new_agent(service, "carol")


@pytest.fixture
def dave(service: Service) -> LocalClient:
    return new_agent(service, "dave")


@pytest.fixture
def team(alice: LocalClient, bob: LocalClient, carol: LocalClient) -> str:
    """#team: alice (its creator), bob and carol."""
    alice.create_channel("team", "the team")
    bob.join_channel("team")
    carol.join_channel("team")
    return "#team"
