"""Leases through the hub with HubClient: granted with conflicts, checked, renewed and released;
a forced release needs a person's token and a reason, and lands in the audit trail."""

from __future__ import annotations

import pytest

from callboard.errors import BadRequest, Forbidden
from callboard.requests import LeaseCheck, LeaseRelease, LeaseRenewal, LeaseRequest
from tests.hub.conftest import Tenant

SCOPE = "github.com/acme/app"


def test_leases_over_the_hub(tenant: Tenant) -> None:
    ana = tenant.hub.client(tenant.agent_token("ana")["token"])
    ben = tenant.hub.client(tenant.agent_token("ben")["token"])
    person = tenant.client("carol")
    try:
        held = ana.take_lease(LeaseRequest(scope=SCOPE, patterns=["src/"], reason="refactor")).lease
        taken = ben.take_lease(LeaseRequest(scope=SCOPE, patterns=["src/retry.py"], ttl=60))
        assert [c.id for c in taken.conflicts] == [held.id]
        assert [x.id for x in ben.check_leases(LeaseCheck(scope=SCOPE, paths=["src/a.py"]))] == [held.id]
        assert ben.check_leases(LeaseCheck(scope="elsewhere", paths=["src/a.py"])) == []
        [renewed] = ben.renew_leases(LeaseRenewal(ttl=600))
        assert renewed.id == taken.lease.id and renewed.expires_at > taken.lease.expires_at
        assert sorted(x.agent for x in ben.list_leases(every=True)) == ["ana", "ben"]
        with pytest.raises(Forbidden):  # an agent's token does not release another's lease
            ben.release_leases(LeaseRelease(ids=[held.id], force=True, reason="stuck"))
        with pytest.raises(BadRequest):
            person.release_leases(LeaseRelease(ids=[held.id], force=True))  # no reason
        assert person.release_leases(LeaseRelease(ids=[held.id], force=True, reason="ana is gone")) == [held.id]
        assert ben.check_leases(LeaseCheck(scope=SCOPE, paths=["src/a.py"])) == []
        trail = person.audit_trail()
        assert [(e.action, e.target) for e in trail if e.action == "lease.release"] == [("lease.release", "ana")]
        assert ben.release_leases(LeaseRelease()) == [taken.lease.id]
    finally:
        for client in (ana, ben, person):
            client.close()
