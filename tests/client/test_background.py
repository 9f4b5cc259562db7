"""The embedded store's background work is its opener's (client/background.py): started when a
long-lived process asks, stopped when the client closes, none for the clients made from it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from callboard.client.background import RemotePumping
from callboard.client.local import LocalClient
from callboard.model import Caller
from callboard.service.door import Service
from callboard.store.sqlite.store import SQLiteStore


class Recorded:
    """A RemotePumping that records what it is asked."""

    def __init__(self) -> None:
        self.started: list[Service] = []
        self.stopped: list[float] = []
        self.sent: list[tuple[str, str, float]] = []

    def pumping(self) -> RemotePumping:
        def start(service: Service) -> Callable[[float], None]:
            self.started.append(service)
            return self.stopped.append

        def send_now(service: Service, workspace: str, message_id: str, seconds: float) -> None:
            self.sent.append((workspace, message_id, seconds))

        return RemotePumping(start=start, send_now=send_now)


def client(tmp_path: Path, recorded: Recorded) -> LocalClient:
    service = Service(SQLiteStore(tmp_path / "db.sqlite"), machine="m1")
    return LocalClient(service, Caller(workspace="team", agent="alice"), remote_pumping=recorded.pumping())


def test_the_work_starts_once_when_asked_and_stops_when_its_client_closes(tmp_path: Path) -> None:
    recorded = Recorded()
    alice = client(tmp_path, recorded)
    assert recorded.started == []  # opening starts nothing: a one-shot command runs no pump
    stop = alice.run_background()
    alice.run_background()
    assert recorded.started == [alice.service]
    stop()
    assert len(recorded.stopped) == 1
    alice.run_background()
    alice.close()
    assert len(recorded.stopped) == 2 and len(recorded.started) == 2


def test_a_client_made_from_the_opener_has_no_background_work_of_its_own(tmp_path: Path) -> None:
    recorded = Recorded()
    alice = client(tmp_path, recorded)
    bob = alice.as_agent("bob")
    bob.run_background()
    bob.send_to_outside_agents("m-1", 1.0)
    bob.close()
    assert recorded.started == [] and recorded.sent == []
    alice.send_to_outside_agents("m-2", 2.5)
    assert recorded.sent == [("team", "m-2", 2.5)]
    alice.close()
