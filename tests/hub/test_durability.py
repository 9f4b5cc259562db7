"""What the hub acknowledged survives it: SIGKILL right after N acknowledged sends, and SIGTERM
with many sends in flight (a graceful stop that ends streams and long-polls and exits 0)."""

from __future__ import annotations

import signal
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.hub.conftest import ONE_STREAM, EventStream, Hub, until_read_waits, waiting_read
from tests.support.waiting import scaled, wait_until

SENDERS = 12
STOP_DEADLINE = scaled(25.0)  # the hub must exit on its own before uvicorn's 30 s would end it


def _mailbox_ids(hub: Hub, agent: str) -> list[str]:
    """Every message id in ``agent``'s mailbox, read or not, in delivery order."""
    ids: list[str] = []
    with hub.admin(agent) as http:
        after = 0
        while True:
            answer = http.post("/v1/read", params={"peek": "true", "after": after, "limit": 1000})
            assert answer.status_code == 200, answer.text
            page = answer.json()
            if not page["items"]:
                return ids
            ids += [item["message"]["id"] for item in page["items"]]
            after = page["cursor"]


def test_a_hub_sigkilled_after_acknowledging_n_sends_has_all_n_after_restart(make_hub) -> None:
    hub: Hub = make_hub()
    n = 120
    local = threading.local()
    clients: list[httpx.Client] = []

    def send(i: int) -> str:
        if not hasattr(local, "http"):
            local.http = hub.admin(f"writer-{threading.get_ident() % 1000}")
            clients.append(local.http)
        answer = local.http.post("/v1/messages", json={"to": "keeper", "text": f"durable {i}"})
        assert answer.status_code == 201, answer.text
        return answer.json()["message_id"]

    try:
        with ThreadPoolExecutor(8) as pool:  # concurrent sends: commits may be grouped
            acknowledged = list(pool.map(send, range(n)))
    finally:
        for http in clients:
            http.close()
    assert len(set(acknowledged)) == n

    hub.kill()  # no shutdown at all, right after the last acknowledgement
    hub.start()

    stored = _mailbox_ids(hub, "keeper")
    assert len(stored) == len(set(stored)), "a message was stored twice"
    assert set(stored) == set(acknowledged)


def test_sigterm_with_sends_in_flight_keeps_every_answered_send_and_exits_0(make_hub) -> None:
    hub: Hub = make_hub(args=ONE_STREAM)  # its waiting read is seen by the place it holds
    sleeper = hub.issue(kind="user", workspace="default")["token"]
    acknowledged: list[str] = []
    refused: list[str] = []  # answers that were not 2xx (no promise was made for them)
    lock = threading.Lock()
    finished = threading.Event()

    def sender(k: int) -> None:
        with hub.admin(f"sender-{k}") as http:
            i = 0
            while not finished.is_set():
                try:
                    answer = http.post("/v1/messages", json={"to": "sink", "text": f"{k}/{i}"})
                except httpx.HTTPError:
                    return  # the hub stopped taking requests
                with lock:
                    if answer.status_code in (200, 201):
                        acknowledged.append(answer.json()["message_id"])
                    else:
                        refused.append(f"{answer.status_code} {answer.text[:200]}")
                i += 1

    threads = [threading.Thread(target=sender, args=(k,), daemon=True) for k in range(SENDERS)]
    with ThreadPoolExecutor(1) as pool:
        stream = EventStream(hub.url, hub.admin_token, "watcher", read_timeout=STOP_DEADLINE)
        try:
            stream.ready()
            long_poll = pool.submit(waiting_read, hub, sleeper, "sleeper", 600, STOP_DEADLINE + 5)
            until_read_waits(hub, sleeper)
            for thread in threads:
                thread.start()
            wait_until(lambda: len(acknowledged) >= 100, what="sends to be flowing")

            hub.proc.send_signal(signal.SIGTERM)  # many sends are in flight now
            try:
                status = hub.proc.wait(STOP_DEADLINE)
            except subprocess.TimeoutExpired:
                pytest.fail(f"the hub did not exit within {STOP_DEADLINE:g} s of SIGTERM:\n{hub.describe()}")
            finally:
                finished.set()
                for thread in threads:
                    thread.join(STOP_DEADLINE)

            # The open stream and the waiting long-poll were ended, not cut off.
            assert stream.next_block() is None
            poll = long_poll.result(timeout=STOP_DEADLINE)
        finally:
            stream.close()
    assert (poll.status_code, poll.json().get("items")) == (200, [])

    hub.start()
    stored = _mailbox_ids(hub, "sink")
    assert len(stored) == len(set(stored)), "a message was stored twice"
    missing = set(acknowledged) - set(stored)
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged sends are gone after the restart"
    assert not refused or all(r.startswith("503") for r in refused), refused[:5]
    # Last, so a wrong exit status does not hide lost mail: a graceful stop exits 0.
    assert status == 0, f"the hub exited {status} after SIGTERM, not 0"
