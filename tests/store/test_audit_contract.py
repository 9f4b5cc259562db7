"""The Store contract for deliberate actions: deleting an agent that holds unread mail, invite-only
channels, the audit trail that records them, and who is a party to a thread. Every test runs once
per implementation (``conftest.IMPLEMENTATIONS``) and uses Store methods only."""

from __future__ import annotations

from callboard.model import AuditEntry, new_id
from callboard.store.base import Store
from tests.support.store_data import OTHER_WS, T0, WS, agents, at, ids, send


def record(action: str, target: str, seconds: float = 0, workspace: str = WS, **detail: object) -> AuditEntry:
    return AuditEntry(
        id=new_id(),
        workspace=workspace,
        at=at(seconds),
        actor="alice",
        token_kind="user",
        token_id="tok-1",
        action=action,
        target=target,
        detail=detail,
    )


def with_detail(entry: AuditEntry, **more: object) -> AuditEntry:
    return entry.model_copy(update={"detail": {**entry.detail, **more}})


# --- deleting an agent ------------------------------------------------------------------------------


def test_delete_agent_keeping_unread_mail_deletes_nothing_and_records_nothing_while_mail_is_unread(store: Store):
    agents(store, WS, "alice", "bob")
    store.directory.create_channel(WS, "team", "alice", None, T0)
    store.directory.join_channel(WS, "team", "bob", T0)
    first, second = send(store, WS, "alice", ["bob"]), send(store, WS, "alice", ["bob"])

    assert store.directory.delete_agent(WS, "bob", record("agent.delete", "bob"), keep_unread=True) == 2

    assert store.directory.get_agent(WS, "bob") is not None
    assert ids(store.mailbox.peek(WS, "bob", None, 100)) == [first.id, second.id]
    assert store.directory.channel_member_names(WS, "team") == ["alice", "bob"]
    assert store.audit.audit_trail(WS, 10) == []


def test_delete_agent_keeping_unread_mail_deletes_an_agent_whose_mail_is_all_read(store: Store):
    agents(store, WS, "alice", "bob")
    send(store, WS, "alice", ["bob"])
    store.mailbox.claim(WS, "bob", None, 100, at(1))
    entry = record("agent.delete", "bob", 2, forced=False)

    assert store.directory.delete_agent(WS, "bob", entry, keep_unread=True) == 0

    assert store.directory.get_agent(WS, "bob") is None
    assert store.audit.audit_trail(WS, 10) == [with_detail(entry, unread=0)]


def test_a_forced_delete_drops_the_unread_mail_and_records_how_much_in_the_same_step(store: Store, reopen):
    agents(store, WS, "alice", "bob")
    for _ in range(3):
        send(store, WS, "alice", ["bob"])
    store.mailbox.claim(WS, "bob", None, 1, at(1))
    entry = record("agent.delete", "bob", 2, forced=True)

    assert store.directory.delete_agent(WS, "bob", entry) == 2

    assert store.directory.get_agent(WS, "bob") is None and store.mailbox.unread_count(WS, "bob") == 0
    (stored,) = reopen().audit.audit_trail(WS, 10)  # durable: another connection reads it
    assert stored == with_detail(entry, unread=2)
    assert (stored.actor, stored.token_kind, stored.token_id, stored.at) == ("alice", "user", "tok-1", at(2))


def test_deleting_an_unknown_agent_records_nothing(store: Store):
    store.directory.ensure_workspace(WS, T0)
    assert store.directory.delete_agent(WS, "ghost", record("agent.delete", "ghost")) is None
    assert store.audit.audit_trail(WS, 10) == []


# --- invite-only channels and recorded membership changes --------------------------------------------


def test_a_channel_is_open_unless_created_invite_only_and_every_view_says_which(store: Store):
    agents(store, WS, "alice")
    entry = record("channel.create", "#secret", invite_only=True)
    assert store.directory.create_channel(WS, "secret", "alice", None, T0, invite_only=True, record=entry) is True
    store.directory.create_channel(WS, "lobby", "alice", None, T0)

    assert [(c.name, c.invite_only) for c in store.directory.list_channels(WS, "alice")] == [
        ("lobby", False),
        ("secret", True),
    ]
    assert store.directory.get_channel(WS, "secret").invite_only is True
    assert store.directory.channel_member_names(WS, "secret") == ["alice"]
    assert store.audit.audit_trail(WS, 10) == [entry]


def test_creating_a_channel_that_exists_records_nothing_and_keeps_its_kind(store: Store):
    agents(store, WS, "alice", "bob")
    store.directory.create_channel(WS, "team", "alice", None, T0)
    assert (
        store.directory.create_channel(WS, "team", "bob", None, at(1), True, record("channel.create", "#team")) is False
    )
    assert store.directory.get_channel(WS, "team").invite_only is False
    assert store.audit.audit_trail(WS, 10) == []


def test_a_membership_change_is_recorded_only_when_it_changed_something(store: Store):
    agents(store, WS, "alice", "bob")
    store.directory.create_channel(WS, "team", "alice", None, T0, invite_only=True)
    added = record("channel.invite", "bob", 1, channel="team")
    removed = record("channel.remove", "bob", 3, channel="team")

    assert store.directory.join_channel(WS, "team", "bob", at(1), added) is True
    assert store.directory.join_channel(WS, "team", "bob", at(2), record("channel.invite", "bob", 2)) is False
    assert store.directory.leave_channel(WS, "team", "bob", removed) is True
    assert store.directory.leave_channel(WS, "team", "bob", record("channel.remove", "bob", 4)) is False

    assert store.audit.audit_trail(WS, 10) == [removed, added]
    assert store.directory.channel_member_names(WS, "team") == ["alice"]


# --- reading the trail ----------------------------------------------------------------------------------


def test_the_audit_trail_is_newest_first_limited_and_of_one_workspace(store: Store):
    agents(store, WS, "alice", "a1", "a2", "a3")
    agents(store, OTHER_WS, "a1")
    entries = [record("agent.delete", f"a{i}", seconds=i) for i in (1, 2, 3)]
    for entry in entries:
        store.directory.delete_agent(WS, entry.target, entry)
    elsewhere = record("agent.delete", "a1", 9, workspace=OTHER_WS)
    store.directory.delete_agent(OTHER_WS, "a1", elsewhere)

    newest_first = [with_detail(e, unread=0) for e in reversed(entries)]
    assert store.audit.audit_trail(WS, 10) == newest_first
    assert store.audit.audit_trail(WS, 2) == newest_first[:2]
    assert store.audit.audit_trail(OTHER_WS, 10) == [with_detail(elsewhere, unread=0)]
    assert store.audit.audit_trail("nowhere", 10) == []


# --- parties to a thread --------------------------------------------------------------------------------


def test_thread_party_says_whether_an_agent_sent_or_received_a_message_of_the_thread(store: Store):
    agents(store, WS, "alice", "bob", "carol", "dave")
    opening = send(store, WS, "alice", ["bob"])
    thread = opening.message.thread_id
    send(store, WS, "bob", ["carol"], thread_id=thread)  # carol was brought into the thread later

    assert store.sent.thread_party(WS, thread, "alice") is True  # sent its first message
    assert store.sent.thread_party(WS, thread, "bob") is True  # received, and sent
    assert store.sent.thread_party(WS, thread, "carol") is True  # received a later one
    assert store.sent.thread_party(WS, thread, "dave") is False
    assert store.sent.thread_party(WS, new_id(), "alice") is None  # no such thread
    assert store.sent.thread_party(OTHER_WS, thread, "alice") is None  # nor in another workspace


def test_every_recipient_of_a_large_send_is_a_party_to_its_thread(store: Store):
    names = [f"member-{i}" for i in range(40)]  # past a hub's "write the deliveries out later" size
    agents(store, WS, "alice", "outsider", *names)
    sent = send(store, WS, "alice", names)
    assert all(store.sent.thread_party(WS, sent.message.thread_id, name) is True for name in names)
    assert store.sent.thread_party(WS, sent.message.thread_id, "outsider") is False
