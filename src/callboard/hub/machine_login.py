"""How ``callboard up`` logs its own machine in: with a user token of the machine's workspace,
never with the admin token, and never at the cost of a login the user already had.

Everything on the hub's machine that uses its login — hooks, ``callboard mcp``, an agent's
Bash tool — then acts in that workspace only. The admin token is printed once and kept apart,
per store (``[stores]`` in the config, see logins.py), where only commands given ``--as-admin``
read it. A login to another hub stays kept, and is back in use once this hub stops; with none,
the commands use the store this hub served directly again (``logins.login_in_use``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from callboard.config import CONFIG_FILE, Settings, read_config_document, write_config_document
from callboard.errors import Unauthorized
from callboard.logins import (
    Login,
    kept_logins,
    served_by_this_process,
    store_records,
    switched_to,
    with_store_record,
)
from callboard.service.credentials import Credentials


@dataclass(frozen=True)
class MachineLogin:
    """What ``up`` does to this machine's logins: the login the commands use while it runs
    (``login``; None: another running 'up' of the same store keeps its own), the store's admin
    token (``admin_is_new``: made by this start, shown once), and what to tell the user."""

    login: Login | None
    store: str
    admin_token: str | None
    admin_is_new: bool
    workspace: str
    replaced: str | None = None  # the hub whose login was in use: kept, and back when this one stops
    shared_with: str | None = None  # another running 'up' of this store whose login stays in use

    def save(self, home: Path, url: str) -> Path:
        """Write it, now that the hub listens at ``url``."""
        path = home / CONFIG_FILE
        document = read_config_document(path)
        document = with_store_record(document, self.store, url, self.admin_token)
        if self.login is not None:
            # Older logins of this store (an earlier start at another port) are this one now.
            document["logins"] = {
                hub: old.fields() for hub, old in kept_logins(document).items() if old.store != self.store
            }
            login = served_by_this_process(replace(self.login, hub=url), self.store, self.replaced)
            document = switched_to(document, login)
        return write_config_document(home, document)

    def announce(self, path: Path, out: Any) -> None:
        def say(line: str) -> None:
            print(line, file=out, flush=True)

        if self.login is None:
            say(f"this machine's commands keep using the hub at {self.shared_with}, which serves the same store")
        elif self.replaced is not None:
            say(
                f"this machine's commands now use this hub (a user token of workspace {self.workspace}, saved "
                f"0600 in {path}); your login to {self.replaced} is kept: they use it again when this hub "
                f"stops (or at once: callboard login {self.replaced})"
            )
        else:
            say(
                f"this machine's commands now use this hub (a user token of workspace {self.workspace}, saved "
                f"0600 in {path}) and its store directly again when it stops; 'callboard token create' "
                "makes tokens for other machines"
            )
        if self.admin_is_new:
            note = f"saved 0600 in {path}, used only by commands given --as-admin"
            say(f"admin token (shown once; {note}): {self.admin_token}")

    def farewell(self, home: Path, out: Any) -> None:
        """Say, as the hub stops, what this machine's commands use from now on."""
        if self.login is None:
            return
        if self.replaced is not None:
            print(f"this machine's commands use {self.replaced} again", file=out, flush=True)
        else:
            print(f"this machine's commands use the store directly again ({self.store})", file=out, flush=True)


def machine_login(credentials: Credentials, settings: Settings, workspace: str, url: str, store: str) -> MachineLogin:
    """The login ``up`` gives this machine for the hub at ``url`` serving ``store``.

    - A login to this very address that works on this store stays as it is.
    - Another running 'up' of this machine serving the same store (a replica) keeps its login.
    - Otherwise the commands switch to this hub, with the user token this store issued this
      machine before (if it still works) or a new one; the login in use is kept, and comes back
      when this hub stops."""
    document = read_config_document(settings.home / CONFIG_FILE)
    admin_token, admin_is_new = store_records(document).get(store, {}).get("admin_token"), False
    if not credentials.has_admin():
        admin_token = credentials.issue(None, "admin", label="created by the first 'up'").token
        admin_is_new = True
    plan = MachineLogin(None, store, admin_token, admin_is_new, workspace)
    before = Login.from_fields(document)
    if before is not None and before.hub == url and before.token and _works(credentials, before.token):
        return replace(plan, login=before, replaced=before.replaced)  # a login to this very hub stays
    if before is not None and before.store == store and before.served_by_running_up():
        return replace(plan, shared_with=before.hub)
    reusable = [
        old.token
        for old in [before, *kept_logins(document).values()]
        if old is not None and old.store == store and old.token and _is_user_token_of(credentials, old.token, workspace)
    ]
    token = reusable[0] if reusable else _user_token(credentials, workspace)
    if before is None:
        replaced = None
    elif before.store == store or before.hub == url or (before.served_here and not before.served_by_running_up()):
        replaced = before.replaced  # this store's or address's earlier login, or a gone hub's: what it replaced
    else:
        replaced = before.hub
    return replace(plan, login=Login(url, token), replaced=replaced)


def _user_token(credentials: Credentials, workspace: str) -> str:
    return credentials.issue(None, "user", workspace, label="this machine's CLI, logged in by 'up'").token


def _works(credentials: Credentials, secret: str) -> bool:
    try:
        credentials.authenticate(secret)
    except Unauthorized:  # another hub's token, or one revoked
        return False
    return True


def _is_user_token_of(credentials: Credentials, secret: str, workspace: str) -> bool:
    try:
        credential = credentials.authenticate(secret)
    except Unauthorized:
        return False
    return credential.kind == "user" and credential.workspace == workspace
