"""Across machines: a hub in one network namespace, agents on two others (m1 and m2), joined by
veth links (tests/support/netns.py). Every command is the ``callboard`` CLI run inside a
machine's namespace, with that machine's own config and data; mail crosses real TCP links with
TLS, and links are cut and the hub killed while it does. Sessions on m1 and m2 are addressed by
name, name@machine and name@machine#pid; they go not live when killed, and a machine whose
processes all died is reported down."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pytest

from tests.hub.conftest import unique
from tests.support.cli_runner import describe, expect_error, texts
from tests.support.netns import CALL_TIMEOUT as CALL
from tests.support.netns import CALLBOARD, PORT, Network, unavailable_reason
from tests.support.netns import STOP_TIMEOUT as STOP
from tests.support.waiting import wait_until

UNAVAILABLE = unavailable_reason()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no network namespaces here: {UNAVAILABLE}")

UNVERIFIED = "certificate could not be verified"
UNREACHABLE = "cannot reach the hub"
SENDS = 12  # per sender, in the hub-kill test
# After a link flap the follower's waiting read usually survives (TCP resends); if it does not,
# it times out after its wait (25 s) + the client's 30 s, then reads again from its cursor.
FLAP_CATCH_UP = 60.0


def message_texts(items: list[dict[str, Any]]) -> list[str]:
    return texts({"items": items})


def expect_unreachable(proc: Any, *, why: str = UNREACHABLE) -> str:
    """Exit 2, no traceback, one line: ``error: hub_unavailable: cannot reach the hub …``."""
    line = expect_error(proc, "hub_unavailable", as_json=False, strict=True)
    assert isinstance(line, str) and why in line, line
    return line


# --- who is where --------------------------------------------------------------------------------


def test_each_machine_sees_both_agents_and_both_machines(network: Network) -> None:
    alice, bob = unique("alice"), unique("bob")
    _, alice_session = network.start_session("m1", alice)
    bob_process, bob_session = network.start_session("m2", bob)
    assert (alice_session["machine"], bob_session["machine"]) == ("m1", "m2")
    assert bob_session["address"] == f"{bob}@m2#{bob_process.pid}"

    sent = network.run_json("m1", "send", bob, "from m1 to m2 by name", agent=alice)
    [outcome] = sent["recipients"]
    assert outcome["agent"] == bob and outcome["state"] == "delivered", sent
    assert outcome["sessions"] == [bob_session["address"]], "bob's live session on m2 can read it now"

    for machine, me in (("m1", alice), ("m2", bob)):
        report = network.run_json(machine, "who", agent=me)
        agents = {a["name"]: a for a in report["agents"]}
        assert {alice, bob} <= set(agents), (machine, report)
        for name, session, where in ((alice, alice_session, "m1"), (bob, bob_session, "m2")):
            assert agents[name]["live"], (machine, agents[name])
            [listed] = agents[name]["sessions"]
            assert listed["id"] == session["id"] and listed["machine"] == where and listed["live"], (machine, listed)
            assert listed["address"] == session["address"] and listed["delivery_error"] is None, (machine, listed)
        machines = {m["name"]: m for m in report["machines"]}
        assert {"m1", "m2"} <= set(machines), (machine, report)
        assert all(machines[m]["up"] and machines[m]["last_seen"] for m in ("m1", "m2")), (machine, machines)
        assert agents[bob]["unread"] == 1, "the message waits for bob, whoever asks"

    # Each side asks about the other's exact session: live, pushed to it.
    for machine, me, session in (("m1", alice, bob_session), ("m2", bob, alice_session)):
        reach = network.run_json(machine, "who", session["address"], agent=me)
        assert reach["state"] == "live" and reach["session"] == session["address"], (machine, reach)
        assert reach["sessions"] == [session["address"]] and reach["machine"] == session["machine"], (machine, reach)

    got = network.read_all("m2", bob)
    assert message_texts(got) == ["from m1 to m2 by name"] and got[0]["message"]["id"] == sent["message_id"]


def test_every_address_form_reaches_its_session_across_machines(network: Network) -> None:
    alice, bob = unique("alice"), unique("bob")
    # alice's pane is a shell: registered as her session, it later runs a read as its child.
    go = network.machine("m1").workdir / unique("go")
    script = 'while [ ! -e "$1" ]; do sleep 0.05; done; "$0" whoami --json; echo ---; "$0" read --json'
    shell = network.spawn("m1", ["sh", "-c", script, CALLBOARD, go], agent=alice)
    me = network.run_json("m1", "session", "start", "--pid", shell.pid, "--terminal", "tmux:%7", agent=alice)
    _, older = network.start_session("m2", bob)
    _, newer = network.start_session("m2", bob)
    _, on_m1 = network.start_session("m1", bob)  # bob's newest session, on the other machine
    everywhere = sorted(s["address"] for s in (older, newer, on_m1))

    expected = {
        bob: (on_m1, everywhere),
        f"{bob}@m1": (on_m1, [on_m1["address"]]),
        f"{bob}@m2": (newer, sorted([older["address"], newer["address"]])),
        older["address"]: (older, [older["address"]]),  # bob@m2#<pid of the older pane>
    }
    assert older["address"] == f"{bob}@m2#{older['pid']}"
    sent: dict[str, str] = {}  # address -> the id of the message sent to it
    for address, (session, sessions) in expected.items():
        result = network.run_json(
            "m1", "send", address, f"to {address}", agent=alice, env={"CALLBOARD_SESSION": me["id"]}
        )
        [outcome] = result["recipients"]
        assert (outcome["address"], outcome["agent"], outcome["state"]) == (address, bob, "delivered"), result
        assert outcome["session"] == session["address"], (address, result)
        assert sorted(outcome["sessions"]) == sessions, (address, result)
        sent[address] = result["message_id"]

    # A read in no session sees the whole mailbox; nothing is marked read by it.
    everything = network.run_json("m2", "read", "--peek", agent=bob)["items"]
    assert [item["message"]["id"] for item in everything] == list(sent.values())
    for item in everything:  # the sender's exact session, and its terminal
        assert item["message"]["sender_address"] == me["address"] == f"{alice}@m1#{me['pid']}", item
        assert item["message"]["sender_terminal"] == "tmux:%7", item

    # Each pane, reading as itself on its own machine, gets exactly the mail pushed to it.
    for session, addresses in ((on_m1, [bob, f"{bob}@m1"]), (newer, [f"{bob}@m2"]), (older, [older["address"]])):
        got = network.run_json(session["machine"], "read", agent=bob, env={"CALLBOARD_SESSION": session["id"]})
        assert [item["message"]["id"] for item in got["items"]] == [sent[a] for a in addresses], (session, got)
    assert network.run_json("m2", "read", agent=bob)["items"] == [], "every message was read by its own pane"

    # Replying to the sender's address reaches alice's exact session on m1.
    reply = network.run_json("m2", "send", me["address"], "a reply", agent=bob, env={"CALLBOARD_SESSION": older["id"]})
    [outcome] = reply["recipients"]
    assert (outcome["state"], outcome["session"]) == ("delivered", me["address"]), reply
    _, other_pane = network.start_session("m1", alice)
    elsewhere = network.run_json("m2", "send", other_pane["address"], "for alice's other pane", agent=bob)
    assert elsewhere["recipients"][0]["session"] == other_pane["address"], elsewhere
    # alice's pane reads by a command it runs: its process lineage says which session it is, so
    # it gets the reply and not the mail of her other live pane.
    go.touch()
    out, err = shell.communicate(timeout=CALL)
    assert shell.returncode == 0 and "Traceback" not in err, err
    whoami, read = out.split("\n---\n")
    assert json.loads(whoami)["session"] == me["address"], whoami
    [answer] = json.loads(read)["items"]
    assert answer["message"]["id"] == reply["message_id"]
    assert answer["message"]["sender_address"] == older["address"], answer

    # An exact address that never reported is unknown: nothing is sent.
    never = f"{bob}@m2#1"
    expect_error(network.run("m1", "send", never, "hello?", "--json", agent=alice), "unknown_recipient", as_json=True)


# --- mail crosses the machines ---------------------------------------------------------------------


def test_twenty_messages_cross_in_order_exactly_once(network: Network) -> None:
    alice, bob = unique("alice"), unique("bob")
    sent = [network.run_json("m1", "send", bob, f"message {n}", agent=alice)["message_id"] for n in range(20)]
    got = network.read_all("m2", bob)
    assert message_texts(got) == [f"message {n}" for n in range(20)]
    assert [item["message"]["id"] for item in got] == sent
    assert all(item["message"]["sender"] == alice for item in got)
    assert network.run_json("m2", "read", agent=bob)["items"] == [], "each message is read once"


# --- TLS -----------------------------------------------------------------------------------------


def test_a_machine_without_the_ca_is_refused_and_with_it_works(network: Network) -> None:
    assert network.certificates is not None
    alice, bob = unique("alice"), unique("bob")
    other = network.machine("m1").root / unique("without-ca")  # another user of m1, with no CA
    no_ca = {"CALLBOARD_HOME": str(other), "CALLBOARD_CA_CERT": None}
    url = network.machine("m1").hub_url

    line = expect_unreachable(network.run("m1", "login", url, "--token", network.user_token, env=no_ca), why=UNVERIFIED)
    assert "--ca-cert" in line, line
    assert not (other / "config.toml").exists(), "a refused login saves nothing"

    ca_by_variable = {**no_ca, "CALLBOARD_CA_CERT": str(network.certificates.ca)}
    network.run_json("m1", "login", url, "--token", network.user_token, env=ca_by_variable)
    # (read, not send: a send retries an unreachable hub for seconds before it gives up)
    expect_unreachable(network.run("m1", "read", agent=alice, env=no_ca), why=UNVERIFIED)
    network.run_json("m1", "send", bob, "CA by the variable", agent=alice, env=ca_by_variable)

    network.run_json("m1", "login", url, "--token", network.user_token, "--ca-cert", network.certificates.ca, env=no_ca)
    network.run_json("m1", "send", bob, "CA saved by login", agent=alice, env=no_ca)
    assert message_texts(network.read_all("m2", bob)) == ["CA by the variable", "CA saved by login"]


def test_a_hub_without_tls_beyond_loopback_is_refused(network: Network) -> None:
    home = network.machine("hub").root / unique("plain")
    proc = network.run("hub", "up", "--host", "0.0.0.0", "--port", PORT + 1, env={"CALLBOARD_HOME": str(home)})
    line = expect_error(proc, "bad_request", as_json=False)
    assert isinstance(line, str) and "plain HTTP" in line and "--tls-cert" in line and "--tls-key" in line, line
    assert not (home / "callboard.db").exists(), "nothing is written before the check"


# --- a cut link and a killed hub -------------------------------------------------------------------


def test_a_cut_link_is_a_clear_error_and_the_mail_waits(network: Network) -> None:
    alice, bob = unique("alice"), unique("bob")
    network.link_down("m2")
    try:
        sent = network.run_json("m1", "send", bob, "while m2 is cut off", agent=alice)
        line = expect_unreachable(network.run("m2", "read", agent=bob))
        assert network.machine("m2").hub_url in line, line
    finally:
        network.link_up("m2")
    got = network.read_all("m2", bob)
    assert [item["message"]["id"] for item in got] == [sent["message_id"]]
    assert message_texts(got) == ["while m2 is cut off"]


def test_acknowledged_mail_survives_a_sigkilled_hub(make_network: Callable[..., Network]) -> None:
    network = make_network()
    alice, bob = unique("alice"), unique("bob")
    before = [network.run_json("m1", "send", bob, f"before {n}", agent=alice)["message_id"] for n in range(5)]
    early = network.run_json("m2", "read", "--limit", "2", agent=bob)["items"]  # read, then the hub dies

    network.kill_hub()
    assert not network.reaches_hub("m1")
    network.start_hub()

    after = network.run_json("m1", "send", bob, "after the restart", agent=alice)["message_id"]
    late = network.read_all("m2", bob)
    assert [item["message"]["id"] for item in early + late] == [*before, after]
    assert message_texts(early + late) == [*(f"before {n}" for n in range(5)), "after the restart"]

    network.restart_hub(kill=True)  # with nothing unread: nothing comes back
    assert network.run_json("m2", "read", agent=bob)["items"] == []


# --- sessions that die, machines that die ----------------------------------------------------------

WINDOW = 3.0  # the liveness window of the networks that need a short one
MARGIN = 5.0  # how much past the window a test waits for the hub to see a session gone


def reach_of(network: Network, machine: str, address: str, agent: str) -> dict[str, Any]:
    return network.run_json(machine, "who", address, agent=agent)


def listed_sessions(network: Network, machine: str, agent: str, of: str) -> dict[str, dict[str, Any]]:
    """``of``'s sessions in ``who --json`` on ``machine``, by address."""
    report = network.run_json(machine, "who", agent=agent)
    [presence] = [a for a in report["agents"] if a["name"] == of]
    return {s["address"]: s for s in presence["sessions"]}


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def machines_of(network: Network, machine: str, agent: str) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in network.run_json(machine, "who", agent=agent)["machines"]}


def test_a_killed_session_and_a_dead_machine_stop_being_live_within_the_window(
    make_network: Callable[..., Network],
) -> None:
    network = make_network(liveness_seconds=WINDOW)
    assert network.liveness_option, "'callboard up' takes --liveness-seconds"
    alice, bob = unique("alice"), unique("bob")
    with ThreadPoolExecutor(5) as pool:  # each keeper reports every 0.5 s: well inside the window
        mine, killed, exits, stopped, survivor = pool.map(
            lambda spec: network.keep_session(*spec), [("m1", alice), *[("m2", bob)] * 4]
        )
    listed = listed_sessions(network, "m1", alice, bob)
    assert all(listed[p.address]["live"] for p in (killed, exits, stopped, survivor)), listed

    # A session whose keeper ends normally is not live at once: its process exits, or the keeper is stopped.
    exits.process.terminate()
    stopped.keeper.terminate()
    assert (exits.keeper.wait(STOP), stopped.keeper.wait(STOP)) == (0, 0), exits.keeper_errors + stopped.keeper_errors
    for pane in (exits, stopped):
        reach = reach_of(network, "m1", pane.address, alice)
        assert reach["state"] == "no_live_session" and "ended" in reach["reason"], reach
    assert stopped.process.poll() is None, "stopping the keeper leaves the process alone"

    # SIGKILL a pane's process and its keeper: nothing ends the session; the window does.
    killed.keeper.kill()
    killed.process.kill()
    killed.keeper.wait(STOP)
    gone = wait_until(
        lambda: not (found := listed_sessions(network, "m1", alice, bob))[killed.address]["live"] and found,
        WINDOW + MARGIN,
        f"{killed.address} to stop being live",
    )
    assert gone[survivor.address]["live"], "the other pane on m2 still reports"
    reach = reach_of(network, "m1", killed.address, alice)
    assert reach["state"] == "no_live_session", reach
    assert f"past the {WINDOW:g} s liveness window" in reach["reason"], reach
    refused = expect_error(
        network.run("m1", "send", killed.address, "are you there?", "--json", agent=alice),
        "no_live_session",
        as_json=True,
    )
    assert f"Session {killed.address} is not live" in refused["message"], refused
    assert "Nothing was sent" in refused["message"], refused
    to_m2 = network.run_json("m1", "send", f"{bob}@m2", "the live pane", agent=alice)
    assert to_m2["recipients"][0]["session"] == survivor.address, to_m2

    # m2 dies: every process on it, killed. Within the window the hub says so, with when it last reported.
    network.kill_machine("m2")
    machines = wait_until(
        lambda: not (found := machines_of(network, "m1", alice))["m2"]["up"] and found,
        WINDOW + MARGIN,
        "machine m2 to be down",
    )
    assert machines["m1"]["up"], "m1 still reports (alice's keeper)"
    assert machines["m2"]["last_seen"], machines
    down = reach_of(network, "m1", f"{bob}@m2", alice)
    assert (down["state"], down["machine"]) == ("machine_down", "m2"), down
    assert down["machine_last_seen"] and "machine m2 is down" in down["reason"], down
    assert _instant(down["machine_last_seen"]) == _instant(machines["m2"]["last_seen"]), (down, machines)
    refused = expect_error(
        network.run("m1", "send", f"{bob}@m2", "anyone?", "--json", agent=alice), "no_live_session", as_json=True
    )
    assert "machine m2 is down: none of its sessions reported since" in refused["message"], refused
    queued = network.run_json("m1", "send", bob, "for when bob is back", agent=alice)
    assert (queued["recipients"][0]["state"], queued["recipients"][0]["session"]) == ("queued", None), queued
    [row] = network.run_json("m1", "status", queued["message_id"], agent=alice)["recipients"]
    assert row["reach"]["state"] == "machine_down" and row["reach"]["machine"] == "m2", row
    assert reach_of(network, "m1", mine.address, alice)["state"] == "live", "m1's session was never touched"


# --- a follower across a cut link and a killed hub -------------------------------------------------


def test_a_follower_rides_out_a_cut_link_each_message_once_in_order(network: Network) -> None:
    alice, bob = unique("alice"), unique("bob")
    follower = network.follow("m2", bob)
    sent: list[str] = []

    def send(n: int) -> None:  # the hub is up all along: every send from m1 succeeds
        key = f"{alice}-{n}"
        sent.append(
            network.run_json("m1", "send", bob, f"message {n}", "--idempotency-key", key, agent=alice)["message_id"]
        )

    try:
        for n in range(4):
            send(n)
        wait_until(lambda: len(follower.ids) >= 4, CALL, "the follower to print the first four")
        network.link_down("m2")
        cut = time.monotonic()
        try:
            for n in range(4, 10):
                send(n)
            assert not network.reaches_hub("m2")
        finally:
            network.link_up("m2")
        restored = time.monotonic()
        for n in range(10, 14):
            send(n)
        wait_until(lambda: len(follower.ids) >= len(sent), FLAP_CATCH_UP, "the follower to print every message")
        caught_up = time.monotonic()
        assert follower.ids == sent, "each acknowledged message once, in send order"
        assert message_texts(follower.items) == [f"message {n}" for n in range(14)]
        assert follower.proc.poll() is None, f"the follower still runs:\n{follower.errors}"
        # It marks a message read just after printing it: the last mark may still be on its way.
        wait_until(
            lambda: network.run_json("m2", "read", "--peek", agent=bob)["items"] == [],
            CALL,
            "the follower to mark the last one read",
        )
    finally:
        status = follower.stop()
    print(
        f"link down {restored - cut:.1f} s; caught up {caught_up - restored:.1f} s after it came back; "
        f"follower's notes: {follower.errors}"
    )
    assert status == 0 and not any("Traceback" in line for line in follower.errors), follower.errors
    assert network.run_json("m2", "read", agent=bob)["items"] == [], "the follower marked each one read"


def test_followers_get_every_acknowledged_message_once_across_a_sigkilled_hub(
    make_network: Callable[..., Network],
) -> None:
    network = make_network()
    carol, dave = unique("carol"), unique("dave")  # following on m1 and on m2
    senders = {unique("alice"): "m1", unique("erin"): "m2"}
    followers = [network.follow("m1", carol), network.follow("m2", dave)]
    acked: dict[str, list[tuple[int, str]]] = {s: [] for s in senders}  # (n, message id) of sends that exited 0
    refused: dict[str, list[int]] = {s: [] for s in senders}
    killed = threading.Event()
    spans: list[tuple[float, float]] = []  # when each send ran
    under_way: dict[str, float] = {}  # sender -> when its send now running began

    def send_all(sender: str) -> None:
        for n in range(SENDS):
            if n == SENDS // 2:  # half before the kill, half after (or during the restart)
                killed.wait(CALL * 2)
            key = f"{sender}-{n}"
            began = under_way[sender] = time.monotonic()
            proc = network.run(
                senders[sender],
                "send",
                f"{carol},{dave}",
                f"{sender} {n}",
                "--idempotency-key",
                key,
                "--json",
                agent=sender,
            )
            spans.append((began, time.monotonic()))
            del under_way[sender]
            if proc.returncode == 0:
                acked[sender].append((n, json.loads(proc.stdout)["message_id"]))
            else:  # not acknowledged: it gave up on the hub (a slow restart), and says so plainly
                expect_error(proc, "hub_unavailable", as_json=True, strict=False)
                notes = proc.stderr.splitlines()  # beside the JSON answer, only its note that it retried
                assert notes and all("does not answer; trying again" in line for line in notes), describe(proc)
                refused[sender].append(n)

    try:
        with ThreadPoolExecutor(len(senders)) as pool:
            running = [pool.submit(send_all, sender) for sender in senders]
            try:
                # Killed while a send runs (a command takes a while: its start alone, here).
                wait_until(
                    lambda: all(len(acked[s]) >= 2 for s in senders) and under_way, CALL, "both senders to be under way"
                )
                kill_at = time.monotonic()
                network.restart_hub(kill=True)
            finally:
                killed.set()
            for one in running:
                one.result()
        every = {message_id for sender in senders for _, message_id in acked[sender]}
        for follower in followers:
            wait_until(
                lambda f=follower: every <= set(f.ids),
                CALL * 2,
                f"{follower.agent}'s follower to print every acknowledged one",
            )
            assert follower.proc.poll() is None, follower.errors
    finally:
        statuses = [follower.stop() for follower in followers]
    assert statuses == [0, 0], [f.errors for f in followers]
    assert any(began < kill_at < ended for began, ended in spans), "a send was under way when the hub died"
    print(f"acknowledged {[len(a) for a in acked.values()]} of {SENDS} each; refused {refused}")
    for follower in followers:  # it lost the hub, said so, and said when it was back
        notes = "\n".join(follower.errors)
        assert "trying again in" in notes and "reconnected" in notes and "Traceback" not in notes, notes
    for follower in followers:
        assert len(follower.ids) == len(set(follower.ids)), f"no message twice: {follower.ids}"
        for sender in senders:
            printed = [item for item in follower.items if item["message"]["sender"] == sender]
            numbers = [int(message_texts([item])[0].split()[-1]) for item in printed]
            assert numbers == sorted(set(numbers)), f"{sender}'s messages once each, in order: {numbers}"
            assert set(numbers) <= set(range(SENDS))
            acknowledged = [message_id for _, message_id in acked[sender]]
            assert [item["message"]["id"] for item in printed if item["message"]["id"] in acknowledged] == acknowledged
            unacknowledged = {n for n in numbers} - {n for n, _ in acked[sender]}
            assert unacknowledged <= set(refused[sender]), "only a refused send may have been stored anyway"
