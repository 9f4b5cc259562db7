"""This machine's logins: the hub its commands use, the other logins it keeps, and what each
``callboard up`` made for the store it served.

The config file (0600) holds them beside the settings::

    hub = "http://127.0.0.1:8465"         # the login in use: its hub, token and CA file,
    token = "cb_…"
    pid = "4242"                           # and, when a 'callboard up' of this machine serves
    started = "123456"                     #   that hub, the process (a recycled pid is not it),
    store = "/…/callboard.db"              #   the store it serves,
    replaced = "https://team:8465"         #   and the login in use before it started

    [logins."https://team:8465"]           # every login this machine made, kept until 'logout'
    token = "cb_…"                         # (the same fields as the login in use)

    [stores."/…/callboard.db"]             # per store an 'up' served: the hub's admin token,
    hub = "http://127.0.0.1:8465"          #   for commands given --as-admin alone, and the
    admin_token = "cb_…"                   #   address it was last served at

Two rules keep a user's credentials whole. No command overwrites a login it did not make:
``login`` and ``up`` keep the login in use among the kept ones before they switch, and each
store's admin token is that store's. And a login to a hub that a ``callboard up`` of this
machine served, which is gone, is not used: the commands fall back to the login that ``up``
replaced, or to the store it served (the embedded store it made a hub of), so they never fail
``hub_unavailable`` for a hub nobody runs any more.

Pure: the standard library and the other core modules.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from callboard.procs import process_alive, process_start_time

LOGIN_FIELDS = ("hub", "token", "ca_cert", "pid", "started", "store", "replaced")
REPLACED_DEPTH = 8  # how many 'up's stacked on one another a fallback follows back


@dataclass(frozen=True, slots=True)
class Login:
    """A login: a hub's address (or its replicas', comma-separated) and the token to use there;
    ``pid``/``started``/``store`` when a ``callboard up`` of this machine serves it."""

    hub: str
    token: str | None = None
    ca_cert: str | None = None
    pid: int | None = None
    started: int | None = None
    store: str | None = None
    replaced: str | None = None  # the hub whose login was in use when this 'up' started

    @property
    def served_here(self) -> bool:
        """Whether a ``callboard up`` of this machine serves (or served) this hub."""
        return self.pid is not None

    def served_by_running_up(self, alive: Callable[[int, int | None], bool] = process_alive) -> bool:
        return self.pid is not None and alive(self.pid, self.started)

    def fields(self) -> dict[str, str | None]:
        """As the config file keeps it (every value a string; None: not kept)."""
        values = {name: getattr(self, name) for name in LOGIN_FIELDS}
        return {name: None if value is None else str(value) for name, value in values.items()}

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any]) -> Login | None:
        hub = fields.get("hub")
        if not isinstance(hub, str) or not hub.strip():
            return None

        def text(name: str) -> str | None:
            value = fields.get(name)
            return value if isinstance(value, str) and value else None

        def number(name: str) -> int | None:
            value = text(name)
            return int(value) if value is not None and value.isascii() and value.isdigit() else None

        return cls(
            hub=hub.strip().rstrip("/"),
            token=text("token"),
            ca_cert=text("ca_cert"),
            pid=number("pid"),
            started=number("started"),
            store=text("store"),
            replaced=text("replaced"),
        )


@dataclass(frozen=True, slots=True)
class InUse:
    """What the commands use: a login, or (``login`` None) a store; ``note`` says why, when the
    login in the config file was passed over."""

    login: Login | None
    store: str | None = None  # a fallback's store (the one a gone 'up' served); None: the default
    note: str | None = None


def login_in_use(document: Mapping[str, Any], alive: Callable[[int, int | None], bool] = process_alive) -> InUse:
    """The login the commands use, by the config ``document``: the one in use, unless the
    ``callboard up`` that served its hub is gone; then the login it replaced (if that one's hub
    is not a gone 'up' too), else the store that 'up' served."""
    login = Login.from_fields(document)
    gone: list[Login] = []
    kept = kept_logins(document)
    while login is not None and login.served_here and not login.served_by_running_up(alive):
        gone.append(login)
        if len(gone) > REPLACED_DEPTH or login.replaced is None:
            login = None
        else:
            login = kept.get(login.replaced)
    if not gone:
        return InUse(login)
    first = gone[0]
    if login is not None:
        return InUse(
            login, note=f"the hub at {first.hub} ('callboard up' on this machine) has stopped: using {login.hub}"
        )
    store = gone[-1].store
    return InUse(None, store, f"the hub at {first.hub} ('callboard up' on this machine) has stopped: using its store")


def kept_logins(document: Mapping[str, Any]) -> dict[str, Login]:
    """The logins this machine keeps, by hub."""
    table = document.get("logins")
    if not isinstance(table, Mapping):
        return {}
    logins = {}
    for hub, fields in table.items():
        if isinstance(fields, Mapping) and (login := Login.from_fields({**fields, "hub": hub})) is not None:
            logins[login.hub] = login
    return logins


def store_records(document: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Per store an 'up' served: its ``hub`` (the address it was last served at) and ``admin_token``."""
    table = document.get("stores")
    if not isinstance(table, Mapping):
        return {}
    return {
        store: {k: v for k, v in fields.items() if isinstance(v, str)}
        for store, fields in table.items()
        if isinstance(fields, Mapping)
    }


def admin_of(document: Mapping[str, Any], login: Login | None) -> tuple[str, str] | None:
    """The hub and admin token for ``--as-admin``: those of the store the login's hub serves
    (its 'up' said which), or of the store last served at the login's address."""
    if login is None:
        return None
    records = store_records(document)
    record = records.get(login.store) if login.store else None
    if record is None:
        addresses = {part.strip().rstrip("/") for part in login.hub.split(",")}
        record = next((r for r in records.values() if r.get("hub") in addresses), None)
    if record is None or not record.get("admin_token"):
        return None
    return login.hub, record["admin_token"]


# --- changes: each returns the new document, keeping everything it does not name ------------


def switched_to(document: Mapping[str, Any], login: Login) -> dict[str, Any]:
    """``document`` with ``login`` in use: the login in use before it is kept (unless it is to
    the same hub), and ``login`` is kept too."""
    changed = dict(document)
    logins = {hub: old.fields() for hub, old in kept_logins(document).items()}
    before = Login.from_fields(document)
    if before is not None and before.hub != login.hub:
        logins[before.hub] = before.fields()
    logins[login.hub] = login.fields()
    changed["logins"] = logins
    changed.update(login.fields())
    return changed


def logged_out(document: Mapping[str, Any], in_use: str | None = None) -> dict[str, Any]:
    """``document`` with no login in use: it is forgotten (its token too), and so is the hub
    ``in_use`` the commands fell back to."""
    changed = {k: v for k, v in document.items() if k not in LOGIN_FIELDS}
    before = Login.from_fields(document)
    forgotten = {before.hub if before else None, in_use}
    logins = {hub: old.fields() for hub, old in kept_logins(document).items() if hub not in forgotten}
    changed["logins"] = logins
    return changed


def with_store_record(document: Mapping[str, Any], store: str, hub: str, admin_token: str | None) -> dict[str, Any]:
    """``document`` remembering that ``store`` is served at ``hub`` (and its admin token)."""
    changed = dict(document)
    records = store_records(document)
    record = dict(records.get(store, {}))
    record["hub"] = hub
    if admin_token is not None:
        record["admin_token"] = admin_token
    records[store] = record
    changed["stores"] = records
    return changed


def served_by_this_process(login: Login, store: str, replaced: str | None) -> Login:
    """``login`` marked as served by this process's ``callboard up`` of ``store``."""
    pid = os.getpid()
    return replace(login, pid=pid, started=process_start_time(pid), store=store, replaced=replaced)


def store_key(location: str | Path) -> str:
    """How the config names a store: the embedded file's whole path, or the PostgreSQL URL."""
    if isinstance(location, Path):
        return str(location.expanduser().resolve())
    return location
