"""How ``callboard up`` logs its own machine in: with a user token of the machine's workspace,
never with the admin token.

Everything on the hub's machine that uses its login — hooks, ``callboard mcp``, an agent's
Bash tool — then acts in that workspace only. The admin token is printed once and kept apart in
the config (``admin_token``, ``admin_hub``), where only commands given ``--as-admin`` read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callboard.config import CONFIG_FILE, Settings, read_config, save_machine_login
from callboard.credentials import Credentials
from callboard.errors import Unauthorized
from callboard.model import IssuedToken


def hub_url(address: tuple[Any, ...], tls: bool) -> str:
    """The URL of a listening socket's ``getsockname()``."""
    host, port = address[0], address[1]
    return f"{'https' if tls else 'http'}://{'[' + host + ']' if ':' in host else host}:{port}"


@dataclass(frozen=True)
class MachineLogin:
    """The hub machine's login: a user token of its workspace, and the admin token kept apart."""

    user: IssuedToken
    admin_token: str
    admin_is_new: bool  # made by this start: shown once, now

    def save(self, home: Path, url: str) -> Path:
        return save_machine_login(home, url, self.user.token, self.admin_token)

    def announce(self, path: Path, out: Any) -> None:
        print(
            f"this machine's CLI is logged in with a user token of workspace {self.user.workspace} "
            f"(saved 0600 in {path}); 'callboard token create' makes tokens for other machines",
            file=out,
            flush=True,
        )
        if self.admin_is_new:
            note = f"saved 0600 in {path} as admin_token, used only by commands given --as-admin"
            print(f"admin token (shown once; {note}): {self.admin_token}", file=out, flush=True)
        else:
            print(
                "this machine was logged in with the admin token; it is kept as admin_token, "
                "used only by commands given --as-admin",
                file=out,
                flush=True,
            )


def machine_login(credentials: Credentials, settings: Settings, workspace: str, url: str) -> MachineLogin | None:
    """On the first start: the new admin token, and a new user token of ``workspace`` to log this
    machine in with. On a later one, a machine an older first start logged in with the admin token
    itself (at this very ``url``) gets a user token now. Otherwise None: the login stays."""
    if not credentials.has_admin():
        admin = credentials.issue(None, "admin", label="created by the first 'up'")
        return MachineLogin(_user_token(credentials, workspace), admin.token, admin_is_new=True)
    config = read_config(settings.home / CONFIG_FILE)
    if not _left_by_an_older_up(config, url) or not _is_admin_token(credentials, config["token"]):
        return None
    return MachineLogin(_user_token(credentials, workspace), config["token"], admin_is_new=False)


def _user_token(credentials: Credentials, workspace: str) -> IssuedToken:
    return credentials.issue(None, "user", workspace, label="this machine's CLI, logged in by 'up'")


def _left_by_an_older_up(config: dict[str, str], url: str) -> bool:
    """The login an older first ``up`` wrote: this hub's address, a token, no CA file and no admin
    token kept apart. A login someone made by hand (another address, a CA file) stays theirs."""
    return config.get("hub") == url and bool(config.get("token")) and not {"ca_cert", "admin_token"} & set(config)


def _is_admin_token(credentials: Credentials, secret: str) -> bool:
    try:
        return credentials.authenticate(secret).kind == "admin"
    except Unauthorized:  # another hub's token, or one revoked
        return False
