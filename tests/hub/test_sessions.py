"""Sessions through a real hub: a command an agent CLI runs acts in that CLI's session (found by
its process lineage), each pane's event stream carries its own mail, a session reports a broken
delivery path, and `read --follow` rides out a hub killed and started again, each message once,
in order. Everything listens and connects on loopback only."""

from __future__ import annotations

import json
import shlex
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from callboard.headers import SESSION_HEADER
from callboard.requests import SendRequest
from tests.hub.conftest import CLI, EventStream, Hub, Tenant, expect_error
from tests.support.waiting import wait_until


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Hub]:
    """A hub on a fixed port, so that clients logged in to it find it again after a restart."""
    hub = Hub(tmp_path / "hub", args=["--port", str(_free_port()), "--liveness-seconds", "5"])
    hub.start()
    try:
        yield hub
    finally:
        hub.close()


def test_a_command_run_by_an_agent_cli_acts_in_its_session(tenant: Tenant, cli: CLI) -> None:
    cli.run_json("login", tenant.hub.url, "--token", tenant.token)
    # The "agent CLI" is a shell: it registers itself as alice's session, then runs a send as
    # its child, as Claude Code's Bash tool would. The send carries the shell's address.
    script = (
        f"{shlex.join(cli.argv('session', 'start', '--terminal', 'tmux:%7', '--json'))} >/dev/null && "
        f"{shlex.join(cli.argv('send', 'bob', 'from a pane', '--json'))} && echo $$"
    )
    proc = subprocess.run(
        ["sh", "-c", script], env=cli.env("alice"), capture_output=True, text=True, timeout=60, cwd=cli.workdir
    )
    assert proc.returncode == 0, proc.stderr
    shell_pid = int(proc.stdout.strip().splitlines()[-1])
    (item,) = cli.run_json("read", agent="bob")["items"]
    assert item["message"]["sender_address"].endswith(f"#{shell_pid}")
    assert item["message"]["sender_address"].startswith("alice@")
    assert item["message"]["sender_terminal"] == "tmux:%7"


def test_each_panes_stream_carries_its_own_mail(tenant: Tenant) -> None:
    with tenant.http("bob") as bob:
        first = bob.post("/v1/sessions", json={"pid": 100, "machine": "m1"}).json()
        second = bob.post("/v1/sessions", json={"pid": 101, "machine": "m1"}).json()
    streams = [
        EventStream(tenant.hub.url, tenant.token, "bob", extra_headers={SESSION_HEADER: s["id"]})
        for s in (first, second)
    ]
    try:
        for stream in streams:
            stream.ready()
        alice = tenant.client("alice")
        to_first = alice.send(SendRequest(to="bob@m1#100", text="first pane")).message_id
        to_newest = alice.send(SendRequest(to="bob", text="the newest pane")).message_id  # pushed to the second
        to_second = alice.send(SendRequest(to="bob@m1#101", text="second pane")).message_id
        last_first = alice.send(SendRequest(to="bob@m1#100", text="first pane again")).message_id
        assert [e.message_id for e in streams[0].events_until(last_first)] == [to_first, last_first]
        assert [e.message_id for e in streams[1].events_until(to_second)] == [to_newest, to_second]
    finally:
        for stream in streams:
            stream.close()


def test_a_session_reports_its_delivery_path_broken_and_who_shows_it(tenant: Tenant) -> None:
    bob = tenant.client("bob")
    session = bob.register_session(runtime="claude-code", pid=4242, machine="m1")
    bob.heartbeat(session.id, "its messaging socket refused the connection")
    found = tenant.client("alice").reach("bob@m1#4242")
    assert found.state == "path_broken" and "refused the connection" in found.reason
    (listed,) = next(a for a in bob.who().agents if a.name == "bob").sessions
    assert listed.delivery_error == "its messaging socket refused the connection"
    bob.heartbeat(session.id)
    assert tenant.client("alice").reach("bob@m1#4242").state == "live"


def test_who_with_an_address_and_status_say_why_mail_waits(tenant: Tenant, cli: CLI) -> None:
    cli.run_json("login", tenant.hub.url, "--token", tenant.token)
    proc = cli.run("send", "bob@nowhere#999999", "hi", "--json", agent="alice")
    expect_error(proc, "unknown_recipient", as_json=True)
    cli.run_json("agent", "create", "bob", agent="alice")
    reach = cli.run_json("who", "bob", agent="alice")
    assert reach["state"] == "no_live_session"
    sent = cli.run_json("send", "bob", "waiting", agent="alice")
    status = cli.run("status", sent["message_id"], agent="alice")
    assert "bob has no session that ever reported" in status.stdout, status.stdout


def _follower(cli: CLI, agent: str) -> tuple[subprocess.Popen[str], list[dict], threading.Thread]:
    proc = subprocess.Popen(
        cli.argv("read", "--follow", "--json"),
        env=cli.env(agent),
        cwd=cli.workdir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[dict] = []

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(json.loads(line))

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    return proc, lines, reader


def test_follow_rides_out_a_hub_killed_and_started_again(restartable: Hub, cli: CLI) -> None:
    hub = restartable
    cli.run_json("login", hub.url, "--token", hub.admin_token)
    follower, lines, reader = _follower(cli, "bob")
    try:
        wait_until(
            lambda: any(a["name"] == "bob" and a["live"] for a in cli.run_json("who", agent="alice")["agents"]),
            what="the follower to be bob's live session",
        )
        sent = [cli.run_json("send", "bob", f"before {i}", agent="alice")["message_id"] for i in range(5)]
        wait_until(lambda: len(lines) >= 5, what="the first five messages")
        hub.kill()
        hub.start()
        sent += [cli.run_json("send", "bob", f"after {i}", agent="alice")["message_id"] for i in range(5)]
        wait_until(lambda: len(lines) >= 10, timeout=30, what="the five sent after the restart")
        assert [line["message"]["id"] for line in lines] == sent  # each once, in order
        assert cli.run_json("read", agent="bob")["items"] == []  # the follower marked them read
    finally:
        follower.send_signal(signal.SIGTERM)
        follower.wait(timeout=30)
        reader.join(timeout=5)
    assert follower.returncode == 0
    assert "Traceback" not in (follower.stderr.read() if follower.stderr else "")
    bob = next(a for a in cli.run_json("who", agent="alice")["agents"] if a["name"] == "bob")
    assert not bob["live"]  # its session ended with it


def test_a_send_to_a_hub_that_is_down_is_a_clear_error(restartable: Hub, cli: CLI) -> None:
    cli.run_json("login", restartable.url, "--token", restartable.admin_token)
    restartable.kill()
    proc = cli.run("send", "bob", "anyone?", agent="alice", env={"CALLBOARD_SEND_RETRY_SECONDS": "1"})
    message = expect_error(proc, "hub_unavailable", as_json=False)
    assert "nothing was sent" in str(message)


def test_session_keep_keeps_a_process_live_and_ends_with_it(tenant: Tenant, cli: CLI) -> None:
    cli.run_json("login", tenant.hub.url, "--token", tenant.token)
    worker = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    keeper = subprocess.Popen(
        cli.argv("session", "keep", "--pid", worker.pid, "--every", "0.5", "--json"),
        env=cli.env("carol"),
        cwd=cli.workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert keeper.stdout is not None
        session = json.loads(keeper.stdout.readline())
        assert session["address"].endswith(f"#{worker.pid}") and session["live"]
        assert tenant.client("alice").reach(session["address"]).state == "live"
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait(timeout=10)
        assert keeper.wait(timeout=10) == 0  # it noticed the process end, and ended the session
        assert tenant.client("alice").reach(session["address"]).state == "no_live_session"
    finally:
        for proc in (keeper, worker):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
