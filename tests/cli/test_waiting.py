"""A command that waits more than a second says what it waits for, on stderr, once: a send to a
hub that does not answer, a command whose hub does not take the connection (a following read whose
hub goes away: tests/hub/test_waiting.py).
Standard output stays the command's answer alone."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.support.cli_runner import CLI, describe
from tests.support.outside_agent import free_port


def dead_hub() -> dict[str, str]:
    """A login to a hub nobody serves (a loopback port with no listener)."""
    return {"CALLBOARD_HUB": f"http://127.0.0.1:{free_port()}", "CALLBOARD_TOKEN": "cb_test"}


def test_a_send_to_a_hub_that_does_not_answer_says_so_once_then_fails(cli: CLI):
    env = {**dead_hub(), "CALLBOARD_SEND_RETRY_SECONDS": "3"}
    proc = cli.run("send", "bob", "anyone?", agent="alice", env=env)
    assert proc.returncode == 2 and proc.stdout == "", describe(proc)
    notice, error = proc.stderr.splitlines()  # exactly these two lines
    assert notice == (
        f"callboard: the hub at {env['CALLBOARD_HUB']} does not answer; trying again for 3 s (Ctrl-C stops)"
    ), describe(proc)
    assert error.startswith("error: hub_unavailable: ") and "nothing was sent" in error, describe(proc)


def test_a_send_that_will_not_wait_says_nothing_more(cli: CLI, expect_error):
    env = {**dead_hub(), "CALLBOARD_SEND_RETRY_SECONDS": "0"}
    expect_error(cli.run("send", "bob", "anyone?", agent="alice", env=env), "hub_unavailable", as_json=False)


@pytest.fixture
def swallowing_hub() -> Iterator[str]:
    """A loopback address whose connections are never made (its listener's queue is full, so the
    kernel drops each new SYN): a hub behind a network that swallows packets. Yields its URL."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    address = server.getsockname()
    queued = []
    for _ in range(3):  # fill the accept queue; nobody ever accepts
        conn = socket.socket()
        conn.setblocking(False)
        conn.connect_ex(address)
        queued.append(conn)
    try:
        yield f"http://127.0.0.1:{address[1]}"
    finally:
        for conn in [*queued, server]:
            conn.close()


def test_a_command_whose_hub_does_not_take_the_connection_says_so_once(cli: CLI, swallowing_hub: str):
    proc = cli.run("who", agent="alice", env={"CALLBOARD_HUB": swallowing_hub, "CALLBOARD_TOKEN": "cb_test"})
    assert proc.returncode == 2 and proc.stdout == "", describe(proc)
    notice, error = proc.stderr.splitlines()
    assert notice == f"callboard: the hub at {swallowing_hub} does not answer yet; waiting up to 5 s (Ctrl-C stops)"
    assert error.startswith("error: hub_unavailable: "), describe(proc)
