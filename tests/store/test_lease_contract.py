"""The Store contract for leases (every store: see conftest): active while not released, not
expired and its session not ended; renewed by its agent only; released once, a forced release
with its record in the audit trail."""

from __future__ import annotations

from callboard.leases import Lease
from callboard.model import AuditEntry
from callboard.store.base import Store
from tests.support.store_data import OTHER_WS, WS, agents, at, session_spec


def lease(lease_id: str, agent: str = "bob", session_id: str | None = None, workspace: str = WS, **fields) -> Lease:
    base = {"scope": "github.com/acme/app", "patterns": ["src/"], "created_at": at(0), "expires_at": at(100)}
    return Lease(id=lease_id, workspace=workspace, agent=agent, session_id=session_id, **{**base, **fields})


def test_a_lease_is_active_until_released_expired_or_its_session_ends(store: Store) -> None:
    agents(store, WS, "bob", "ana")
    session = store.sessions.register_session(session_spec("bob"), at(0))
    assert session is not None
    for one in (
        lease("l1"),
        lease("l2", session_id=session.id),
        lease("l3", expires_at=at(10)),
        lease("l4", scope="elsewhere"),
        lease("l5", workspace=OTHER_WS),
    ):
        store.leases.add_lease(one)
    assert [x.id for x in store.leases.active_leases(WS, at(5))] == ["l1", "l2", "l3", "l4"]
    assert [x.id for x in store.leases.active_leases(WS, at(5), "github.com/acme/app")] == ["l1", "l2", "l3"]
    assert [x.id for x in store.leases.active_leases(WS, at(10))] == ["l1", "l2", "l4"]  # l3 expired
    store.sessions.end_session(WS, session.id, at(11))
    assert [x.id for x in store.leases.active_leases(WS, at(12))] == ["l1", "l4"]  # ended with its session
    assert store.leases.active_leases(WS, at(12))[0] == lease("l1")


def test_renewing_and_releasing(store: Store) -> None:
    agents(store, WS, "bob", "ana")
    store.leases.add_lease(lease("l1"))
    store.leases.add_lease(lease("l2", agent="ana"))
    renewed = store.leases.renew_leases(WS, "bob", ["l1", "l2"], at(500), at(50))
    assert [(x.id, x.expires_at) for x in renewed] == [("l1", at(500))]  # ana's is not bob's to renew
    assert [x.id for x in store.leases.active_leases(WS, at(200))] == ["l1"]  # ana's expired at 100
    record = AuditEntry(
        id="a1", workspace=WS, at=at(60), actor="carol", action="lease.release", target="bob",
        detail={"lease": "l1", "reason": "stuck"},
    )  # fmt: skip
    assert store.leases.release_leases(WS, ["l1"], at(60), record) == ["l1"]
    assert store.leases.release_leases(WS, ["l1"], at(61), record) == []  # once
    assert [x.id for x in store.leases.active_leases(WS, at(62))] == ["l2"]
    trail = store.audit.audit_trail(WS, 10)
    assert [(e.action, e.target, e.detail["reason"]) for e in trail] == [("lease.release", "bob", "stuck")]
    assert store.leases.renew_leases(WS, "bob", [], at(900), at(63)) == []
