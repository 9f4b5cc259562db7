"""A process of its own acting as one agent: it opens its own store on the test's database and
sends (``SEND_SCRIPT``) or drains a mailbox when told to go (``DRAIN_SCRIPT``)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.service_setup import MACHINE

# A process that opens its own store on the database file and acts as one agent.
_CHILD_PRELUDE = f"""
import json, sys
from callboard.client.local import LocalClient
from callboard.model import Caller
from callboard.requests import ReadQuery, SendRequest
from callboard.service.door import Service
from callboard.store.opening import open_store
db, workspace, agent = sys.argv[1:4]
client = LocalClient(Service(open_store(db), machine={MACHINE!r}), Caller(workspace=workspace, agent=agent))
client.service.directory.enter(client.caller)  # the agent exists before the test goes on (looking creates nothing)
"""

SEND_SCRIPT = (
    _CHILD_PRELUDE
    + """
to, text = sys.argv[4:6]
print(client.send(SendRequest(to=to, text=text)).message_id, flush=True)
"""
)

DRAIN_SCRIPT = (
    _CHILD_PRELUDE
    + """
print("ready", flush=True)
sys.stdin.readline()  # go
got = []
while items := client.read(ReadQuery(limit=5)).items:
    got.extend(item.message.id for item in items)
print(json.dumps(got), flush=True)
"""
)


def python(script: str, *args: object, **popen: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], text=True, **popen)  # type: ignore[call-overload]
