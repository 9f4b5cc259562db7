"""The hub's doors as one table: which ASGI app answers which paths.

The REST API (``/v1``, its streams, ``/health``, ``/openapi.json``) answers whatever no other
mount takes: routes without path parameters by exact method and path (the hot path: a send
costs one dict lookup), Starlette's routing for the rest (path parameters, 404, 405), which also
runs the lifespan. A new door (the dashboard) is one row in the table ``create_app`` builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from callboard.hub.asgi import Receive, Scope, Send

ASGIApp = Any  # an ASGI application: await app(scope, receive, send)


@dataclass(frozen=True)
class Mount:
    """A door: ``app`` answers the requests for ``path`` (with ``under``: every path that begins
    with it)."""

    path: str
    app: ASGIApp
    under: bool = False


class Mounts:
    """The ASGI application dispatching each HTTP request to its mount, everything else (other
    paths, the lifespan) to ``rest``."""

    def __init__(self, mounts: Sequence[Mount], rest: ASGIApp) -> None:
        self._exact = {m.path: m.app for m in mounts if not m.under}
        self._under = [(m.path, m.app) for m in mounts if m.under]
        self._rest = rest

    def app_for(self, path: str) -> ASGIApp:
        app = self._exact.get(path)
        if app is not None:
            return app
        for prefix, mounted in self._under:
            if path.startswith(prefix):
                return mounted
        return self._rest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self.app_for(scope["path"]) if scope["type"] == "http" else self._rest
        await app(scope, receive, send)
