"""What a HubClient says when a hub does not answer: a hub that is down is to be started, one
that took the request and is slow is up (never "start it with 'callboard up'")."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from callboard.client import hub as hub_client
from callboard.client.hub import HubClient
from callboard.errors import HubUnavailable


@pytest.fixture
def silent_hub() -> Iterator[str]:
    """A server that takes every connection and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def hold() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=hold, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()
    for conn in held:
        conn.close()


def test_a_hub_that_took_the_request_and_is_slow_is_not_said_to_be_down(
    silent_hub: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub_client, "TIMEOUT_SECONDS", 0.5)
    client = HubClient(silent_hub, "cb_token", "alice")
    with pytest.raises(HubUnavailable) as slow:
        client.list_remotes()
    assert "took the request but did not answer it in time" in slow.value.message, slow.value.message
    assert "callboard up" not in slow.value.message


def test_a_hub_that_is_not_there_is_to_be_started() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    client = HubClient(f"http://127.0.0.1:{port}", "cb_token", "alice")
    with pytest.raises(HubUnavailable, match="start it with 'callboard up'"):
        client.list_remotes()
