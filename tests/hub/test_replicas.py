"""Three hub replicas over one PostgreSQL database (a fresh one, dropped afterwards): a message
sent through any replica reaches readers on the others at once; with senders spread over the
replicas and readers on others, every acknowledged message is delivered exactly once per
reader's cursor, in order, while one replica is SIGKILLed mid-run and its readers resume from
their cursors on another. Everything listens and connects on loopback only."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from callboard.client.following import follow
from callboard.client.hub import HubClient
from callboard.errors import HubUnavailable
from callboard.model import MailItem
from callboard.requests import ReadQuery, SendRequest
from tests.hub.conftest import CLI, EventStream, Hub
from tests.support.postgres import fresh_database
from tests.support.waiting import wait_until

REPLICAS = 3


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Hub]]:
    with fresh_database() as url:
        root = tmp_path_factory.mktemp("replicas")
        hubs = [Hub(root / f"r{i}", args=["--db", url], prints_admin=i == 0) for i in range(REPLICAS)]
        try:
            hubs[0].start()
            for hub in hubs[1:]:
                hub.start()
                hub.admin_token = hubs[0].admin_token
            yield hubs
        finally:
            for hub in hubs:
                hub.close()


def _client(hub: Hub, agent: str) -> HubClient:
    return HubClient(hub.url, hub.admin_token, agent)


def test_each_replica_says_it_uses_postgresql_and_names_itself(replicas: list[Hub]) -> None:
    ids = []
    for hub in replicas:
        listening = next(line for line in hub.output if "hub listening on" in line)
        assert "store PostgreSQL postgresql://" in listening and "replica r-" in listening
        health = httpx.get(f"{hub.url}/health", timeout=10).json()
        assert health["store"] == "postgresql" and health["replica"] in listening
        assert _client(hub, "alice").who().replica == health["replica"]
        ids.append(health["replica"])
    assert len(set(ids)) == REPLICAS
    assert "admin token" not in "\n".join(replicas[1].output)  # the first replica made it; the store keeps it


def test_a_message_sent_through_one_replica_reaches_stream_and_long_poll_readers_on_the_others(
    replicas: list[Hub],
) -> None:
    sender = _client(replicas[0], "alice")
    stream = EventStream(replicas[1].url, replicas[1].admin_token, "bob")
    try:
        stream.ready()
        waiting: dict[str, object] = {}

        def long_poll() -> None:
            started = time.monotonic()
            waiting["result"] = _client(replicas[2], "carol").read(ReadQuery(wait=30))
            waiting["seconds"] = time.monotonic() - started

        poller = threading.Thread(target=long_poll)
        poller.start()
        wait_until(lambda: poller.is_alive(), what="the long-poll to start")
        to_bob = sender.send(SendRequest(to="bob", text="across replicas")).message_id
        # The stream was subscribed before the send: only replica 1's notification could wake it
        # before its 15 s keepalive (the stream's read timeout is 10 s).
        assert stream.next_event().message_id == to_bob
        to_carol = sender.send(SendRequest(to="carol", text="across replicas too")).message_id
        poller.join(timeout=40)
        assert [i.message.id for i in waiting["result"].items] == [to_carol]  # type: ignore[attr-defined]
        assert waiting["seconds"] < 30  # woken by the send, not by its wait running out
    finally:
        stream.close()


def test_cursors_idempotency_and_states_are_the_stores_not_a_replicas(replicas: list[Hub]) -> None:
    first = _client(replicas[0], "alice").send(SendRequest(to="dave", text="once", idempotency_key="k-once"))
    again = _client(replicas[1], "alice").send(SendRequest(to="dave", text="once", idempotency_key="k-once"))
    assert again.message_id == first.message_id and again.duplicate
    page = _client(replicas[2], "dave").read(ReadQuery(peek=True, after=0))
    assert [i.message.id for i in page.items] == [first.message_id]
    _client(replicas[1], "dave").read()
    status = _client(replicas[2], "alice").message_status(first.message_id)
    assert [r.state for r in status.recipients] == ["read"]


class Reader:
    """One agent's reader following its mailbox from a cursor, moving to the next replica when
    its replica goes away (as a client behind a load balancer would)."""

    def __init__(self, agent: str, hubs: list[Hub], start: int) -> None:
        self.agent = agent
        self.hubs = hubs
        self.at = start
        self.got: list[MailItem] = []
        self.moves = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        cursor = 0
        while not self.stop.is_set():
            moved = threading.Event()
            stop_here = _Either(self.stop, moved)
            client = _client(self.hubs[self.at % len(self.hubs)], self.agent)
            try:
                cursor = follow(
                    client,
                    self._deliver,
                    stop=stop_here,  # type: ignore[arg-type]
                    after=cursor,
                    mark_read=False,
                    on_unreachable=lambda error, delay, moved=moved: moved.set(),
                    wait=5.0,
                )
            finally:
                client.close()
            if moved.is_set():
                self.at += 1
                self.moves += 1

    def _deliver(self, item: MailItem) -> None:
        self.got.append(item)


class _Either:
    """Set when either event is: a follower stops for good, or to move to another replica."""

    def __init__(self, *events: threading.Event) -> None:
        self._events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self._events)

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.is_set()


def test_every_acknowledged_message_is_delivered_once_in_order_while_a_replica_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALLBOARD_SEND_RETRY_SECONDS", "1")  # a sender on the killed replica gives up soon
    recipients = ["r0", "r1", "r2", "r3"]
    with fresh_database() as url:
        hubs = [Hub(tmp_path / f"r{i}", args=["--db", url], prints_admin=i == 0) for i in range(REPLICAS)]
        try:
            hubs[0].start()
            for hub in hubs[1:]:
                hub.start()
                hub.admin_token = hubs[0].admin_token
            # Readers on replica i+1, senders on every replica: each message crosses replicas.
            readers = [Reader(agent, hubs, start=i + 1) for i, agent in enumerate(recipients)]
            for reader in readers:
                reader.thread.start()
            acked: dict[tuple[str, str], list[str]] = {}  # (sender, recipient) -> ids, in send order
            lock = threading.Lock()
            halfway = threading.Event()

            def sender(index: int) -> None:
                name = f"s{index}"
                client = _client(hubs[index % REPLICAS], name)
                for n, recipient in zip(range(150), itertools.cycle(recipients)):
                    if n == 50:
                        halfway.set()
                    try:
                        sent = client.send(SendRequest(to=recipient, text=f"{name} #{n}"))
                    except HubUnavailable:
                        break  # its replica is gone: what it had acknowledged must still arrive
                    with lock:
                        acked.setdefault((name, recipient), []).append(sent.message_id)
                client.close()

            senders = [threading.Thread(target=sender, args=(i,)) for i in range(6)]
            for thread in senders:
                thread.start()
            assert halfway.wait(60)
            hubs[1].kill()  # readers r0 (and senders s1, s4) were on it
            for thread in senders:
                thread.join(120)
            assert not any(t.is_alive() for t in senders)
            total = sum(len(ids) for ids in acked.values())
            assert total >= 400  # the survivors kept sending

            def caught_up() -> bool:
                return all(
                    {i.message.id for i in r.got} >= {m for (s, to), ids in acked.items() if to == r.agent for m in ids}
                    for r in readers
                )

            wait_until(caught_up, timeout=60, what="every reader to get every acknowledged message")
            for reader in readers:
                reader.stop.set()
            for reader in readers:
                reader.thread.join(30)
            for reader in readers:
                got = [i.message.id for i in reader.got]
                assert len(got) == len(set(got)), f"{reader.agent} got a message twice"
                seqs = [i.seq for i in reader.got]
                assert seqs == sorted(seqs), f"{reader.agent}'s cursor went back"
                mine = {m for (s, to), ids in acked.items() if to == reader.agent for m in ids}
                assert set(got) >= mine
                # Anything else it got was sent but never acknowledged (cut off by the kill).
                for (s, to), ids in acked.items():
                    if to == reader.agent:
                        assert [m for m in got if m in ids] == ids, f"{s}→{to} out of order"
            assert readers[0].moves >= 1  # the reader on the killed replica moved and resumed
        finally:
            for hub in hubs:
                hub.close()


def test_the_command_line_on_the_database_itself_reaches_readers_of_the_replicas(
    replicas: list[Hub], tmp_path: Path
) -> None:
    url = replicas[0].args[replicas[0].args.index("--db") + 1]
    cli = CLI(tmp_path / "direct")
    stream = EventStream(replicas[2].url, replicas[2].admin_token, "erin")
    try:
        stream.ready()
        sent = cli.run_json("send", "erin", "straight into the database", agent="frank", env={"CALLBOARD_DB": url})
        assert stream.next_event().message_id == sent["message_id"]  # a notification woke the replica's stream
    finally:
        stream.close()
    got = cli.run_json("read", agent="erin", env={"CALLBOARD_DB": url})
    assert [item["message"]["id"] for item in got["items"]] == [sent["message_id"]]
    who = cli.run_json("whoami", agent="erin", env={"CALLBOARD_DB": url})
    assert who["store"].startswith("postgresql://") and "password" not in who["store"]


def test_a_follower_logged_in_to_every_replica_rides_out_the_loss_of_its_own(tmp_path: Path) -> None:
    with fresh_database() as url:
        hubs = [Hub(tmp_path / f"r{i}", args=["--db", url], prints_admin=i == 0) for i in range(2)]
        try:
            for hub in hubs:
                hub.start()
            hubs[1].admin_token = hubs[0].admin_token
            cli = CLI(tmp_path / "machine")
            cli.run_json("login", f"{hubs[0].url},{hubs[1].url}", "--token", hubs[0].admin_token)
            follower = subprocess.Popen(
                cli.argv("read", "--follow", "--json"),
                env=cli.env("bob"),
                cwd=cli.workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            lines: list[dict] = []
            threading.Thread(
                target=lambda: [lines.append(json.loads(line)) for line in follower.stdout or ()], daemon=True
            ).start()
            try:
                sender = _client(hubs[1], "alice")
                wait_until(lambda: sender.reach("bob").state == "live", what="the follower's session")
                sent = [sender.send(SendRequest(to="bob", text=f"before {i}")).message_id for i in range(3)]
                wait_until(lambda: len(lines) >= 3, what="the first three")
                hubs[0].kill()  # the follower's replica (the first of its list)
                sent += [sender.send(SendRequest(to="bob", text=f"after {i}")).message_id for i in range(3)]
                wait_until(lambda: len(lines) >= 6, timeout=40, what="the three sent after the loss")
                assert [line["message"]["id"] for line in lines] == sent  # once each, in order
            finally:
                follower.send_signal(signal.SIGTERM)
                assert follower.wait(timeout=30) == 0
        finally:
            for hub in hubs:
                hub.close()
