"""Two agents exchanging messages through a running hub: by the CLI and by HubClient; the
sender is always the credential's agent, never something the body says."""

from __future__ import annotations

from tests.cli_runner import texts
from tests.hub.conftest import CLI, Hub, Tenant, expect_http_error, unique


def test_two_agents_exchange_messages_through_the_hub_by_cli(tenant: Tenant, make_cli) -> None:
    alice, bob = unique("alice"), unique("bob")
    hub_env = {"SWITCHBOARD_HUB": tenant.hub.url, "SWITCHBOARD_TOKEN": tenant.token}
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
    assert not (one.switchboard_home / "switchboard.db").exists()
    assert not (two.switchboard_home / "switchboard.db").exists()


def test_two_agents_exchange_messages_through_the_hub_by_hubclient(tenant: Tenant) -> None:
    alice_name, bob_name = unique("alice"), unique("bob")
    alice = tenant.hub.client(tenant.agent_token(alice_name)["token"])
    bob = tenant.hub.client(tenant.agent_token(bob_name)["token"])
    try:
        sent = alice.send(bob_name, "first", subject="s1")
        alice.send(bob_name, "second")
        got = bob.read()
        assert [i.message.text for i in got.items] == ["first", "second"]
        assert {i.message.sender for i in got.items} == {alice_name}
        assert got.unread == 0
        assert bob.read().items == []  # drained: a second read is empty

        assert bob.ack([sent.message_id]).acked == [sent.message_id]
        status = alice.message_status(sent.message_id)
        assert [(r.agent, r.state) for r in status.recipients] == [(bob_name, "acked")]

        reply = bob.send(alice_name, "got it", reply_to=sent.message_id)
        assert reply.thread_id == sent.thread_id
        back = alice.read(wait=10)
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
