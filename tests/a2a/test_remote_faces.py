"""Outside A2A agents through the faces, as real processes: the ``callboard`` command line on
the embedded store (the send pumps inline, ``status`` moves it on), and through a real hub (its
own pump sends, any client just sends and reads). The outside agent is the a2a-sdk's server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.hub.conftest import CLI, Hub
from tests.support.cli_runner import describe, expect_error
from tests.support.outside_agent import OutsideAgent
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[OutsideAgent]:
    root = tmp_path / "outside"
    root.mkdir()
    agent = OutsideAgent(root).start()
    yield agent
    agent.stop()


@pytest.fixture
def card_servers() -> Iterator[dict[str, str]]:
    """Where no card comes from: a server that takes the connection and never answers, one that
    answers 404, one that serves a page that is not a card."""
    silent = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def hold() -> None:
        while True:
            try:
                held.append(silent.accept()[0])
            except OSError:
                return

    class Pages(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            page = b"<html>not a card</html>" if self.path.startswith("/page/") else None
            self.send_response(200 if page else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page or b"")))
            self.end_headers()
            self.wfile.write(page or b"")

        def log_message(self, *args: object) -> None:
            pass

    pages = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threads = [threading.Thread(target=hold, daemon=True), threading.Thread(target=pages.serve_forever, daemon=True)]
    for thread in threads:
        thread.start()
    base = f"http://127.0.0.1:{pages.server_address[1]}"
    try:
        yield {
            "silent": f"http://127.0.0.1:{silent.getsockname()[1]}",
            "missing": f"{base}/nobody",
            "page": f"{base}/page",
        }
    finally:
        pages.shutdown()
        silent.close()
        for conn in held:
            conn.close()


# What each says: the card's own URL, that it did not arrive, and why, under a stable code.
CARD_FAILURES = {
    "silent": ("remote_timeout", "did not arrive within 10 s"),
    "missing": ("bad_remote_answer", "did not arrive: the server answered HTTP 404 (no card there)"),
    "page": ("bad_remote_answer", "is not an A2A agent card"),
}


def _says_the_card_did_not_come(cli: CLI, card_servers: dict[str, str]) -> None:
    for kind, url in card_servers.items():
        code, words = CARD_FAILURES[kind]
        proc = cli.run("agent", "add-remote", kind, url, "--json", agent="alice")
        error = expect_error(proc, code, as_json=True, strict=False)
        # Standard error holds at most the line saying what it waits for (a silent server's 10 s).
        assert all(line.startswith("callboard: fetching the agent card") for line in proc.stderr.splitlines()), proc
        assert isinstance(error, dict) and f"{url}/.well-known/agent-card.json" in error["message"], error
        assert words in error["message"], error
        assert "callboard up" not in error["message"] and "tried again" not in error["message"], error
    assert all("remote" not in a for a in cli.run_json("agent", "list", agent="alice"))  # nothing registered


def _from(items: list[dict[str, Any]], sender: str) -> str:
    return " | ".join(
        p.get("text", "") for i in items if i["message"]["sender"] == sender for p in i["message"]["parts"]
    )


def test_the_cli_registers_a_remote_sends_it_a_task_and_reads_its_answers(
    tmp_path: Path, outside: OutsideAgent
) -> None:
    cli = CLI(tmp_path / "machine")
    added = cli.run_json("agent", "add-remote", "echo", outside.url, agent="alice")
    assert (added["name"], added["url"], added["streaming"]) == ("echo", outside.url, True)
    listed = {a["name"]: a for a in cli.run_json("agent", "list", agent="alice")}
    assert listed["echo"]["remote"] == outside.url
    human = cli.run("who", agent="alice")
    assert "remote" in human.stdout and outside.url in human.stdout, describe(human)

    sent = cli.run_json("send", "echo", "complete the review", agent="alice")
    (outcome,) = sent["recipients"]
    assert outcome["state"] == "queued" and outcome["remote"] == outside.url
    # The send pumped inline until the remote's first answer: it took the message.
    assert sent["message_id"] in [s["message_id"] for s in outside.seen()]

    def completed() -> dict[str, Any] | None:
        status = cli.run_json("status", sent["message_id"], agent="alice")  # status moves it on
        return status if status.get("task_state") == "completed" and status["remote"]["state"] == "done" else None

    status = wait_until(completed, 30, "the remote task to complete")
    assert status["remote"]["state"] == "done" and status["remote"]["remote_task_id"]
    shown = cli.run("status", sent["message_id"], agent="alice")
    assert "completed" in shown.stdout and "outside agent echo: done" in shown.stdout, describe(shown)
    items = cli.run_json("read", agent="alice")["items"]
    assert "result: complete the review" in _from(items, "echo")
    assert {i["task_id"] for i in items} == {status["task_id"]} and all(i["task_state"] for i in items)

    removed = cli.run_json("agent", "remove-remote", "echo", agent="alice")
    assert removed["name"] == "echo"
    gone = cli.run("agent", "remove-remote", "echo", "--json", agent="alice")
    expect_error(gone, "unknown_agent", as_json=True)


def test_the_cli_refuses_bad_remotes_with_a_clear_error(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "machine")
    port = OutsideAgent(tmp_path).port  # nothing listens there
    down = cli.run("agent", "add-remote", "ghost", f"http://127.0.0.1:{port}", agent="alice")
    # A slow machine may be told what it waits for first (cli/waiting.saying_after): a note, not the error.
    waiting_note = f"callboard: fetching the agent card at http://127.0.0.1:{port} (Ctrl-C stops)\n"
    down.stderr = down.stderr.removeprefix(waiting_note)
    message = expect_error(down, "remote_unreachable", as_json=False)
    assert "did not arrive: nothing answered there" in str(message)
    bad = cli.run("send", "a2a:ftp://example.invalid/x", "hi", "--json", agent="alice")
    expect_error(bad, "bad_address", as_json=True)
    assert all("remote" not in a for a in cli.run_json("agent", "list", agent="alice"))  # nothing registered


def test_add_remote_says_the_card_did_not_arrive_and_why(tmp_path: Path, card_servers: dict[str, str]) -> None:
    _says_the_card_did_not_come(CLI(tmp_path / "machine"), card_servers)


def test_through_a_hub_add_remote_says_the_card_did_not_arrive_not_that_the_hub_is_down(
    tmp_path: Path, card_servers: dict[str, str]
) -> None:
    hub = Hub(tmp_path / "hub").start()
    try:
        _says_the_card_did_not_come(CLI.on_hub_machine(hub), card_servers)
        assert "Traceback" not in hub.log_text(), hub.log_text()[-3000:]
    finally:
        hub.close()


def test_through_a_hub_the_hub_pumps_and_an_a2a_address_registers_on_first_use(
    tmp_path: Path, outside: OutsideAgent
) -> None:
    hub = Hub(tmp_path / "hub").start()
    try:
        cli = CLI.on_hub_machine(hub)
        sent = cli.run_json("send", f"a2a:{outside.url}", "complete through the hub", agent="alice")
        (outcome,) = sent["recipients"]
        assert outcome["agent"] == "outside-echo" and outcome["state"] == "queued"

        def answered() -> str | None:
            items = cli.run_json("read", "--peek", agent="alice")["items"]
            text = _from(items, "outside-echo")
            return text if "result: complete through the hub" in text else None

        wait_until(answered, 30, "the hub's pump to bring the remote's answer")

        def settled() -> dict[str, Any] | None:
            status = cli.run_json("status", sent["message_id"], agent="alice")
            return status if status["remote"]["state"] == "done" else None

        status = wait_until(settled, 30, "the hub's pump to settle the row")
        assert status["task_state"] == "completed" and status["remote"]["remote_task_id"]
        remotes = json.loads(cli.run("agent", "list", "--json", agent="alice").stdout)
        assert any(a.get("remote") == outside.url for a in remotes)
        assert "Traceback" not in hub.log_text(), hub.log_text()[-3000:]
    finally:
        hub.close()
