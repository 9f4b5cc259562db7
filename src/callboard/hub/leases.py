"""The REST endpoints of /v1/leases: agents' advisory claims on repository paths. The rules are
``leases.py``'s and the service's; the client names the repository (``scope``)."""

from __future__ import annotations

from typing import Any

from callboard.hub.endpoint import Answer, Call
from callboard.leases import Lease
from callboard.requests import LeaseCheck, LeaseRelease, LeaseRenewal, LeaseRequest


async def take_lease(call: Call) -> Answer:
    await call.identify()
    body = await call.body(LeaseRequest)
    return Answer(await call.run_as(call.hub.service.leases.take, body), 201)


async def list_leases(call: Call) -> list[Lease]:
    await call.identify()
    scope = call.query("scope") or None
    return await call.run_as(call.hub.service.leases.list_leases, every=call.query_bool("all"), scope=scope)


async def renew_leases(call: Call) -> list[Lease]:
    await call.identify()
    body = await call.body(LeaseRenewal)
    return await call.run_as(call.hub.service.leases.renew, body)


async def release_leases(call: Call) -> dict[str, Any]:
    await call.identify()
    body = await call.body(LeaseRelease)
    return {"released": await call.run_as(call.hub.service.leases.release, body)}


async def check_leases(call: Call) -> list[Lease]:
    await call.identify()
    body = await call.body(LeaseCheck)
    return await call.run_as(call.hub.service.leases.check, body)
