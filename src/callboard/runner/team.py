"""A team of runners, described in ``team.toml``: which agents, run by which CLI, where, as whom.

::

    [team]
    name = "example"
    channels = ["team", "handoffs"]      # a role that names none joins these

    [roles.product]
    agent = "product"                    # default: the role's name
    cli = "claude"                       # claude, codex, copilot, cursor, gemini, generic:CMD
    folder = "product"                   # the CLI's working folder (relative: to team.toml)
    prompt = "product/PROMPT.md"         # the role prompt handed to `callboard run --prompt-file`
    channels = ["team", "handoffs"]      # made by `team up` if missing, and joined
    every = 900                          # optional: also tick after this many idle seconds
    turn_limit = 1200                    # optional: a turn longer than this is stopped

Parsing only: a mistake is a ``BadTeam`` naming the file, the role and what to write instead.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callboard.address import parse_channel_name, parse_name
from callboard.errors import CallboardError, Invalid, NotFound
from callboard.integrations.agent_clis import AGENT_CLIS

TEAM_FILE = "team.toml"
KNOWN_CLIS = tuple(cli.name for cli in AGENT_CLIS)  # the table of coding CLIs' rows
ROLE_KEYS = frozenset({"agent", "cli", "folder", "prompt", "channels", "every", "turn_limit"})


class BadTeam(Invalid):
    code = "bad_team"


class NoTeam(NotFound):
    code = "no_team"


@dataclass(frozen=True, slots=True)
class Role:
    """One role of the team: an agent run by a CLI in its folder with its prompt."""

    name: str
    agent: str
    cli: str
    folder: Path
    prompt: Path | None
    channels: tuple[str, ...]
    every: float | None = None
    turn_limit: float | None = None


@dataclass(frozen=True, slots=True)
class Team:
    path: Path  # its team.toml
    name: str
    channels: tuple[str, ...]
    roles: tuple[Role, ...]

    def role(self, name: str) -> Role:
        """The role named ``name`` (or whose agent it is); BadTeam naming the roles otherwise."""
        for role in self.roles:
            if name.strip().lower() in (role.name, role.agent):
                return role
        names = ", ".join(r.name for r in self.roles)
        raise BadTeam(f"{self.path} has no role {name!r}; its roles: {names}.")

    def chosen(self, name: str | None) -> tuple[Role, ...]:
        """All roles, or the one named."""
        return self.roles if name is None else (self.role(name),)


def team_path(given: Path | None) -> Path:
    """The team.toml meant: ``given`` (the file, or a folder holding one), else ./team.toml."""
    path = (given or Path.cwd()).expanduser()
    if path.is_dir():
        path = path / TEAM_FILE
    if not path.is_file():
        raise NoTeam(f"no team file at {path}: write one with `callboard team init`, or name it with --team.")
    return path.resolve()


def load_team(path: Path) -> Team:
    """The team described by the file at ``path``; BadTeam with a sentence for any mistake."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise BadTeam(f"{path} is not valid TOML: {error}.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BadTeam(f"{path} cannot be read: {error}.") from None
    head = _table(data.get("team", {}), path, "[team]")
    unknown = set(data) - {"team", "roles"} or set(head) - {"name", "channels"}
    if unknown:
        raise BadTeam(f"{path}: unknown entries {sorted(unknown)}; a team has [team] name, channels and [roles.NAME].")
    roles_table = _table(data.get("roles"), path, "[roles]")
    if not roles_table:
        raise BadTeam(f"{path} names no role: add at least one [roles.NAME] table.")
    channels = _channels(head.get("channels", []), path, "[team] channels")
    roles = tuple(
        _role(name, _table(body, path, f"[roles.{name}]"), path, channels) for name, body in roles_table.items()
    )
    _check_unique(path, roles)
    name = head.get("name", path.parent.name)
    if not isinstance(name, str) or not name.strip():
        raise BadTeam(f"{path}: [team] name must be text.")
    return Team(path=path, name=name.strip(), channels=channels, roles=roles)


def _role(name: str, body: dict[str, Any], path: Path, team_channels: tuple[str, ...]) -> Role:
    where = f"{path}: [roles.{name}]"
    unknown = set(body) - ROLE_KEYS
    if unknown:
        raise BadTeam(f"{where} has unknown keys {sorted(unknown)}; known: {', '.join(sorted(ROLE_KEYS))}.")
    role = _name(name, f"{where}: the role's name")
    agent = _name(_text(body.get("agent", name), where, "agent"), f"{where} agent")
    cli = _text(body.get("cli", "claude"), where, "cli").strip()
    if cli not in KNOWN_CLIS and not (cli.startswith("generic:") and cli[len("generic:") :].strip()):
        raise BadTeam(f"{where} cli {cli!r} is not one of {', '.join(KNOWN_CLIS)} or generic:COMMAND.")
    folder = path.parent / _text(body.get("folder", name), where, "folder")
    prompt = body.get("prompt")
    return Role(
        name=role,
        agent=agent,
        cli=cli,
        folder=folder,
        prompt=path.parent / _text(prompt, where, "prompt") if prompt is not None else None,
        channels=_channels(body["channels"], path, f"[roles.{name}] channels") if "channels" in body else team_channels,
        every=_seconds(body.get("every"), where, "every"),
        turn_limit=_seconds(body.get("turn_limit"), where, "turn_limit"),
    )


def _table(value: object, path: Path, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadTeam(f"{path}: {what} must be a table.")
    return value


def _text(value: object, where: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadTeam(f"{where} {key} must be non-empty text.")
    return value


def _name(value: str, what: str) -> str:
    try:
        return parse_name(value, what)
    except CallboardError as error:
        raise BadTeam(error.message) from None


def _channels(value: object, path: Path, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadTeam(f'{path}: {what} must be a list of channel names, like ["team", "handoffs"].')
    try:
        return tuple(dict.fromkeys(parse_channel_name(v) for v in value))
    except CallboardError as error:
        raise BadTeam(f"{path}: {what}: {error.message}") from None


def _seconds(value: object, where: str, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise BadTeam(f"{where} {key} must be a number of seconds above 0, not {value!r}.")
    return float(value)


def _check_unique(path: Path, roles: tuple[Role, ...]) -> None:
    agents = [r.agent for r in roles]
    twice = sorted({a for a in agents if agents.count(a) > 1})
    if twice:
        raise BadTeam(f"{path}: agents {twice} are named by more than one role; each role is its own agent.")
