"""How the service tests set a Service up: the workspace its agents are in, the machine it runs
on, its liveness window, a clock that stands still until a test moves it, and its agents."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from callboard.client.local import LocalClient
from callboard.model import Caller

if TYPE_CHECKING:
    from callboard.service.door import Service

WS = "acme"
MACHINE = "testhost"
LIVENESS = 60.0


class Clock:
    """The service's clock: stands still until a test moves it."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def new_agent(service: Service, name: str) -> LocalClient:
    """A client of the agent ``name`` on ``service``, the agent created first: looking (whoami,
    who, a read) creates nobody."""
    client = LocalClient(service, Caller(workspace=WS, agent=name))
    client.create_agent(name)
    return client
