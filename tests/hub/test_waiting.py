"""A following read whose hub goes away says so once, not at every try, and once more when it
is back: the hub is real, and a loopback relay in front of it cuts every connection on demand."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from tests.hub.conftest import Hub
from tests.support.cli_runner import CLI
from tests.support.waiting import wait_until


class Relay:
    """Forwards loopback connections to the hub until ``cut``: then closes every open one, and
    takes each new one and closes it unanswered, counting them (the tries)."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").rsplit(":", 1)
        self.target = (host, int(port))
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.open: list[socket.socket] = []
        self.cut_off = threading.Event()
        self.tries = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        self.cut_off.set()
        for conn in list(self.open):
            _hang_up(conn)

    def close(self) -> None:
        self.cut()
        self.server.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            if self.cut_off.is_set():
                self.tries += 1
                conn.close()
                continue
            upstream = socket.create_connection(self.target)
            self.open += [conn, upstream]
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _hang_up(source)
        _hang_up(sink)


def _hang_up(conn: socket.socket) -> None:
    """End the connection now, also for a thread blocked reading it (close alone would not)."""
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


@pytest.fixture
def relay(make_hub: Callable[..., Hub]) -> Iterator[tuple[Hub, Relay]]:
    hub = make_hub()
    relay = Relay(hub.url)
    try:
        yield hub, relay
    finally:
        relay.close()


def test_a_following_read_says_once_that_its_hub_is_away(relay: tuple[Hub, Relay], cli: CLI):
    hub, cut = relay
    follower = cli.spawn(
        "read", "--follow", agent="alice", env={"CALLBOARD_HUB": cut.url, "CALLBOARD_TOKEN": hub.admin_token}
    )
    direct = {"CALLBOARD_HUB": hub.url, "CALLBOARD_TOKEN": hub.admin_token}

    def following() -> bool:
        who = cli.run_json("who", agent="bob", env=direct)["agents"]
        return any(a["name"] == "alice" and a["live"] for a in who)

    try:
        wait_until(following, timeout=60, what="the follower's session")
        cut.cut()
        wait_until(lambda: cut.tries >= 4, timeout=60, what="the follower trying the hub four times")
    finally:
        follower.send_signal(signal.SIGINT)
        out, err = follower.communicate(timeout=30)
    notes = [line for line in err.splitlines() if line.startswith("callboard: cannot reach the hub at ")]
    assert len(notes) == 1 and "trying again" in notes[0] and "(Ctrl-C stops)" in notes[0], err
    assert err.count("heartbeat failed") <= 1, err  # the session's heartbeats (when one fell in the outage): once
    assert out == "", out
