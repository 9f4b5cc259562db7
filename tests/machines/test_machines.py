"""Across machines: a hub in one network namespace, agents on two others (m1 and m2), joined by
veth links (tests/machines/netns.py). Every command is the ``switchboard`` CLI run inside a
machine's namespace, with that machine's own config and data; mail crosses real TCP links with
TLS, and links are cut and the hub killed while it does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.cli_runner import expect_error, texts
from tests.hub.conftest import unique
from tests.machines.netns import PORT, Network, unavailable_reason

UNAVAILABLE = unavailable_reason()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no network namespaces here: {UNAVAILABLE}")

UNVERIFIED = "certificate could not be verified"
UNREACHABLE = "cannot reach the hub"


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

    sent = network.run_json("m1", "send", bob, "from m1 to m2 by name", agent=alice)
    [outcome] = sent["recipients"]
    assert outcome["agent"] == bob and outcome["state"] != "failed", sent
    assert outcome["sessions"] == [f"{bob}@m2#{bob_process.pid}"], "bob's live session on m2 can read it now"

    for machine, me in (("m1", alice), ("m2", bob)):
        report = network.run_json(machine, "who", agent=me)
        agents = {a["name"]: a for a in report["agents"]}
        assert {alice, bob} <= set(agents), (machine, report)
        for name, session, where in ((alice, alice_session, "m1"), (bob, bob_session, "m2")):
            assert agents[name]["live"], (machine, agents[name])
            sessions = {s["id"]: s for s in agents[name]["sessions"]}
            assert sessions[session["id"]]["machine"] == where and sessions[session["id"]]["live"], (machine, sessions)
        machines = {m["name"]: m for m in report["machines"]}
        assert {"m1", "m2"} <= set(machines) and machines["m1"]["up"] and machines["m2"]["up"], (machine, report)
        assert agents[bob]["unread"] == 1, "the message waits for bob, whoever asks"

    got = network.read_all("m2", bob)
    assert message_texts(got) == ["from m1 to m2 by name"] and got[0]["message"]["id"] == sent["message_id"]


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
    no_ca = {"SWITCHBOARD_HOME": str(other), "SWITCHBOARD_CA_CERT": None}
    url = network.machine("m1").hub_url

    line = expect_unreachable(network.run("m1", "login", url, "--token", network.user_token, env=no_ca), why=UNVERIFIED)
    assert "--ca-cert" in line, line
    assert not (other / "config.toml").exists(), "a refused login saves nothing"

    ca_by_variable = {**no_ca, "SWITCHBOARD_CA_CERT": str(network.certificates.ca)}
    network.run_json("m1", "login", url, "--token", network.user_token, env=ca_by_variable)
    # (read, not send: a send retries an unreachable hub for seconds before it gives up)
    expect_unreachable(network.run("m1", "read", agent=alice, env=no_ca), why=UNVERIFIED)
    network.run_json("m1", "send", bob, "CA by the variable", agent=alice, env=ca_by_variable)

    network.run_json("m1", "login", url, "--token", network.user_token, "--ca-cert", network.certificates.ca, env=no_ca)
    network.run_json("m1", "send", bob, "CA saved by login", agent=alice, env=no_ca)
    assert message_texts(network.read_all("m2", bob)) == ["CA by the variable", "CA saved by login"]


def test_a_hub_without_tls_beyond_loopback_is_refused(network: Network) -> None:
    home = network.machine("hub").root / unique("plain")
    proc = network.run("hub", "up", "--host", "0.0.0.0", "--port", PORT + 1, env={"SWITCHBOARD_HOME": str(home)})
    line = expect_error(proc, "bad_request", as_json=False)
    assert isinstance(line, str) and "plain HTTP" in line and "--tls-cert" in line and "--tls-key" in line, line
    assert not (home / "switchboard.db").exists(), "nothing is written before the check"


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
