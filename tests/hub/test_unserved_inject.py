"""Through a hub (a user token acting as each recipient): mail the sender injects into a Claude
Code session Callboard does not serve is handed to a session of the agent registered for that
process, and comes back when the process dies. The machine of tests/support/claude_code_machine.py."""

# ruff: noqa: F811 (the machine fixture is imported, and named as the tests' argument)
from __future__ import annotations

from contextlib import closing

from callboard.integrations.claude_code.inject import inject_sent
from callboard.requests import SendRequest
from tests.hub.conftest import Tenant
from tests.support.claude_code_machine import Machine, machine  # noqa: F401 (the fixture)
from tests.support.waiting import wait_until


def alice_state(tenant: Tenant, message_id: str) -> tuple[str, str | None, list[str]]:
    with closing(tenant.client("bob")) as bob:
        (row,) = [r for r in bob.message_status(message_id).recipients if r.agent == "alice"]
    return str(row.state), row.handed_to, [e.event for e in row.history]


def test_injected_mail_is_handed_to_the_registered_session_and_returns_when_it_dies(machine: Machine, tenant: Tenant):
    session = machine.session(machine.project("alice"), environ={"CALLBOARD_WORKSPACE": tenant.workspace})
    env = {**machine.env, "CALLBOARD_WORKSPACE": tenant.workspace}
    with closing(tenant.client("bob")) as bob:
        sent = bob.send(SendRequest(to="alice", text="through the hub"))
        report = inject_sent(bob, sent, env)
    assert [p.pid for p in report.injected] == [session.pid], report
    wait_until(session.frames, what="a frame")
    state, handed_to, _ = alice_state(tenant, sent.message_id)
    assert state == "handed" and handed_to is not None and handed_to.endswith(f"#{session.pid}")

    session.process.kill()
    session.process.wait()

    state, handed_to, events = alice_state(tenant, sent.message_id)
    assert (state, handed_to, events[-2:]) == ("queued", None, ["handed", "returned"])
    with closing(tenant.client("alice")) as alice:
        assert [i.message.id for i in alice.read().items] == [sent.message_id]
        assert alice.read().items == []
