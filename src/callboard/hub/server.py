"""``callboard up``: run the hub on uvicorn, with its first admin token and a graceful stop.

On SIGTERM or Ctrl-C the hub stops accepting connections, ends streams and long-polls, lets
requests in flight finish (their sends commit), then closes the store: nothing acknowledged
is lost, and nothing half-written is left.

Beyond loopback the hub serves HTTPS (``--tls-cert``/``--tls-key``): tokens and mail never cross
a network in clear unless ``--insecure`` says so.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
import sys
from typing import Any

import uvicorn

from callboard import __version__
from callboard.a2a.remote.card import card_source
from callboard.address import is_loopback
from callboard.config import Settings
from callboard.hub.app import A2AOptions, create_app
from callboard.hub.http_limits import LimitedHttpProtocol
from callboard.hub.machine_login import machine_login
from callboard.hub.options import HubOptions, hub_url
from callboard.hub.replicas import Notifying, new_replica_id, replica_wakeups
from callboard.hub.store_claim import StoreClaim
from callboard.identity import machine_name
from callboard.logins import store_key
from callboard.service.credentials import Credentials
from callboard.service.door import Service
from callboard.service.events import MailboxEvents
from callboard.store.opening import open_store

log = logging.getLogger("callboard.hub")

YOUNG_COLLECTION_OBJECTS = 50_000  # the collector's first threshold in the hub (Python's: 700)


class _HubServer(uvicorn.Server):
    """uvicorn's server, telling the hub when a stop begins and logging where it listens."""

    def __init__(self, config: uvicorn.Config, on_stop: Any, on_listening: Any) -> None:
        super().__init__(config)
        self._on_stop = on_stop
        self._on_listening = on_listening

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        if self.started:
            self._on_stop()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started and self.servers:
            self._on_listening(self.servers[0].sockets[0].getsockname())


def serve(
    settings: Settings, options: HubOptions, listener: socket.socket, claim: StoreClaim | None, out: Any = sys.stdout
) -> None:
    """Serve the store ``settings`` names (the embedded file, or PostgreSQL as one of several
    replicas) on ``listener`` until stopped; ``options`` were checked (``options.check_options``)
    and the embedded store ``claim``-ed before the hub's code loaded."""
    workspace = settings.workspace_in(os.environ)  # this machine's, logged in on the first start
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs a line per MCP session at INFO
    logging.getLogger("a2a").setLevel(logging.ERROR)  # the A2A SDK warns of every client's bad request
    if options.tls_cert is None and not is_loopback(options.host):
        log.warning(
            "serving plain HTTP on %s (--insecure): tokens and mail cross the network unencrypted", options.host
        )
    tls = options.tls_cert is not None
    url = hub_url(listener.getsockname(), tls)
    replica = new_replica_id()
    # SQLite group-commits on the server's loop once it runs; PostgreSQL commits on its own threads.
    store = open_store(settings.store_location, replica=replica)
    # The hub's own sends wake its readers in process, so it does not poll for other processes'
    # commits (its own would wake every stream on every send). With PostgreSQL the other
    # replicas' commits arrive as notifications and wake just the mailboxes they name.
    events = MailboxEvents()
    if isinstance(store, Notifying):
        store.add_listener(replica_wakeups(events, replica, store))
    service = _service(store, events, options)
    login = machine_login(Credentials(store), settings, workspace, url, store_key(settings.store_location))
    app = create_app(
        service,
        rate_limit=options.rate_limit,
        running=store.committing_on_loop,
        host=options.host,
        replica=replica,
        max_streams=options.max_streams,
        a2a=A2AOptions(options.public_url, options.a2a_compat_0_3),
        pump_remotes=True,  # mail to outside A2A agents: every replica pumps, leases share it
    )
    hub = app.state.hub

    def listening(address: tuple[str, int]) -> None:
        url = hub_url(address, tls)
        kind = {"postgresql": "PostgreSQL", "sqlite": "SQLite"}[hub.store_kind]
        # Saved before the hub says it listens: whoever waits for that line finds the login in place.
        saved = login.save(settings.home, url)
        print(
            f"callboard {__version__} hub listening on {url} · store {kind} {store.location} · replica {replica}",
            file=out,
            flush=True,
        )
        login.announce(saved, out)

    config = _uvicorn_config(app, options)
    server = _HubServer(config, on_stop=lambda: _call_in_loop(hub.stop), on_listening=listening)
    _settle_collector()
    # uvicorn re-raises the stop signal once it has shut down gracefully; with these handlers
    # in place that re-raise returns here, so the store is closed and the hub exits with 0.
    previous = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run(sockets=[listener])
    finally:
        store.close()  # after every request finished: the last commits are on disk
        if claim is not None:
            claim.release()
        if server.started:
            login.farewell(settings.home, out)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _service(store: Any, events: MailboxEvents, options: HubOptions) -> Service:
    return Service(
        store,
        machine=machine_name(os.environ),
        events=events,
        liveness_seconds=options.liveness_seconds,
        allow_private_webhooks=options.allow_private_webhooks,
        card_source=card_source,
        # A hub on loopback serves one machine: outside agents may live there too.
        allow_private_remotes=options.allow_private_remotes or is_loopback(options.host),
    )


def _uvicorn_config(app: Any, options: HubOptions) -> uvicorn.Config:
    """How uvicorn serves the hub: httptools with our limits, no access log, no proxy trusted."""
    return uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=30,
        loop="auto",
        http=LimitedHttpProtocol,  # httptools, with limits on a request's head and on slow clients
        proxy_headers=False,  # the hub trusts no forwarding proxy; it names clients by token
        server_header=False,
        ssl_certfile=options.tls_cert,
        ssl_keyfile=options.tls_key,
    )


def _settle_collector() -> None:
    """Set the garbage collector for a long-lived server, once start-up is done."""
    # Everything made so far lives as long as the hub: move it out of the collector's sight. A
    # full collection otherwise walks it all, pausing every request for tens of milliseconds.
    gc.collect()
    gc.freeze()
    # A post to a thousand members holds some ten thousand objects alive for a few milliseconds.
    # At Python's default (a young collection per 700 objects) many of them were promoted and a
    # full collection of every stream's objects followed every few posts: 20-60 ms pauses.
    # Collections still happen, after 50,000 net new objects (see gc.set_threshold).
    gc.set_threshold(YOUNG_COLLECTION_OBJECTS, *gc.get_threshold()[1:])


def _stopped(sig: int, frame: Any) -> None:
    """The stop signal, re-raised by uvicorn after its graceful shutdown: nothing left to do."""


def _call_in_loop(fn: Any) -> None:
    """Run ``fn`` on the event loop (uvicorn calls handle_exit from a signal handler)."""
    try:
        asyncio.get_running_loop().call_soon_threadsafe(fn)
    except RuntimeError:
        fn()
