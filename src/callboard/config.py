"""Where Callboard keeps things, and the user's settings.

``CALLBOARD_HOME`` is the one folder holding the config file and the embedded database
(default: the platform's user data folder). ``--db`` or ``CALLBOARD_DB`` point elsewhere.
``CALLBOARD_HUB``, ``CALLBOARD_TOKEN`` and ``CALLBOARD_CA_CERT`` override the login's,
and ``CALLBOARD_WORKSPACE`` the config's workspace: the settings resolve both (the hub's
replicas, the workspace a process acts in) for the hooks and the clients alike.
The config also keeps this machine's logins (the one in use, the others it made) and, per store
an ``up`` served, the hub's admin token apart from them, used only by commands given
``--as-admin`` (see logins.py).
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import platformdirs

from callboard.address import is_utf8, parse_name
from callboard.errors import BadRequest
from callboard.identity import DEFAULT_WORKSPACE
from callboard.logins import InUse, Login, admin_of, kept_logins, logged_out, login_in_use, switched_to

CONFIG_FILE = "config.toml"
DATABASE_FILE = "callboard.db"
WORKSPACE_ENV = "CALLBOARD_WORKSPACE"


def home_dir(env: Mapping[str, str]) -> Path:
    if raw := env.get("CALLBOARD_HOME", "").strip():
        return Path(raw).expanduser()
    return platformdirs.user_data_path("callboard", appauthor=False)


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    db_path: Path
    agent: str | None = None  # the user default agent name
    workspace: str | None = None
    hub: str | None = None  # a hub URL: commands go there instead of the embedded database
    token: str | None = None
    ca_cert: str | None = None  # a CA file the hub's certificate is verified with (else the system's)
    admin_hub: str | None = None  # the hub the admin token below belongs to
    admin_token: str | None = None  # kept by the first 'up', for --as-admin alone: never the login
    db_given: bool = False  # --db or CALLBOARD_DB named a database: use it, not a hub
    db_url: str | None = None  # --db or CALLBOARD_DB named a PostgreSQL database (db_path is then unused)
    login_note: str | None = None  # why the config's login is not the one in use (its 'up' is gone)

    @classmethod
    def load(
        cls, env: Mapping[str, str] = os.environ, db: str | os.PathLike[str] | None = None, *, fall_back: bool = True
    ) -> Settings:
        """The settings a command runs with. ``fall_back``: when this machine's 'up' that served
        the login's hub is gone, use the login it replaced or the store it served (logins.py);
        'up' itself serves the store it is given, whatever a gone hub served."""
        home = home_dir(env)
        document = read_config_document(home / CONFIG_FILE)
        config = {k: v for k, v in document.items() if isinstance(v, str)}
        named_db = str(db or env.get("CALLBOARD_DB", "").strip())
        env_hub = env.get("CALLBOARD_HUB", "").strip()
        # The login in use, unless this machine's 'up' that served its hub is gone (logins.py).
        in_use = login_in_use(document) if fall_back and not env_hub else InUse(Login.from_fields(document))
        login = in_use.login
        store = named_db or in_use.store or ""
        url = store if store.startswith(("postgresql://", "postgres://")) else None
        admin = admin_of(document, login)
        return cls(
            home=home,
            db_path=Path(store if store and not url else home / DATABASE_FILE).expanduser(),
            db_url=url,
            agent=config.get("agent"),
            workspace=config.get("workspace"),
            hub=env_hub or (login.hub if login else None),
            token=env.get("CALLBOARD_TOKEN", "").strip() or (login.token if login else None),
            ca_cert=env.get("CALLBOARD_CA_CERT", "").strip() or (login.ca_cert if login else None),
            admin_hub=admin[0] if admin else None,
            admin_token=admin[1] if admin else None,
            db_given=bool(named_db),
            login_note=in_use.note,
        )

    @property
    def uses_hub(self) -> bool:
        return self.hub is not None and not self.db_given

    @property
    def hub_urls(self) -> list[str]:
        """The hub's URL, or its replicas' in order (``hub`` lists them comma-separated); [] without a hub."""
        return hub_urls(self.hub) if self.hub is not None else []

    def named_workspace(self, env: Mapping[str, str] = os.environ) -> str | None:
        """The workspace a process with ``env`` names: ``CALLBOARD_WORKSPACE``, else the config's;
        None when neither does (a hub then takes the token's own)."""
        return workspace_override(env) or self.workspace

    def workspace_in(self, env: Mapping[str, str] = os.environ) -> str:
        """The workspace a process with ``env`` acts in: the one it names, else the default (a
        BadName when the name is not valid)."""
        return parse_name(self.named_workspace(env) or DEFAULT_WORKSPACE, "workspace name")

    @property
    def store_location(self) -> str | Path:
        """The database commands open: a PostgreSQL URL, or the embedded file."""
        return self.db_url or self.db_path


def workspace_override(env: Mapping[str, str]) -> str | None:
    """The workspace ``CALLBOARD_WORKSPACE`` names for this one process, if any (the admin
    token takes only this: without it, it acts across workspaces)."""
    return env.get(WORKSPACE_ENV, "").strip() or None


def hub_urls(text: str) -> list[str]:
    """The hub's URL, or its replicas' URLs given comma-separated, in order."""
    urls = [part.strip().rstrip("/") for part in text.split(",") if part.strip()]
    if not urls:
        raise BadRequest("no hub URL given: use https://host:8465 (several replicas: comma-separated).")
    return urls


def read_config(path: Path) -> dict[str, str]:
    """The config file's string settings; an absent file is an empty config."""
    return {k: v for k, v in read_config_document(path).items() if isinstance(v, str)}


def read_config_document(path: Path) -> dict[str, Any]:
    """The whole config file: its settings, and the logins' tables (logins.py); an absent file
    is an empty config."""
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as error:
        raise BadRequest(f"the config file {path} cannot be read ({error}); fix or remove it.") from None
    except RecursionError:  # arrays nested past Python's stack: no settings file of ours looks so
        raise BadRequest(f"the config file {path} cannot be read (it nests too deep); fix or remove it.") from None


def write_config(home: Path, updates: Mapping[str, str | None]) -> Path:
    """Set (or, with None, remove) settings of the config file, keeping everything else."""
    document = read_config_document(home / CONFIG_FILE)
    for key, value in updates.items():
        if value is None:
            document.pop(key, None)
        else:
            document[key] = value
    return write_config_document(home, document)


def write_config_document(home: Path, document: Mapping[str, Any]) -> Path:
    """Write the config file whole: its string settings, then its tables of tables of strings
    (the logins', logins.py); None values are left out.

    The file holds tokens: it is written 0600, whole, and renamed into place."""
    path = home / CONFIG_FILE
    lines = [f"{key} = {toml_string(value)}\n" for key, value in sorted(document.items()) if isinstance(value, str)]
    for name, table in sorted(document.items()):
        if not isinstance(table, Mapping):
            continue
        for entry, fields in sorted(table.items()):
            if not isinstance(fields, Mapping):
                continue
            kept = {k: v for k, v in fields.items() if isinstance(v, str) and not (name == "logins" and k == "hub")}
            lines.append(f"\n[{name}.{toml_string(entry)}]\n")
            lines.extend(f"{key} = {toml_string(value)}\n" for key, value in sorted(kept.items()))
    private_folder(home)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write("".join(lines))
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    return path


def private_folder(home: Path, *parts: str) -> Path:
    """``home / parts``, each level from ``home`` down readable by this user alone (0700): made
    so, or tightened when found wider (made by an older version, or under the usual umask).
    Every folder under ``CALLBOARD_HOME`` holding session or credential state is made here."""
    home.parent.mkdir(parents=True, exist_ok=True)
    levels = [home]
    for part in parts:
        levels.append(levels[-1] / part)
    for folder in levels:
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            _tighten(folder)
    return levels[-1]


def _tighten(folder: Path) -> None:
    try:
        mode = stat.S_IMODE(folder.stat().st_mode)
        if mode & 0o077:
            folder.chmod(mode & 0o700)
    except OSError:  # another user's folder, or gone: what uses it next says what is wrong
        pass


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string that reads back as the same text.

    (json.dumps does not do: it writes a character past U+FFFF as a surrogate pair of escapes,
    which TOML refuses, and leaves DEL unescaped.)"""
    if not is_utf8(value):
        raise BadRequest("a setting holds undecodable bytes (lone surrogates); give it as text.")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", escaped) + '"'


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def save_login(home: Path, hub: str, token: str, ca_cert: str | None = None) -> Path:
    """Log in to ``hub`` by hand; ``ca_cert`` (or, without it, the system's CAs) verifies its
    certificate. The login in use before is kept (``callboard login`` its hub goes back)."""
    document = read_config_document(home / CONFIG_FILE)
    before = Login.from_fields(document)
    login = Login(hub.rstrip("/"), token, ca_cert)
    if before is not None and before.hub == login.hub:  # a hub this machine's 'up' serves stays marked so
        login = replace(login, pid=before.pid, started=before.started, store=before.store, replaced=before.replaced)
    return write_config_document(home, switched_to(document, login))


def kept_login(home: Path, hub: str) -> Login | None:
    """The login this machine keeps for ``hub`` (made by an earlier 'login' or 'up'), if any."""
    document = read_config_document(home / CONFIG_FILE)
    in_use = Login.from_fields(document)
    if in_use is not None and in_use.hub == hub.rstrip("/"):
        return in_use
    return kept_logins(document).get(hub.rstrip("/"))


def clear_login(home: Path, in_use: str | None = None) -> Path:
    """Forget the login in use (its token too), and the one commands fell back to (``in_use``,
    when its 'up' is gone): commands use the embedded store."""
    return write_config_document(home, logged_out(read_config_document(home / CONFIG_FILE), in_use))
