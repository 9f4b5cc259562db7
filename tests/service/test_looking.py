"""Looking writes nothing, on both stores: the service's operations that only look, or that
fail, leave every table as it was; those that act as an agent create it in their own step. A
person who names no agent (``Caller.agent`` None) may look, and is told no_identity for the
rest. Every table is read before and after each call (tests/support/store_rows.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest

from callboard.errors import CallboardError, NoIdentity
from callboard.model import Caller
from callboard.requests import InboxQuery, ReadQuery, SendRequest, SessionRequest, SurfaceQuery, TaskRequest
from callboard.runners import RunnerReport
from callboard.service.door import Service
from callboard.store.opening import open_store
from tests.support.store_rows import changed, snapshot

WS = "acme"
UNKNOWN_ID = "0190aaaa-0000-7000-8000-000000000000"
ALICE = Caller(workspace=WS, agent="alice")
BOB = Caller(workspace=WS, agent="bob")
NOBODY = Caller(workspace=WS, agent="zed")  # an agent no call of the setup names
PERSON = Caller(workspace=WS, agent=None)  # the person at the machine, naming no agent


@pytest.fixture
def service(db: str) -> Iterator[Service]:
    store = open_store(db)
    try:
        yield Service(store, machine="testhost")
    finally:
        store.close()


@pytest.fixture
def ids(service: Service) -> dict[str, str]:
    """alice, bob, #team (alice's), a message from alice to bob, a task bob was asked."""
    sent = service.sending.send(ALICE, SendRequest(to="bob", text="the build is green"))
    service.directory.create_channel(ALICE, "team")
    task = service.tasking.open_task(ALICE, TaskRequest(to="bob", parts=[{"text": "review it"}]))
    return {"message": sent.message_id, "task": task.task.id}


def _runner(agent: str) -> RunnerReport:
    now = datetime.now(UTC)
    return RunnerReport(
        agent=agent, machine="testhost", pid=100, cli="claude", state="idle", started_at=now, updated_at=now
    )


def _looks(service: Service, ids: dict[str, str]) -> dict[str, Callable[[Caller], object]]:
    """Operations that only look, each of which succeeds for any caller of the workspace."""
    return {
        "who": service.who,
        "reach": lambda c: service.presence.reach(c, "bob"),
        "list_agents": service.list_agents,
        "describe_agent": lambda c: service.directory.describe_agent(c, "bob"),
        "list_remotes": service.remotes.list,
        "list_channels": service.directory.list_channels,
        "channel_members": lambda c: service.directory.channel_members(c, "team"),
        "list_runners": service.runners.listed,
        "audit_trail": service.directory.audit_trail,
        "in_session": lambda c: service.directory.in_session(c, lineage=[(os.getpid(), None)]),
    }


def _own(service: Service, ids: dict[str, str]) -> dict[str, Callable[[Caller], object]]:
    """Operations on the caller's own mailbox, tasks and sessions, that look or fail."""
    return {
        "whoami": lambda c: service.whoami(c, "given"),
        "read": lambda c: service.mailbox.read(c),
        "read-peek": lambda c: service.mailbox.read(c, ReadQuery(peek=True)),
        "read-wait": lambda c: service.mailbox.read(c, ReadQuery(wait=0.05)),
        "inbox": lambda c: service.mailbox.inbox(c, InboxQuery(include_acked=True)),
        "unread_count": service.mailbox.unread_count,
        "held_mail": service.mailbox.held_mail,
        "mailbox_position": service.mailbox.mailbox_position,
        "deliveries_since": lambda c: service.mailbox.deliveries_since(c, 0),
        "surface": lambda c: service.surface(c, SurfaceQuery(via="hook")),
        "list_tasks": lambda c: service.tasking.list_tasks(c),
        "status-not-its-own": lambda c: service.message_status(c, ids["message"]),
        "status-unknown": lambda c: service.message_status(c, UNKNOWN_ID),
        "send-bad-address": lambda c: service.sending.send(c, SendRequest(to="bad name!", text="hi")),
        "send-empty": lambda c: service.sending.send(c, SendRequest(to="bob", text="")),
        "send-unknown-reply": lambda c: service.sending.send(c, SendRequest(to="bob", text="hi", reply_to=UNKNOWN_ID)),
        "send-require-live": lambda c: service.sending.send(
            c, SendRequest(to="bob,newcomer", text="hi", require_live=True)
        ),
        "post-not-member": lambda c: service.sending.send(c, SendRequest(to="#team", text="hi")),
        "send-unknown-channel": lambda c: service.sending.send(c, SendRequest(to="#nowhere", text="hi")),
        "ack-unknown": lambda c: service.mailbox.ack(c, [UNKNOWN_ID]),
        "mark_read-unknown": lambda c: service.mailbox.mark_read(c, [UNKNOWN_ID]),
        "confirm_surfaced": lambda c: service.confirm_surfaced(c, [UNKNOWN_ID], "transcript"),
        "record_receipt": lambda c: service.handover.record_receipt(c, [UNKNOWN_ID], "expired"),
        "join-unknown": lambda c: service.directory.join_channel(c, "nowhere"),
        "create-taken": lambda c: service.directory.create_channel(c, "team"),
        "leave-not-member": lambda c: service.directory.leave_channel(c, "team"),
        "get_task-not-its-own": lambda c: service.tasking.get_task(c, ids["task"]),
        "update_task-not-its-own": lambda c: service.tasking.update_task(c, ids["task"], state="working"),
        "cancel_task-not-its-own": lambda c: service.tasking.cancel_task(c, ids["task"]),
        "heartbeat-unknown": lambda c: service.directory.heartbeat(c, UNKNOWN_ID),
        "end_session-unknown": lambda c: service.end_session(c, UNKNOWN_ID),
        "report-another-runner": lambda c: service.runners.report(c, _runner("bob")),
        "delete-unknown": lambda c: service.directory.delete_agent(c, "nobody"),
        "card-of-nobody": lambda c: service.directory.update_agent(c, "nobody", description="made up"),
        "own-card-refused": lambda c: service.directory.update_agent(c, c.agent or "zed", skills=["x" * 101]),
        "task-to-bad-address": lambda c: service.tasking.open_task(
            c, TaskRequest(to="bad name!", parts=[{"text": "x"}])
        ),
    }


def _writes(db: str, call: Callable[[], object]) -> dict[str, str]:
    before = snapshot(db)
    try:
        call()
    except CallboardError:
        pass  # failing is fine here: writing is not
    return changed(before, snapshot(db))


def test_an_agent_nobody_made_that_looks_or_fails_writes_nothing(service, db, ids):
    operations = {**_looks(service, ids), **_own(service, ids)}
    wrote = {name: found for name, op in operations.items() if (found := _writes(db, lambda op=op: op(NOBODY)))}
    assert wrote == {}
    assert "zed" not in [a.name for a in service.list_agents(ALICE)]


def test_a_look_in_a_workspace_nobody_used_creates_no_workspace(service, db, ids):
    elsewhere = Caller(workspace="elsewhere", agent="zed")
    operations = {**_looks(service, ids), **_own(service, ids)}
    del operations["create-taken"]  # #team is free there: creating it is an act
    wrote = {name: found for name, op in operations.items() if (found := _writes(db, lambda op=op: op(elsewhere)))}
    assert wrote == {}
    assert [w.name for w in service.directory.list_workspaces()] == [WS]


def test_a_person_naming_no_agent_looks_and_writes_nothing(service, db, ids):
    for name, op in _looks(service, ids).items():
        assert _writes(db, lambda op=op: op(PERSON)) == {}, name
    assert [a.name for a in service.who(PERSON).agents] == ["alice", "bob"]
    assert [c.name for c in service.directory.list_channels(PERSON)] == ["team"]
    # A message's status as its sender sees it: the credential may act as any agent anyway.
    status = service.message_status(PERSON, ids["message"])
    assert [(r.agent, r.state) for r in status.recipients] == [("bob", "queued")]


def test_a_person_naming_no_agent_is_told_no_identity_for_the_rest_and_nothing_is_written(service, db, ids):
    for name, op in _own(service, ids).items():
        if name.startswith("status-"):
            continue  # a person looks at any message's status (above)
        before = snapshot(db)
        with pytest.raises(NoIdentity, match="CALLBOARD_AGENT"):
            op(PERSON)
        assert changed(before, snapshot(db)) == {}, name
    for name, act in _acts(service).items():
        before = snapshot(db)
        with pytest.raises(NoIdentity):
            act(PERSON)
        assert changed(before, snapshot(db)) == {}, name


def _acts(service: Service) -> dict[str, Callable[[Caller], object]]:
    """Operations that act as the caller's agent and keep something of it."""
    return {
        "send": lambda c: service.sending.send(c, SendRequest(to="bob", text="hi")),
        "register_session": lambda c: service.register_session(c, SessionRequest(pid=os.getpid(), runtime="script")),
        "create_channel": lambda c: service.directory.create_channel(c, f"of-{c.agent}"),
        "join_channel": lambda c: service.directory.join_channel(c, "team"),
        "open_task": lambda c: service.tasking.open_task(c, TaskRequest(to="bob", parts=[{"text": "look at it"}])),
        "report_runner": lambda c: service.runners.report(c, _runner(c.agent or "nobody")),
        "own_card": lambda c: service.directory.update_agent(
            c, c.agent or "nobody", description="reviews", skills=["review"]
        ),
    }


@pytest.mark.parametrize(
    "act", ["send", "register_session", "create_channel", "join_channel", "open_task", "report_runner", "own_card"]
)
def test_an_agent_exists_once_it_acts_in_a_workspace_made_with_it(service, ids, act):
    newcomer = Caller(workspace="fresh", agent="newcomer")
    if act in ("send", "join_channel", "open_task"):  # bob and #team of the new workspace
        service.directory.create_agent(ALICE.model_copy(update={"workspace": "fresh"}), "bob")
        service.directory.create_channel(Caller(workspace="fresh", agent="bob"), "team")
    _acts(service)[act](newcomer)
    assert "newcomer" in [a.name for a in service.list_agents(PERSON.model_copy(update={"workspace": "fresh"}))]
    assert "fresh" in [w.name for w in service.directory.list_workspaces()]


def test_a_persons_send_creates_its_new_recipient(service, ids):
    service.sending.send(ALICE, SendRequest(to="newcomer", text="welcome"))
    assert "newcomer" in [a.name for a in service.list_agents(PERSON)]
