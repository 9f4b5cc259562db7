"""Two agents exchanging messages through a running hub: by the CLI and by HubClient; the
sender is always the credential's agent, never something the body says; deleting an agent; a
channel post large enough to be answered before its deliveries are written out."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from callboard.errors import UnknownAgent
from callboard.requests import ReadQuery, SendRequest
from callboard.store.sqlite.messages import FAN_OUT_LATER_FROM
from tests.hub.conftest import CLI, Hub, Tenant, expect_http_error, unique
from tests.support.cli_runner import texts


def test_two_agents_exchange_messages_through_the_hub_by_cli(tenant: Tenant, make_cli) -> None:
    alice, bob = unique("alice"), unique("bob")
    hub_env = {"CALLBOARD_HUB": tenant.hub.url, "CALLBOARD_TOKEN": tenant.token}
    # Two machines: neither has an embedded store of its own in play, both reach the hub.
    one: CLI = make_cli("one")
    two: CLI = make_cli("two")

    sent = one.run_json("send", bob, "ping over the hub", "--subject", "hello", agent=alice, env=hub_env)
    assert [r["state"] for r in sent["recipients"]] == ["queued"]

    got = two.run_json("read", agent=bob, env=hub_env)
    assert texts(got) == ["ping over the hub"]
    assert got["items"][0]["message"]["sender"] == alice
    assert got["items"][0]["message"]["subject"] == "hello"

    reply = two.run_json("send", alice, "pong", "--reply-to", sent["message_id"], agent=bob, env=hub_env)
    assert reply["thread_id"] == sent["thread_id"]

    back = one.run_json("read", agent=alice, env=hub_env)
    assert texts(back) == ["pong"]
    assert back["items"][0]["message"]["sender"] == bob
    assert back["items"][0]["message"]["reply_to"] == sent["message_id"]

    status = one.run_json("status", sent["message_id"], agent=alice, env=hub_env)
    assert [(r["agent"], r["state"]) for r in status["recipients"]] == [(bob, "read")]
    # It all went through the hub: neither machine has a database of its own.
    assert not (one.callboard_home / "callboard.db").exists()
    assert not (two.callboard_home / "callboard.db").exists()


def test_two_agents_exchange_messages_through_the_hub_by_hubclient(tenant: Tenant) -> None:
    alice_name, bob_name = unique("alice"), unique("bob")
    alice = tenant.hub.client(tenant.agent_token(alice_name)["token"])
    bob = tenant.hub.client(tenant.agent_token(bob_name)["token"])
    try:
        sent = alice.send(SendRequest(to=bob_name, text="first", subject="s1"))
        alice.send(SendRequest(to=bob_name, text="second"))
        got = bob.read()
        assert [i.message.text for i in got.items] == ["first", "second"]
        assert {i.message.sender for i in got.items} == {alice_name}
        assert got.unread == 0
        assert bob.read().items == []  # drained: a second read is empty

        assert bob.ack([sent.message_id]).acked == [sent.message_id]
        status = alice.message_status(sent.message_id)
        assert [(r.agent, r.state) for r in status.recipients] == [(bob_name, "acked")]

        reply = bob.send(SendRequest(to=alice_name, text="got it", reply_to=sent.message_id))
        assert reply.thread_id == sent.thread_id
        back = alice.read(ReadQuery(wait=10))
        assert [(i.message.sender, i.message.text, i.message.thread_id) for i in back.items] == [
            (bob_name, "got it", sent.thread_id)
        ]
    finally:
        alice.close()
        bob.close()


def test_a_body_naming_a_sender_is_refused_and_stores_nothing(tenant: Tenant) -> None:
    mallory, victim, target = unique("mallory"), unique("victim"), unique("target")
    with tenant.http(mallory) as http:
        answer = http.post("/v1/messages", json={"to": target, "text": "forged", "sender": victim})
        expect_http_error(answer, 400, "bad_request")
        assert "sender" in answer.json()["error"]["message"]
    with tenant.http(target) as http:
        mailbox = http.post("/v1/read", params={"peek": "true", "after": 0})
    assert mailbox.status_code == 200, mailbox.text
    assert mailbox.json()["items"] == []


def test_an_agent_tokens_send_shows_its_own_agent_as_sender(tenant: Tenant) -> None:
    carol, dave = unique("carol"), unique("dave")
    token = tenant.agent_token(carol)["token"]
    with tenant.http(dave) as http:  # an agent token sends only to agents that exist
        assert http.post("/v1/agents", json={"name": dave}).status_code == 201
    with tenant.hub.http(token) as http:  # no agent named: the token says who this is
        answer = http.post("/v1/messages", json={"to": dave, "text": "from the token"})
        assert answer.status_code == 201, answer.text
        mine = http.get("/v1/whoami").json()
    assert (mine["agent"], mine["workspace"]) == (carol, tenant.workspace)
    dave_client = tenant.client(dave)
    try:
        item = dave_client.read().items[0]
    finally:
        dave_client.close()
    assert item.message.id == answer.json()["message_id"]
    assert item.message.sender == carol


def test_a_user_tokens_send_shows_the_named_agent_as_sender(tenant: Tenant) -> None:
    erin, frank = unique("erin"), unique("frank")
    with tenant.http(erin) as http:
        answer = http.post("/v1/messages", json={"to": frank, "text": "as erin"})
    assert answer.status_code == 201, answer.text
    with tenant.http(frank) as http:
        items = http.post("/v1/read").json()["items"]
    assert [(i["message"]["sender"], i["message"]["workspace"]) for i in items] == [(erin, tenant.workspace)]


def test_health_and_openapi_need_no_token(hub: Hub) -> None:
    with hub.http() as http:
        health = http.get("/health")
        document = http.get("/openapi.json")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert document.status_code == 200 and document.json()["openapi"].startswith("3.")


# --- deleting an agent through the hub -----------------------------------------------------------
#
# The hub remembers which agent each credential acts as (and that the agent exists), so that it
# does not look it up again on every request. Deleting an agent must make it forget: the same
# credential's next request as that agent finds an empty mailbox (and, only looking, creates
# nothing), and its next act (a send) creates it afresh.


def test_deleting_an_agent_by_hubclient_erases_its_mailbox_and_its_next_act_creates_it_afresh(
    tenant: Tenant,
) -> None:
    bob_name, alice_name, keeper_name = unique("bob"), unique("alice"), unique("keeper")
    bob = tenant.hub.client(tenant.agent_token(bob_name)["token"])  # an agent token: always bob
    alice = tenant.client(alice_name)
    keeper = tenant.client(keeper_name)
    try:
        assert bob.whoami().agent == bob_name  # the hub now knows this credential as bob
        alice.send(SendRequest(to=bob_name, text="unread one"))
        alice.send(SendRequest(to=bob_name, text="unread two"))
        assert [i.message.text for i in bob.read(ReadQuery(peek=True)).items] == ["unread one", "unread two"]

        assert keeper.delete_agent(bob_name, force=True).unread_dropped == 2  # unread: only when forced

        assert bob_name not in {a.name for a in keeper.list_agents()}
        with pytest.raises(UnknownAgent):
            keeper.describe_agent(bob_name)
        again = bob.read(ReadQuery(peek=True, after=0))  # the same credential's next request, as bob
        assert again.items == [] and again.unread == 0
        assert bob_name not in {a.name for a in keeper.list_agents()}  # a read creates nobody
        bob.send(SendRequest(to=alice_name, text="back"))  # its next act
        assert bob_name in {a.name for a in keeper.list_agents()}  # created again by that act
        fresh = alice.send(SendRequest(to=bob_name, text="after the delete"))
        assert [r.new_agent for r in fresh.recipients] == [False]
        assert [(i.seq, i.message.text) for i in bob.read().items] == [(1, "after the delete")]  # numbered anew
    finally:
        for client in (bob, alice, keeper):
            client.close()


def test_an_agent_deleting_itself_over_http_answers_its_name_and_its_next_request_works(tenant: Tenant) -> None:
    bob, alice = unique("bob"), unique("alice")
    with tenant.http(bob) as as_bob, tenant.http(alice) as as_alice:
        assert as_bob.post("/v1/agents", json={"name": bob}).status_code == 201
        assert as_bob.get("/v1/whoami").json()["agent"] == bob
        for text in ("unread one", "unread two"):
            assert as_alice.post("/v1/messages", json={"to": bob, "text": text}).status_code == 201

        # Named in capitals: the hub deletes (and forgets) the canonical, lower-case name.
        answer = as_bob.delete(f"/v1/agents/{bob.upper()}", params={"force": "true"})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"deleted": bob, "unread_dropped": 2}

        listed = as_alice.get("/v1/agents")
        assert listed.status_code == 200, listed.text
        assert bob not in [a["name"] for a in listed.json()]
        expect_http_error(as_alice.get(f"/v1/agents/{bob}"), 404, "unknown_agent")

        mailbox = as_bob.post("/v1/read", params={"peek": "true", "after": 0})
        assert mailbox.status_code == 200, mailbox.text
        assert (mailbox.json()["items"], mailbox.json()["unread"]) == ([], 0)
        assert as_bob.get("/v1/whoami").json()["agent"] == bob
        assert bob not in [a["name"] for a in as_alice.get("/v1/agents").json()]  # looking creates nobody
        assert as_bob.post("/v1/messages", json={"to": alice, "text": "back"}).status_code == 201
        assert bob in [a["name"] for a in as_alice.get("/v1/agents").json()]  # its next act does


def test_agent_delete_by_cli_against_the_hub_erases_the_mailbox_and_the_agent_comes_back_empty(
    tenant: Tenant, cli: CLI
) -> None:
    bob, alice, operator = unique("bob"), unique("alice"), unique("operator")
    hub_env = {"CALLBOARD_HUB": tenant.hub.url, "CALLBOARD_TOKEN": tenant.token}
    assert cli.run_json("whoami", agent=bob, env=hub_env)["agent"] == bob
    cli.run_json("send", bob, "unread before the delete", agent=alice, env=hub_env)
    cli.run_json("agent", "create", operator, agent=operator, env=hub_env)

    deleted = cli.run_json("agent", "delete", bob, "--yes", "--force", agent=operator, env=hub_env)

    assert deleted == {"deleted": bob, "unread_dropped": 1}
    names = [a["name"] for a in cli.run_json("agent", "list", agent=operator, env=hub_env)]
    assert bob not in names and operator in names
    got = cli.run_json("read", agent=bob, env=hub_env)  # the same credential, as bob again
    assert texts(got) == [] and got["unread"] == 0
    assert bob not in [a["name"] for a in cli.run_json("agent", "list", agent=operator, env=hub_env)]
    cli.run_json("send", alice, "back", agent=bob, env=hub_env)  # its next act creates it again
    assert bob in [a["name"] for a in cli.run_json("agent", "list", agent=operator, env=hub_env)]
    human = cli.run("agent", "delete", bob, "--yes", agent=operator, env=hub_env)
    assert human.returncode == 0 and f"deleted agent {bob}" in human.stdout, human.stderr


def test_a_post_to_a_channel_large_enough_to_fan_out_later_reaches_every_member_and_a_waiting_reader(
    tenant: Tenant,
) -> None:
    # The hub answers such a post before writing its deliveries out: readers must not tell.
    members = [unique(f"m{i}") for i in range(FAN_OUT_LATER_FROM + 8)]
    clients = {name: tenant.client(name) for name in members}
    poster = tenant.client(unique("poster"))
    channel = unique("all")
    try:
        poster.create_channel(channel)
        for client in clients.values():
            client.join_channel(channel)
        with ThreadPoolExecutor(1) as pool:  # a long-poll, woken by the post or finding it
            waiting = pool.submit(clients[members[0]].read, ReadQuery(wait=30))
            sent = poster.send(SendRequest(to=f"#{channel}", text="to everyone"))
            assert [i.message.id for i in waiting.result(timeout=60).items] == [sent.message_id]
        for name in members[1:]:
            got = clients[name].read()
            assert [(i.message.id, i.seq) for i in got.items] == [(sent.message_id, 1)], name
            assert got.unread == 0
        status = poster.message_status(sent.message_id)
        assert sorted(r.agent for r in status.recipients) == sorted(members)
        assert {r.state for r in status.recipients} == {"read"}
    finally:
        for client in [poster, *clients.values()]:
            client.close()


def test_a_send_over_the_hub_with_a_refused_recipient_fails_whole(tenant: Tenant) -> None:
    alice, bob = unique("alice"), unique("bob")
    with tenant.http(alice) as sender, tenant.http(bob) as reader:
        assert sender.post("/v1/messages", json={"to": bob, "text": "first"}).status_code == 201
        assert len(reader.post("/v1/read").json()["items"]) == 1
        for to in ("#ghostchan", f"{bob},#ghostchan"):
            refused = expect_http_error(
                sender.post("/v1/messages", json={"to": to, "text": "hi"}), 404, "unknown_channel"
            )
            assert "no channel #ghostchan" in refused["message"] and "Nothing was sent" in refused["message"]
        typo = expect_http_error(
            sender.post("/v1/messages", json={"to": f"{bob},{bob}x@nomachine", "text": "hi"}), 404, "unknown_recipient"
        )
        assert f"{bob}x" in typo["message"]
        assert reader.post("/v1/read", params={"peek": "true"}).json()["items"] == []  # bob got none of them
