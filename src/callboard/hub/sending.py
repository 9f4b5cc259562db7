"""POST /v1/messages, the hub's busiest endpoint.

The send is decided on the event loop from what the service keeps in memory (the directory,
live sessions, the guards' recent traffic, the caller's unread count: ``service/from_memory``);
when it needs the store (a reply, a channel, a stale fact), on a worker thread, the caller's
unread count taken in that same worker call. The commit is then awaited on the loop, so no
thread waits for it and concurrent sends share a group commit: an ordinary send costs the loop
no thread hop.
"""

from __future__ import annotations

from callboard.hub.context import settled
from callboard.hub.endpoint import Answer, Call
from callboard.requests import SendRequest


async def send_message(call: Call) -> Answer:
    service = call.hub.service
    caller = (await call.identify())[1]
    body = await call.body(SendRequest)
    pending = await call.run_as(service.sending.submit, body, memory_first=True)
    result = await settled(pending)
    if any(r.agent == caller.agent for r in result.recipients):
        await call.recount()  # a send to itself: its count was taken before the commit
    return Answer(result.as_json().encode(), 200 if result.duplicate else 201)  # encoded when it was stored
