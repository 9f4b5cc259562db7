"""``message_status``: each recipient's states and times as they happen, under the address the
sender used; a recipient sees its own row, a third agent nothing."""

from __future__ import annotations

import os

import pytest

from callboard.errors import (
    UnknownMessage,
)
from callboard.model import (
    DeliveryState,
)
from callboard.requests import SendRequest
from tests.support.answers import row
from tests.support.service_setup import MACHINE

# --- message status -----------------------------------------------------------------------------------


def test_message_status_shows_each_recipients_states_and_times_as_they_happen(alice, bob, carol, clock):
    bob.register_session(runtime="claude-code")
    sent_at = clock.now
    sent = alice.send(SendRequest(to="bob,carol", text="status check", subject="s"))

    def status_rows() -> dict[str, tuple]:
        status = alice.message_status(sent.message_id)
        assert (status.message_id, status.sender, status.subject, status.thread_id, status.created_at) == (
            sent.message_id,
            "alice",
            "s",
            sent.thread_id,
            sent_at,
        )
        return {r.address: (r.state, r.queued_at, r.delivered_at, r.read_at, r.acked_at) for r in status.recipients}

    assert status_rows() == {
        "bob": (DeliveryState.delivered, sent_at, sent_at, None, None),
        "carol": (DeliveryState.queued, sent_at, None, None, None),
    }
    assert row(alice.message_status(sent.message_id), "bob").sessions == [f"bob@{MACHINE}#{os.getpid()}"]

    carol_read = clock.advance(10)
    carol.read()
    bob_read = clock.advance(10)
    bob.read()
    assert status_rows() == {
        "bob": (DeliveryState.read, sent_at, sent_at, bob_read, None),
        "carol": (DeliveryState.read, sent_at, carol_read, carol_read, None),
    }

    bob_acked = clock.advance(10)
    bob.ack([sent.message_id])
    carol_acked = clock.advance(10)
    carol.ack([sent.message_id])
    assert status_rows() == {
        "bob": (DeliveryState.acked, sent_at, sent_at, bob_read, bob_acked),
        "carol": (DeliveryState.acked, sent_at, carol_read, carol_read, carol_acked),
    }


def test_the_sender_sees_channel_recipients_under_the_address_it_used(alice, bob, carol, team):
    sent = alice.send(SendRequest(to=team, text="hi all"))
    status = alice.message_status(sent.message_id)
    assert sorted((r.address, r.agent, r.channel) for r in status.recipients) == [
        ("#team", "bob", "team"),
        ("#team", "carol", "team"),
    ]


def test_a_recipient_sees_only_its_own_status_row(alice, bob, carol):
    sent = alice.send(SendRequest(to="bob,carol", text="hi"))
    for client in (bob, carol):
        status = client.message_status(sent.message_id)
        assert [(r.agent, r.state) for r in status.recipients] == [(client.caller.agent, DeliveryState.queued)]


def test_a_third_agent_cannot_see_a_messages_status(alice, bob, dave):
    sent = alice.send(SendRequest(to="bob", text="private"))
    with pytest.raises(UnknownMessage) as raised:
        dave.message_status(sent.message_id)
    assert raised.value.code == "unknown_message"
