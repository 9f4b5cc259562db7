"""The Store contract: what every implementation does, seen only through the Store interface.

Every test here runs once per implementation named in ``conftest.IMPLEMENTATIONS``. Tests use
nothing but Store methods (no SQL, no file paths), so a new implementation passes them
unchanged. Times are whole seconds after ``T0`` so any store keeps them exactly.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from callboard.model import Agent, DeliveryState, Part, Workspace, new_id
from callboard.store.records import (
    DuplicateIdempotencyKey,
    IdempotentSend,
    NewDelivery,
    NewToken,
    RecipientsGone,
    TokenTaken,
)
from callboard.tokens import TokenInfo
from tests.support.store_data import (
    OTHER_WS,
    T0,
    WS,
    agents,
    at,
    build,
    ids,
    new_token,
    secret_hash,
    send,
    seqs,
    session_spec,
    status_of,
)
from tests.support.waiting import wait_until

# --- workspaces ------------------------------------------------------------------------------


def test_ensure_workspace_creates_it_once(store):
    assert store.directory.ensure_workspace(WS, T0) is True
    assert store.directory.ensure_workspace(WS, at(60)) is False
    assert store.directory.list_workspaces() == [Workspace(name=WS, created_at=T0)]


def test_list_workspaces_lists_every_workspace_by_name(store):
    store.directory.ensure_workspace(OTHER_WS, T0)
    store.directory.ensure_workspace(WS, T0)
    assert [w.name for w in store.directory.list_workspaces()] == [WS, OTHER_WS]


# --- agents ----------------------------------------------------------------------------------


def test_ensure_agent_creates_a_bare_agent_once(store):
    store.directory.ensure_workspace(WS, T0)
    assert store.directory.ensure_agent(WS, "bob", T0) is True
    assert store.directory.ensure_agent(WS, "bob", at(60)) is False
    assert store.directory.get_agent(WS, "bob") == Agent(
        workspace=WS, name="bob", description=None, skills=[], created_at=T0
    )
    assert [a.name for a in store.directory.list_agents(WS)] == ["bob"]


def test_create_agent_stores_its_card(store):
    store.directory.ensure_workspace(WS, T0)
    assert store.directory.create_agent(WS, "bob", "reviews code", ["python", "review"], T0) is True
    assert store.directory.get_agent(WS, "bob") == Agent(
        workspace=WS, name="bob", description="reviews code", skills=["python", "review"], created_at=T0
    )


def test_create_agent_returns_false_when_it_exists_and_changes_nothing(store):
    store.directory.ensure_workspace(WS, T0)
    store.directory.create_agent(WS, "bob", "reviews code", ["python"], T0)
    assert store.directory.create_agent(WS, "bob", "something else", ["go"], at(60)) is False
    assert store.directory.ensure_agent(WS, "bob", at(60)) is False
    agent = store.directory.get_agent(WS, "bob")
    assert (agent.description, agent.skills, agent.created_at) == ("reviews code", ["python"], T0)


def test_update_agent_keeps_the_fields_not_given(store):
    store.directory.ensure_workspace(WS, T0)
    store.directory.create_agent(WS, "bob", "reviews code", ["python"], T0)

    assert store.directory.update_agent(WS, "bob", "reviews everything", None) is True
    agent = store.directory.get_agent(WS, "bob")
    assert (agent.description, agent.skills) == ("reviews everything", ["python"])

    assert store.directory.update_agent(WS, "bob", None, ["go", "rust"]) is True
    agent = store.directory.get_agent(WS, "bob")
    assert (agent.description, agent.skills) == ("reviews everything", ["go", "rust"])

    assert store.directory.update_agent(WS, "bob", None, []) is True  # an empty list is given: it clears
    assert store.directory.get_agent(WS, "bob").skills == []
    assert store.directory.get_agent(WS, "bob").created_at == T0


def test_update_agent_of_an_unknown_agent_returns_false_and_creates_nothing(store):
    store.directory.ensure_workspace(WS, T0)
    assert store.directory.update_agent(WS, "ghost", "boo", ["haunting"]) is False
    assert store.directory.get_agent(WS, "ghost") is None
    assert store.directory.list_agents(WS) == []


def test_get_agent_of_an_unknown_agent_is_none(store):
    store.directory.ensure_workspace(WS, T0)
    assert store.directory.get_agent(WS, "ghost") is None


def test_list_agents_lists_the_workspaces_agents_by_name(store):
    agents(store, WS, "carol", "alice", "bob")
    assert [a.name for a in store.directory.list_agents(WS)] == ["alice", "bob", "carol"]


def test_delete_agent_removes_its_mailbox_memberships_and_sessions_but_not_its_sent_messages(store):
    agents(store, WS, "alice", "bob")
    store.directory.create_channel(WS, "team", "alice", None, T0)
    store.directory.join_channel(WS, "team", "bob", T0)
    store.sessions.register_session(session_spec("bob"), T0)
    to_bob = send(store, WS, "alice", ["bob"])
    from_bob = send(store, WS, "bob", ["alice"], text="bob wrote this")

    assert store.directory.delete_agent(WS, "bob") == 1  # deleted, with the one unread message it held

    assert store.directory.get_agent(WS, "bob") is None
    assert [a.name for a in store.directory.list_agents(WS)] == ["alice"]
    assert store.mailbox.peek(WS, "bob", None, 100) == []
    assert store.mailbox.peek(WS, "bob", 0, 100) == []
    assert store.mailbox.newest(WS, "bob", True, 100) == []
    assert store.mailbox.unread_count(WS, "bob") == 0
    assert [d.agent for d in store.sent.delivery_statuses(WS, to_bob.id)] == []
    assert [m.agent for m in store.directory.channel_members(WS, "team")] == ["alice"]
    assert store.directory.get_channel(WS, "team").members == 1
    assert store.sessions.list_sessions(WS, "bob", include_ended=True) == []
    # what bob sent stays, and stays in its recipient's mailbox
    assert store.sent.get_message(WS, from_bob.id) == from_bob.message
    assert ids(store.mailbox.peek(WS, "alice", None, 100)) == [from_bob.id]


def test_delete_agent_of_an_unknown_agent_returns_none(store):
    store.directory.ensure_workspace(WS, T0)
    assert store.directory.delete_agent(WS, "ghost") is None


def test_an_agent_created_again_after_delete_starts_with_an_empty_mailbox(store):
    agents(store, WS, "alice", "bob")
    send(store, WS, "alice", ["bob"])
    store.directory.delete_agent(WS, "bob")
    store.directory.ensure_agent(WS, "bob", at(60))
    assert store.mailbox.peek(WS, "bob", 0, 100) == []
    fresh = send(store, WS, "alice", ["bob"])
    assert ids(store.mailbox.claim(WS, "bob", None, 100, at(61))) == [fresh.id]


# --- channels --------------------------------------------------------------------------------


def test_create_channel_makes_the_creator_its_first_member(store):
    agents(store, WS, "alice")
    assert store.directory.create_channel(WS, "team", "alice", "the team", T0) is True
    channel = store.directory.get_channel(WS, "team", "alice")
    assert (channel.workspace, channel.name, channel.description, channel.created_by, channel.created_at) == (
        WS,
        "team",
        "the team",
        "alice",
        T0,
    )
    assert (channel.members, channel.joined) == (1, True)
    assert [(m.agent, m.joined_at) for m in store.directory.channel_members(WS, "team")] == [("alice", T0)]


def test_create_channel_returns_false_when_it_exists_and_changes_nothing(store):
    agents(store, WS, "alice", "bob")
    store.directory.create_channel(WS, "team", "alice", "the team", T0)
    assert store.directory.create_channel(WS, "team", "bob", "bob's team", at(60)) is False
    channel = store.directory.get_channel(WS, "team", "bob")
    assert (channel.description, channel.created_by, channel.members, channel.joined) == ("the team", "alice", 1, False)


def test_join_and_leave_say_whether_the_membership_changed(store):
    agents(store, WS, "alice", "bob")
    store.directory.create_channel(WS, "team", "alice", None, T0)

    assert store.directory.join_channel(WS, "team", "bob", at(5)) is True
    assert store.directory.join_channel(WS, "team", "bob", at(9)) is False
    assert [(m.agent, m.joined_at) for m in store.directory.channel_members(WS, "team")] == [
        ("alice", T0),
        ("bob", at(5)),
    ]

    assert store.directory.leave_channel(WS, "team", "bob") is True
    assert store.directory.leave_channel(WS, "team", "bob") is False
    assert [m.agent for m in store.directory.channel_members(WS, "team")] == ["alice"]


def test_channel_member_names_are_the_current_members_sorted_and_of_that_workspace_only(store):
    agents(store, WS, "carol", "alice", "bob")
    agents(store, OTHER_WS, "dave")
    store.directory.create_channel(WS, "team", "carol", None, T0)
    store.directory.create_channel(OTHER_WS, "team", "dave", None, T0)
    store.directory.join_channel(WS, "team", "alice", at(1))
    store.directory.join_channel(WS, "team", "bob", at(2))
    store.directory.leave_channel(WS, "team", "bob")

    assert store.directory.channel_member_names(WS, "team") == ["alice", "carol"]
    assert store.directory.channel_member_names(WS, "team") == [
        m.agent for m in store.directory.channel_members(WS, "team")
    ]
    assert store.directory.channel_member_names(WS, "nowhere") == []


def test_channels_count_members_and_say_whether_the_viewer_joined(store):
    agents(store, WS, "alice", "bob", "carol")
    store.directory.create_channel(WS, "team", "alice", None, T0)
    store.directory.create_channel(WS, "ops", "bob", None, T0)
    store.directory.join_channel(WS, "team", "bob", T0)
    store.directory.join_channel(WS, "team", "carol", T0)

    assert [(c.name, c.members, c.joined) for c in store.directory.list_channels(WS, "carol")] == [
        ("ops", 1, False),
        ("team", 3, True),
    ]
    assert [(c.name, c.joined) for c in store.directory.list_channels(WS, "bob")] == [("ops", True), ("team", True)]
    assert [(c.name, c.joined) for c in store.directory.list_channels(WS)] == [("ops", False), ("team", False)]
    assert store.directory.get_channel(WS, "team").joined is False
    assert store.directory.get_channel(WS, "ops", "alice").joined is False
    assert store.directory.get_channel(WS, "ops", "bob").members == 1

    store.directory.leave_channel(WS, "team", "carol")
    assert (
        store.directory.get_channel(WS, "team", "carol").members,
        store.directory.get_channel(WS, "team", "carol").joined,
    ) == (2, False)


def test_unknown_channels_are_none_and_have_no_members(store):
    agents(store, WS, "alice")
    assert store.directory.get_channel(WS, "nowhere", "alice") is None
    assert store.directory.list_channels(WS, "alice") == []
    assert store.directory.channel_members(WS, "nowhere") == []


# --- sessions and machines -------------------------------------------------------------------


def test_register_session_stores_what_the_process_reported(store):
    agents(store, WS, "bob")
    session = store.sessions.register_session(session_spec("bob", "host-a", 100, 5000, "codex"), T0)
    assert session.id
    assert (session.workspace, session.agent, session.machine, session.pid, session.proc_start, session.runtime) == (
        WS,
        "bob",
        "host-a",
        100,
        5000,
        "codex",
    )
    assert (session.started_at, session.last_seen, session.ended_at) == (T0, T0, None)
    assert store.sessions.get_session(WS, session.id) == session


def test_register_session_returns_the_same_session_for_the_same_process(store):
    agents(store, WS, "bob")
    first = store.sessions.register_session(session_spec("bob", "host-a", 100, 5000), T0)
    again = store.sessions.register_session(session_spec("bob", "host-a", 100, 5000), at(30))
    assert again.id == first.id
    assert (again.started_at, again.last_seen, again.ended_at) == (T0, at(30), None)
    assert [s.id for s in store.sessions.list_sessions(WS, include_ended=True)] == [first.id]


def test_registering_the_same_process_with_another_runtime_keeps_the_session_and_updates_it(store):
    agents(store, WS, "bob")
    first = store.sessions.register_session(session_spec("bob", "host-a", 100, 5000, runtime="script"), T0)
    again = store.sessions.register_session(session_spec("bob", "host-a", 100, 5000, runtime="codex"), at(5))
    assert (again.id, again.runtime, again.ended_at) == (first.id, "codex", None)
    assert [s.id for s in store.sessions.list_sessions(WS, include_ended=True)] == [first.id]


def test_a_different_process_start_on_the_same_machine_and_pid_ends_the_old_session(store):
    agents(store, WS, "bob")
    old = store.sessions.register_session(session_spec("bob", "host-a", 100, proc_start=5000), T0)
    new = store.sessions.register_session(
        session_spec("bob", "host-a", 100, proc_start=7000), at(30)
    )  # the pid was recycled
    assert new.id != old.id
    assert (new.proc_start, new.started_at, new.ended_at) == (7000, at(30), None)
    assert store.sessions.get_session(WS, old.id).ended_at == at(30)
    assert [s.id for s in store.sessions.list_sessions(WS)] == [new.id]
    assert {s.id for s in store.sessions.list_sessions(WS, include_ended=True)} == {old.id, new.id}


def test_a_recycled_pid_ends_the_old_session_of_another_agent_it_may_end(store):
    agents(store, WS, "alice", "bob")
    old = store.sessions.register_session(session_spec("alice", "host-a", 100, proc_start=5000), T0)
    claim = replace(session_spec("bob", "host-a", 100, proc_start=7000), may_end=(old.id,))
    new = store.sessions.register_session(claim, at(30))
    assert store.sessions.get_session(WS, old.id).ended_at == at(30)
    assert [s.id for s in store.sessions.list_sessions(WS)] == [new.id]


def test_another_agents_open_session_that_the_claim_may_not_end_fails_it_and_nothing_is_written(store):
    agents(store, WS, "alice", "bob")
    alices = store.sessions.register_session(session_spec("alice", "host-a", 100, proc_start=5000), T0)
    assert store.sessions.register_session(session_spec("bob", "host-a", 100, proc_start=7000), at(30)) is None
    assert [(s.id, s.ended_at) for s in store.sessions.list_sessions(WS, include_ended=True)] == [(alices.id, None)]


def test_the_same_pid_on_another_machine_is_another_process(store):
    agents(store, WS, "bob")
    here = store.sessions.register_session(session_spec("bob", "host-a", 100, 5000), T0)
    there = store.sessions.register_session(session_spec("bob", "host-b", 100, 7000), at(30))
    assert here.id != there.id
    assert {s.id for s in store.sessions.list_sessions(WS)} == {here.id, there.id}


def test_touch_session_moves_its_last_seen_and_its_machines(store):
    agents(store, WS, "bob")
    session = store.sessions.register_session(session_spec("bob", "host-a"), T0)
    touched = store.sessions.touch_session(WS, session.id, at(45))
    assert (touched.id, touched.started_at, touched.last_seen, touched.ended_at) == (session.id, T0, at(45), None)
    assert store.sessions.get_session(WS, session.id).last_seen == at(45)
    assert [(m.name, m.last_seen) for m in store.sessions.list_machines(WS)] == [("host-a", at(45))]


def test_touch_session_of_an_unknown_session_is_none(store):
    agents(store, WS, "bob")
    assert store.sessions.touch_session(WS, new_id(), T0) is None
    assert store.sessions.list_machines(WS) == []


def test_end_session_ends_it_and_hides_it_from_the_open_sessions(store):
    agents(store, WS, "bob")
    session = store.sessions.register_session(session_spec("bob"), T0)
    ended = store.sessions.end_session(WS, session.id, at(20))
    assert (ended.id, ended.ended_at) == (session.id, at(20))
    assert store.sessions.get_session(WS, session.id).ended_at == at(20)
    assert store.sessions.list_sessions(WS) == []
    assert [s.id for s in store.sessions.list_sessions(WS, include_ended=True)] == [session.id]


def test_end_session_of_an_unknown_session_is_none(store):
    agents(store, WS, "bob")
    assert store.sessions.end_session(WS, new_id(), T0) is None
    assert store.sessions.get_session(WS, new_id()) is None


def test_list_sessions_filters_by_agent_and_by_ended(store):
    agents(store, WS, "alice", "bob")
    a = store.sessions.register_session(session_spec("alice", pid=1), T0)
    b1 = store.sessions.register_session(session_spec("bob", pid=2), T0)
    b2 = store.sessions.register_session(session_spec("bob", pid=3), at(1))
    store.sessions.end_session(WS, b1.id, at(2))

    assert {s.id for s in store.sessions.list_sessions(WS)} == {a.id, b2.id}
    assert {s.id for s in store.sessions.list_sessions(WS, include_ended=True)} == {a.id, b1.id, b2.id}
    assert [s.id for s in store.sessions.list_sessions(WS, "bob")] == [b2.id]
    assert {s.id for s in store.sessions.list_sessions(WS, "bob", include_ended=True)} == {b1.id, b2.id}
    assert store.sessions.list_sessions(WS, "carol", include_ended=True) == []


def test_list_machines_reports_each_machine_once_with_its_newest_report(store):
    agents(store, WS, "alice", "bob")
    store.sessions.register_session(session_spec("alice", "host-a", pid=1), T0)
    store.sessions.register_session(session_spec("bob", "host-b", pid=2), at(5))
    store.sessions.register_session(session_spec("bob", "host-a", pid=3), at(10))
    assert [(m.name, m.last_seen) for m in store.sessions.list_machines(WS)] == [("host-a", at(10)), ("host-b", at(5))]


# --- inserting and fetching messages -----------------------------------------------------------


def test_insert_message_numbers_each_recipients_deliveries_1_2_3_independently(store):
    agents(store, WS, "alice", "bob", "carol")
    assert send(store, WS, "alice", ["bob", "carol"]).seqs == {"bob": 1, "carol": 1}
    assert send(store, WS, "alice", ["bob"]).seqs == {"bob": 2}
    assert send(store, WS, "carol", ["bob"]).seqs == {"bob": 3}
    assert send(store, WS, "bob", ["carol", "alice"]).seqs == {"carol": 2, "alice": 1}
    assert [store.mailbox.last_seq(WS, a) for a in ("alice", "bob", "carol")] == [1, 3, 2]
    assert seqs(store.mailbox.peek(WS, "bob", None, 100)) == [1, 2, 3]
    assert seqs(store.mailbox.peek(WS, "carol", None, 100)) == [1, 2]


def test_insert_message_creates_a_missing_recipient_when_asked(store):
    agents(store, WS, "alice")
    sent = send(store, WS, "alice", ["newbie"], create=["newbie"])
    assert sent.seqs == {"newbie": 1}
    assert store.directory.get_agent(WS, "newbie") is not None
    assert ids(store.mailbox.peek(WS, "newbie", None, 100)) == [sent.id]


def test_insert_message_to_a_recipient_that_no_longer_exists_fails_whole(store):
    agents(store, WS, "alice", "bob")
    with pytest.raises(RecipientsGone) as gone:
        send(store, WS, "alice", ["bob", "ghost"])  # ghost was deleted after the service looked
    assert gone.value.names == ["ghost"]
    assert store.mailbox.peek(WS, "bob", None, 100) == []
    assert store.directory.get_agent(WS, "ghost") is None


def test_get_message_round_trips_every_part_kind(store):
    agents(store, WS, "alice", "bob")
    parent = send(store, WS, "bob", ["alice"])
    parts = [
        Part(text="see attached"),
        Part(data={"build": 42, "ok": True, "tags": ["a", "b"], "nested": {"x": 1.5, "none": None}}),
        Part(data=[1, "two", 3.0]),
        Part(url="https://example.com/report.pdf", filename="report.pdf", media_type="application/pdf"),
        Part(raw="aGVsbG8gd29ybGQ=", filename="hello.txt", media_type="text/plain", metadata={"lines": 1, "src": "ci"}),
        Part(text="ünïcødé ✓ 中文", metadata={"lang": "mixed"}),
    ]
    sent = send(
        store,
        WS,
        "alice",
        ["bob"],
        parts=parts,
        subject="the report",
        created_at=at(7),
        thread_id=parent.message.thread_id,
        reply_to=parent.id,
        sender_session=new_id(),
    )
    stored = store.sent.get_message(WS, sent.id)
    assert stored == sent.message
    assert [p.kind for p in stored.parts] == ["text", "data", "data", "url", "raw", "text"]
    assert store.mailbox.claim(WS, "bob", None, 10, at(8))[0].message == sent.message


def test_get_message_keeps_the_channel_a_message_was_posted_to(store):
    agents(store, WS, "alice", "bob")
    sent = send(store, WS, "alice", ["bob"], channel="team")
    assert store.sent.get_message(WS, sent.id).channel == "team"
    assert store.sent.get_message(WS, sent.id).recipients == ["#team"]


def test_get_message_and_send_result_of_an_unknown_message_are_none(store):
    agents(store, WS, "alice")
    assert store.sent.get_message(WS, new_id()) is None
    assert store.sent.send_result(WS, new_id()) is None
    assert store.sent.delivery_statuses(WS, new_id()) == []


def test_send_result_returns_what_the_send_answered(store):
    agents(store, WS, "alice", "bob")
    sent = send(store, WS, "alice", ["bob"])
    assert store.sent.send_result(WS, sent.id) == sent.result


def test_delivery_statuses_report_each_recipients_state_channel_and_sessions(store):
    agents(store, WS, "alice", "bob", "carol")
    message, result = build(WS, "alice", ["bob", "carol"], channel="team", created_at=at(3))
    store.submit_message(
        message,
        [
            NewDelivery("bob", DeliveryState.delivered, channel="team", sessions=["bob@host-a#100"]),
            NewDelivery("carol", DeliveryState.queued, channel="team"),
        ],
        result,
        None,
        None,
    ).result()
    bob, carol = status_of(store, WS, message.id, "bob"), status_of(store, WS, message.id, "carol")
    assert (bob.state, bob.channel, bob.sessions, bob.queued_at, bob.delivered_at) == (
        DeliveryState.delivered,
        "team",
        ["bob@host-a#100"],
        at(3),
        at(3),
    )
    assert (carol.state, carol.channel, carol.sessions, carol.queued_at, carol.delivered_at) == (
        DeliveryState.queued,
        "team",
        [],
        at(3),
        None,
    )
    for row in (bob, carol):
        assert (row.surfaced_at, row.read_at, row.acked_at) == (None, None, None)


# --- idempotency -------------------------------------------------------------------------------


def test_a_repeated_idempotency_key_raises_and_stores_nothing_of_the_repeat(store):
    agents(store, WS, "alice", "bob")
    first = send(store, WS, "alice", ["bob"], key="k-1", request_hash="h1")
    message, result = build(WS, "alice", ["bob", "newbie"])
    with pytest.raises(DuplicateIdempotencyKey):
        store.submit_message(
            message,
            [NewDelivery("bob", DeliveryState.queued), NewDelivery("newbie", DeliveryState.queued, create_agent=True)],
            result,
            "k-1",
            "h2",
        ).result()
    assert store.sent.get_message(WS, message.id) is None
    assert store.directory.get_agent(WS, "newbie") is None
    assert ids(store.mailbox.peek(WS, "bob", 0, 100)) == [first.id]
    assert store.mailbox.last_seq(WS, "bob") == 1
    assert store.sent.find_idempotent(WS, "alice", "k-1") == IdempotentSend(request_hash="h1", result=first.result)


def test_an_idempotency_key_is_scoped_to_its_workspace_and_sender(store):
    agents(store, WS, "alice", "bob")
    agents(store, OTHER_WS, "alice", "bob")
    send(store, WS, "alice", ["bob"], key="k", request_hash="h")
    send(store, WS, "bob", ["alice"], key="k", request_hash="h")  # another sender
    send(store, OTHER_WS, "alice", ["bob"], key="k", request_hash="h")  # another workspace
    assert (
        store.mailbox.last_seq(WS, "bob") == 1
        and store.mailbox.last_seq(WS, "alice") == 1
        and store.mailbox.last_seq(OTHER_WS, "bob") == 1
    )


def test_messages_without_an_idempotency_key_never_collide(store):
    agents(store, WS, "alice", "bob")
    for _ in range(3):
        send(store, WS, "alice", ["bob"], text="same text")
    assert store.mailbox.last_seq(WS, "bob") == 3


def test_find_idempotent_returns_the_stored_hash_and_result(store):
    agents(store, WS, "alice", "bob")
    sent = send(store, WS, "alice", ["bob"], key="deploy-42", request_hash="abc123")
    assert store.sent.find_idempotent(WS, "alice", "deploy-42") == IdempotentSend(
        request_hash="abc123", result=sent.result
    )
    assert store.sent.find_idempotent(WS, "alice", "other-key") is None
    assert store.sent.find_idempotent(WS, "bob", "deploy-42") is None


# --- claim (read-once drain) ---------------------------------------------------------------------


def test_claim_returns_unread_deliveries_in_sequence_order_and_marks_them_read(store):
    agents(store, WS, "alice", "bob")
    sent = [send(store, WS, "alice", ["bob"], text=f"m{i}").id for i in range(3)]
    items = store.mailbox.claim(WS, "bob", None, 100, at(10))
    assert ids(items) == sent
    assert seqs(items) == [1, 2, 3]
    assert [i.state for i in items] == [DeliveryState.read] * 3
    assert store.mailbox.unread_count(WS, "bob") == 0
    assert store.mailbox.claim(WS, "bob", None, 100, at(11)) == []
    assert [i.state for i in store.mailbox.peek(WS, "bob", 0, 100)] == [DeliveryState.read] * 3


def test_claim_takes_at_most_limit_and_never_returns_a_delivery_twice(store):
    agents(store, WS, "alice", "bob")
    sent = [send(store, WS, "alice", ["bob"], text=f"m{i}").id for i in range(5)]
    batches = [store.mailbox.claim(WS, "bob", None, 2, at(10)) for _ in range(4)]
    assert [seqs(b) for b in batches] == [[1, 2], [3, 4], [5], []]
    assert [i for b in batches for i in ids(b)] == sent


def test_claim_records_when_each_delivery_was_read(store):
    agents(store, WS, "alice", "bob", "carol")
    queued = send(store, WS, "alice", ["bob"], created_at=T0)
    live = send(store, WS, "alice", ["carol"], created_at=T0, state=DeliveryState.delivered, sessions=["carol@h#1"])
    store.mailbox.claim(WS, "bob", None, 10, at(10))
    store.mailbox.claim(WS, "carol", None, 10, at(20))
    bob = status_of(store, WS, queued.id, "bob")
    carol = status_of(store, WS, live.id, "carol")
    assert (bob.state, bob.queued_at, bob.delivered_at, bob.read_at, bob.acked_at) == (
        DeliveryState.read,
        T0,
        at(10),
        at(10),
        None,
    )
    assert (carol.state, carol.delivered_at, carol.read_at) == (DeliveryState.read, T0, at(20))


def test_claim_with_after_returns_every_delivery_past_the_cursor_whatever_its_read_state(store):
    agents(store, WS, "alice", "bob")
    sent = [send(store, WS, "alice", ["bob"], text=f"m{i}").id for i in range(4)]  # seqs 1-4
    store.mailbox.claim(WS, "bob", None, 100, at(10))  # all read
    assert store.mailbox.ack(WS, "bob", [sent[1]], at(11)) == []  # seq 2 acked
    late = send(store, WS, "alice", ["bob"], text="late").id  # seq 5, unread

    items = store.mailbox.claim(WS, "bob", 1, 100, at(12))
    assert seqs(items) == [2, 3, 4, 5]
    assert ids(items) == sent[1:] + [late]
    assert [i.state for i in items] == [DeliveryState.acked, DeliveryState.read, DeliveryState.read, DeliveryState.read]
    assert store.mailbox.unread_count(WS, "bob") == 0
    assert status_of(store, WS, late, "bob").read_at == at(12)
    assert status_of(store, WS, sent[2], "bob").read_at == at(10)  # an earlier read keeps its time
    assert store.mailbox.claim(WS, "bob", 5, 100, at(13)) == []
    assert seqs(store.mailbox.claim(WS, "bob", 0, 2, at(13))) == [1, 2]


def test_claim_of_an_empty_or_unknown_mailbox_is_empty(store):
    agents(store, WS, "bob")
    assert store.mailbox.claim(WS, "bob", None, 10, T0) == []
    assert store.mailbox.claim(WS, "ghost", 0, 10, T0) == []


# --- peek and mailbox ------------------------------------------------------------------------------


def test_peek_returns_the_same_window_as_claim_but_marks_nothing(store):
    agents(store, WS, "alice", "bob")
    sent = [send(store, WS, "alice", ["bob"], text=f"m{i}").id for i in range(3)]

    items = store.mailbox.peek(WS, "bob", None, 100)
    assert ids(items) == sent
    assert [i.state for i in items] == [DeliveryState.queued] * 3
    assert ids(store.mailbox.peek(WS, "bob", None, 2)) == sent[:2]
    assert ids(store.mailbox.peek(WS, "bob", 1, 100)) == sent[1:]
    assert store.mailbox.unread_count(WS, "bob") == 3
    assert all(s.read_at is None for s in store.sent.delivery_statuses(WS, sent[0]))

    assert ids(store.mailbox.claim(WS, "bob", None, 100, at(10))) == sent  # peeking left them all unread
    assert store.mailbox.peek(WS, "bob", None, 100) == []
    assert [i.state for i in store.mailbox.peek(WS, "bob", 0, 100)] == [DeliveryState.read] * 3


def test_mailbox_lists_unacked_deliveries_read_or_not_oldest_first(store):
    agents(store, WS, "alice", "bob")
    sent = [send(store, WS, "alice", ["bob"], text=f"m{i}").id for i in range(4)]
    store.mailbox.claim(WS, "bob", None, 2, at(10))  # first two read
    store.mailbox.ack(WS, "bob", [sent[0]], at(11))

    unacked = store.mailbox.newest(WS, "bob", False, 100)
    assert ids(unacked) == sent[1:]
    assert [i.state for i in unacked] == [DeliveryState.read, DeliveryState.queued, DeliveryState.queued]
    assert ids(store.mailbox.newest(WS, "bob", True, 100)) == sent
    assert store.mailbox.unread_count(WS, "bob") == 2  # the mailbox marks nothing


def test_mailbox_returns_the_newest_limit_deliveries_oldest_first(store):
    agents(store, WS, "alice", "bob")
    sent = [send(store, WS, "alice", ["bob"], text=f"m{i}").id for i in range(5)]
    newest = store.mailbox.newest(WS, "bob", False, 3)
    assert seqs(newest) == [3, 4, 5]
    assert ids(newest) == sent[2:]
    store.mailbox.ack(WS, "bob", sent[3:], at(1))
    assert seqs(store.mailbox.newest(WS, "bob", False, 2)) == [2, 3]
    assert seqs(store.mailbox.newest(WS, "bob", True, 2)) == [4, 5]


# --- ack ----------------------------------------------------------------------------------------------


def test_ack_marks_messages_acked_and_read(store):
    agents(store, WS, "alice", "bob")
    first, second, third = (send(store, WS, "alice", ["bob"], text=f"m{i}").id for i in range(3))
    assert store.mailbox.ack(WS, "bob", [first, second, first], at(30)) == []  # a repeated id is fine

    for message_id in (first, second):
        row = status_of(store, WS, message_id, "bob")
        assert (row.state, row.read_at, row.acked_at, row.delivered_at) == (DeliveryState.acked, at(30), at(30), at(30))
    assert status_of(store, WS, third, "bob").state == DeliveryState.queued
    assert store.mailbox.unread_count(WS, "bob") == 1
    assert ids(store.mailbox.newest(WS, "bob", False, 100)) == [third]
    assert ids(store.mailbox.claim(WS, "bob", None, 100, at(31))) == [third]


def test_ack_keeps_the_time_a_message_was_first_read_and_acked(store):
    agents(store, WS, "alice", "bob")
    message_id = send(store, WS, "alice", ["bob"]).id
    store.mailbox.claim(WS, "bob", None, 10, at(10))
    assert store.mailbox.ack(WS, "bob", [message_id], at(20)) == []
    assert store.mailbox.ack(WS, "bob", [message_id], at(30)) == []
    row = status_of(store, WS, message_id, "bob")
    assert (row.state, row.read_at, row.acked_at) == (DeliveryState.acked, at(10), at(20))


def test_ack_with_one_unknown_id_writes_nothing_and_returns_the_missing_ids(store):
    agents(store, WS, "alice", "bob", "carol")
    first = send(store, WS, "alice", ["bob"]).id
    second = send(store, WS, "alice", ["bob"]).id
    carols = send(store, WS, "alice", ["carol"]).id  # exists, but not in bob's mailbox
    unknown = new_id()

    assert store.mailbox.ack(WS, "bob", [first, unknown, second, carols], at(30)) == [unknown, carols]

    assert ids(store.mailbox.newest(WS, "bob", False, 100)) == [first, second]
    assert store.mailbox.unread_count(WS, "bob") == 2
    for message_id in (first, second):
        row = status_of(store, WS, message_id, "bob")
        assert (row.state, row.read_at, row.acked_at) == (DeliveryState.queued, None, None)
    assert status_of(store, WS, carols, "carol").acked_at is None


# --- counters -----------------------------------------------------------------------------------------


def test_unread_count_and_last_seq_follow_the_mailbox(store):
    agents(store, WS, "alice", "bob")
    assert (store.mailbox.unread_count(WS, "bob"), store.mailbox.last_seq(WS, "bob")) == (0, 0)
    sent = [send(store, WS, "alice", ["bob"]).id for _ in range(3)]
    assert (store.mailbox.unread_count(WS, "bob"), store.mailbox.last_seq(WS, "bob")) == (3, 3)
    store.mailbox.claim(WS, "bob", None, 2, at(1))
    assert (store.mailbox.unread_count(WS, "bob"), store.mailbox.last_seq(WS, "bob")) == (1, 3)
    store.mailbox.ack(WS, "bob", [sent[2]], at(2))
    assert (store.mailbox.unread_count(WS, "bob"), store.mailbox.last_seq(WS, "bob")) == (0, 3)
    assert store.mailbox.last_seq(WS, "alice") == 0


def test_change_counter_moves_after_a_commit_made_through_another_connection(store, reopen):
    agents(store, WS, "alice", "bob")
    other = reopen()
    before = store.change_counter()
    other.directory.ensure_agent(WS, "carol", T0)
    assert wait_until(lambda: store.change_counter() != before)

    before = store.change_counter()
    send(other, WS, "alice", ["bob"])
    assert wait_until(lambda: store.change_counter() != before)
    assert store.mailbox.unread_count(WS, "bob") == 1  # and the commit is visible here


# --- hub credentials ------------------------------------------------------------------------------


def test_create_token_returns_what_it_stored_and_every_connection_finds_it_by_hash(store, reopen):
    made = {
        "admin": new_token("admin", workspace=None, label="root"),
        "user": new_token("user", label="alice's laptop"),
        "agent": new_token("agent", agent="bob"),
    }
    infos = {kind: store.tokens.create_token(token, at(i)) for i, (kind, token) in enumerate(made.items())}

    assert infos["admin"] == TokenInfo(id=made["admin"].id, kind="admin", workspace=None, label="root", created_at=T0)
    assert infos["user"] == TokenInfo(
        id=made["user"].id, kind="user", workspace=WS, label="alice's laptop", created_at=at(1)
    )
    assert infos["agent"] == TokenInfo(id=made["agent"].id, kind="agent", workspace=WS, agent="bob", created_at=at(2))
    other = reopen()
    for kind, token in made.items():
        assert store.tokens.token_by_hash(token.secret_hash) == infos[kind]
        assert other.tokens.token_by_hash(token.secret_hash) == infos[kind]


def test_token_by_hash_of_an_unknown_secret_is_none(store):
    store.tokens.create_token(new_token(), T0)
    assert store.tokens.token_by_hash(secret_hash("never issued")) is None


def test_token_by_hash_finds_a_revoked_token_with_its_revocation_time(store):
    token = new_token()
    store.tokens.create_token(token, T0)
    store.tokens.revoke_token(token.id, at(10))
    found = store.tokens.token_by_hash(token.secret_hash)
    assert (found.id, found.revoked_at) == (token.id, at(10))


def test_list_tokens_filters_by_workspace_and_lists_oldest_first(store):
    late = store.tokens.create_token(new_token(), at(30))
    admin = store.tokens.create_token(new_token("admin", workspace=None), at(20))
    early = store.tokens.create_token(new_token("agent", agent="bob"), at(10))
    other = store.tokens.create_token(new_token(workspace=OTHER_WS), at(15))
    revoked = store.tokens.create_token(new_token(), at(40))
    revoked = store.tokens.revoke_token(revoked.id, at(50))

    assert store.tokens.list_tokens(WS) == [early, late, revoked]  # revoked tokens are listed too
    assert store.tokens.list_tokens(OTHER_WS) == [other]
    assert store.tokens.list_tokens() == [early, other, admin, late, revoked]  # None: every token, admin included
    assert store.tokens.list_tokens("nowhere") == []


def test_revoke_token_keeps_the_first_revocation_time_and_touches_no_other_token(store):
    token, bystander = new_token(), new_token()
    created = store.tokens.create_token(token, T0)
    kept = store.tokens.create_token(bystander, T0)

    revoked = store.tokens.revoke_token(token.id, at(10))
    assert revoked == created.model_copy(update={"revoked_at": at(10)})
    assert store.tokens.revoke_token(token.id, at(20)) == revoked  # again: idempotent, the first time stays
    assert store.tokens.token_by_hash(token.secret_hash).revoked_at == at(10)
    assert store.tokens.token_by_hash(bystander.secret_hash) == kept


def test_revoke_token_of_an_unknown_id_is_none_and_changes_nothing(store):
    created = store.tokens.create_token(new_token(), T0)
    assert store.tokens.revoke_token(new_id(), at(10)) is None
    assert store.tokens.list_tokens() == [created]


def test_a_secret_hash_already_stored_is_refused_in_any_workspace_and_nothing_is_stored(store):
    first = new_token()
    created = store.tokens.create_token(first, T0)
    for workspace in (WS, OTHER_WS):
        again = NewToken(id=new_id(), kind="user", secret_hash=first.secret_hash, workspace=workspace)
        with pytest.raises(TokenTaken) as taken:
            store.tokens.create_token(again, at(1))
        assert taken.value.field == "secret_hash"
    with pytest.raises(TokenTaken) as taken:
        store.tokens.create_token(NewToken(id=new_id(), kind="admin", secret_hash=first.secret_hash), at(1))
    assert taken.value.field == "secret_hash"
    assert store.tokens.list_tokens() == [created]
    assert store.tokens.token_by_hash(first.secret_hash) == created


def test_a_token_id_already_stored_is_refused(store):
    first = new_token()
    created = store.tokens.create_token(first, T0)
    with pytest.raises(TokenTaken) as taken:
        store.tokens.create_token(new_token(workspace=OTHER_WS, id=first.id), at(1))
    assert taken.value.field == "id"
    assert store.tokens.list_tokens() == [created]


def test_tokens_of_one_workspace_are_not_listed_in_another(store):
    mine = store.tokens.create_token(new_token(workspace=WS), T0)
    theirs = store.tokens.create_token(new_token(workspace=OTHER_WS), T0)
    admin = store.tokens.create_token(new_token("admin", workspace=None), T0)
    assert store.tokens.list_tokens(WS) == [mine]
    assert store.tokens.list_tokens(OTHER_WS) == [theirs]
    assert admin not in store.tokens.list_tokens(WS) + store.tokens.list_tokens(OTHER_WS)
    assert {t.id for t in store.tokens.list_tokens()} == {mine.id, theirs.id, admin.id}


# --- workspace isolation --------------------------------------------------------------------------------


def test_nothing_of_one_workspace_is_visible_from_another(store):
    agents(store, WS, "alice", "bob")
    store.directory.ensure_workspace(OTHER_WS, T0)
    store.directory.create_channel(WS, "team", "alice", None, T0)
    store.directory.join_channel(WS, "team", "bob", T0)
    session = store.sessions.register_session(session_spec("bob", workspace=WS), T0)
    sent = send(store, WS, "alice", ["bob"], key="k", request_hash="h")

    assert store.directory.list_agents(OTHER_WS) == []
    assert store.directory.get_agent(OTHER_WS, "bob") is None
    assert store.directory.update_agent(OTHER_WS, "bob", "x", None) is False
    assert store.directory.delete_agent(OTHER_WS, "bob") is None
    assert store.directory.get_channel(OTHER_WS, "team", "alice") is None
    assert store.directory.list_channels(OTHER_WS, "alice") == []
    assert store.directory.channel_members(OTHER_WS, "team") == []
    assert store.sessions.list_sessions(OTHER_WS, include_ended=True) == []
    assert store.sessions.get_session(OTHER_WS, session.id) is None
    assert store.sessions.touch_session(OTHER_WS, session.id, at(9)) is None
    assert store.sessions.end_session(OTHER_WS, session.id, at(9)) is None
    assert store.sessions.list_machines(OTHER_WS) == []
    assert store.sent.get_message(OTHER_WS, sent.id) is None
    assert store.sent.send_result(OTHER_WS, sent.id) is None
    assert store.sent.delivery_statuses(OTHER_WS, sent.id) == []
    assert store.sent.find_idempotent(OTHER_WS, "alice", "k") is None
    assert store.mailbox.peek(OTHER_WS, "bob", 0, 100) == []
    assert store.mailbox.claim(OTHER_WS, "bob", 0, 100, at(9)) == []
    assert store.mailbox.newest(OTHER_WS, "bob", True, 100) == []
    assert store.mailbox.unread_count(OTHER_WS, "bob") == 0
    assert store.mailbox.last_seq(OTHER_WS, "bob") == 0
    assert store.mailbox.ack(OTHER_WS, "bob", [sent.id], at(9)) == [sent.id]

    # and A is untouched by all of that
    assert store.sessions.get_session(WS, session.id) == session
    assert store.directory.get_channel(WS, "team").members == 2
    assert store.mailbox.unread_count(WS, "bob") == 1
    assert status_of(store, WS, sent.id, "bob").acked_at is None


def test_the_same_agent_name_in_two_workspaces_has_two_mailboxes(store):
    agents(store, WS, "alice", "bob")
    agents(store, OTHER_WS, "alice", "bob")
    in_a = [send(store, WS, "alice", ["bob"]).id for _ in range(3)]
    in_b = send(store, OTHER_WS, "alice", ["bob"])
    assert in_b.seqs == {"bob": 1}
    assert ids(store.mailbox.claim(WS, "bob", None, 100, at(1))) == in_a
    assert ids(store.mailbox.claim(OTHER_WS, "bob", None, 100, at(1))) == [in_b.id]
    assert store.directory.delete_agent(OTHER_WS, "bob") == 0  # deleted; its mail was read
    assert store.directory.get_agent(WS, "bob") is not None
    assert ids(store.mailbox.peek(WS, "bob", 0, 100)) == in_a


# --- concurrency ------------------------------------------------------------------------------------------


def test_two_connections_claiming_concurrently_claim_every_delivery_exactly_once(store, reopen):
    agents(store, WS, "alice", "bob")
    sent = [send(store, WS, "alice", ["bob"], text=f"m{i}").id for i in range(300)]
    readers = [reopen(), reopen()]
    start = threading.Barrier(len(readers))
    claimed: list[list[str]] = [[] for _ in readers]
    errors: list[BaseException] = []

    def drain(index: int) -> None:
        try:
            start.wait(timeout=30)
            while batch := readers[index].mailbox.claim(WS, "bob", None, 7, at(1)):
                claimed[index].extend(ids(batch))
        except BaseException as error:  # reported below, on the test's thread
            errors.append(error)

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(readers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []

    everything = [message_id for batch in claimed for message_id in batch]
    assert len(everything) == len(set(everything)), "a delivery was claimed twice"
    assert sorted(everything) == sorted(sent), "a delivery was never claimed"
    for batch in claimed:  # each reader saw its share in mailbox order
        assert batch == sorted(batch, key=sent.index)
    assert store.mailbox.unread_count(WS, "bob") == 0
