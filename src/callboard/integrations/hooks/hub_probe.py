"""A quick look through the hub: is there any mail a hook could surface?

The same question as ``probe`` asks the embedded store, asked of the hub this machine is logged
in to, with the standard library only: the hub client (httpx and the models) costs more to load
than an empty-mailbox hook may take. ``POST /v1/surface?peek=true&limit=1`` marks nothing. Like
``probe`` it answers "nothing" only when the hub says so; any error answers "maybe", and the hook
then takes the ordinary path, which reports the error properly.
"""

from __future__ import annotations

import http.client
import json
import ssl
from urllib.parse import urlencode, urlsplit

from callboard.headers import AGENT_HEADER, WORKSPACE_HEADER

TIMEOUT_SECONDS = 2.0


def may_have_mail(
    hub: str,
    token: str | None,
    agent: str | None,
    workspace: str | None,
    *,
    urgent_only: bool = False,
    ca_cert: str | None = None,
) -> bool:
    """False only when the hub answers that ``agent`` has no mail neither read nor surfaced
    (only urgent mail with ``urgent_only``). ``ca_cert`` verifies an https hub's certificate
    (else the system's CAs do); a certificate that fails is an error like any other: "maybe"."""
    url = urlsplit(hub)
    query = urlencode({"via": "hook", "peek": "true", "limit": 1, "urgent": str(urgent_only).lower()})
    headers = {"Content-Length": "0", **({"Authorization": f"Bearer {token}"} if token else {})}
    if agent:
        headers[AGENT_HEADER] = agent
    if workspace:
        headers[WORKSPACE_HEADER] = workspace
    try:
        if url.scheme == "https":
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                url.hostname or "",
                url.port,
                timeout=TIMEOUT_SECONDS,
                context=ssl.create_default_context(cafile=ca_cert),
            )
        else:
            connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=TIMEOUT_SECONDS)
        try:
            connection.request("POST", f"{url.path.rstrip('/')}/v1/surface?{query}", headers=headers)
            answer = connection.getresponse()
            body = answer.read()
        finally:
            connection.close()
        return answer.status != 200 or bool(json.loads(body)["items"])
    except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError):
        return True
