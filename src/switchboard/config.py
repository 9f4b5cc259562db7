"""Where Switchboard keeps things, and the user's settings.

``SWITCHBOARD_HOME`` is the one folder holding the config file and the embedded database
(default: the platform's user data folder). ``--db`` or ``SWITCHBOARD_DB`` point elsewhere.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from switchboard.errors import BadRequest

CONFIG_FILE = "config.toml"
DATABASE_FILE = "switchboard.db"


def home_dir(env: Mapping[str, str]) -> Path:
    if raw := env.get("SWITCHBOARD_HOME", "").strip():
        return Path(raw).expanduser()
    return platformdirs.user_data_path("switchboard", appauthor=False)


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    db_path: Path
    agent: str | None = None  # the user default agent name
    workspace: str | None = None

    @classmethod
    def load(cls, env: Mapping[str, str] = os.environ, db: str | os.PathLike[str] | None = None) -> Settings:
        home = home_dir(env)
        config = read_config(home / CONFIG_FILE)
        db_path = Path(db or env.get("SWITCHBOARD_DB", "").strip() or home / DATABASE_FILE).expanduser()
        return cls(home=home, db_path=db_path, agent=config.get("agent"), workspace=config.get("workspace"))


def read_config(path: Path) -> dict[str, str]:
    """The config file's string settings; an absent file is an empty config."""
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, OSError) as error:
        raise BadRequest(f"the config file {path} cannot be read ({error}); fix or remove it.") from None
    return {k: v for k, v in data.items() if isinstance(v, str)}
