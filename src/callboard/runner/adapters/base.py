"""The one interface every CLI adapter offers the runner, and what flows through it.

A runner drives its CLI turn by turn: ``start`` it (resuming a session when it has one),
``prompt`` a turn, read the turn's ``events`` until it ends, and between turns ``clear`` or
``stop`` it. An adapter knows one CLI's command line, input and output; the loop knows none.
Warm adapters (Claude Code over stream-json, generic programs) keep one process across turns;
the others start the CLI once per turn and continue the same CLI session by its id (each CLI's
own headless resume), so an idle runner holds no model process at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from callboard.limits import RUNNER_START_LIMIT_SECONDS


class CliExited(Exception):
    """The CLI's process ended when it should not have (a crash, a kill): the runner respawns it,
    resuming its session. ``str()`` says how it ended, for the log and ``runner status``."""


class TurnTimedOut(Exception):
    """The turn ran past the runner's turn limit (``events``' deadline)."""


class CliUnavailable(Exception):
    """The CLI cannot be started at all (not installed, not on PATH, a bad command): respawning
    will not help. ``str()`` is a sentence a person can act on."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and cost as the CLI's own usage events report them (zero where it reports none)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None  # None: this CLI reports no cost

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None if self.cost_usd is None and other.cost_usd is None else (self.cost_usd or 0) + (other.cost_usd or 0)
        )
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            cost,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


EventKind = Literal["took", "text", "tool", "usage", "session", "done", "failed"]


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """One thing a turn did, as the runner needs to know it.

    took: the CLI has taken the turn's input into its context (its model will see it, or has):
      the runner marks the turn's mail surfaced on this (or on ``done`` when none came first).
    text: what the model said (for the log). tool: a tool it called (``text`` names it).
    usage: tokens and cost of a model request or of the turn (``usage``; added up by the runner).
    session: the CLI's session id is known or changed (``session_id``).
    done: the turn ended well; ``clear`` when the agent said it finished a unit of work.
    failed: the turn ended badly (``text`` says why); the process may live on.
    """

    kind: EventKind
    text: str = ""
    usage: Usage | None = None
    session_id: str | None = None
    clear: bool = False


@dataclass(frozen=True, slots=True)
class Launch:
    """What the runner gives its adapter to start the CLI with."""

    agent: str
    cwd: Path
    env: Mapping[str, str]  # the CLI's whole environment: acts as the agent, in the runner's session
    mcp_server: Mapping[str, object]  # how to start `callboard mcp` as the agent: command, args, env
    role_prompt: str | None = None  # the --prompt-file's text: who the agent is and how it works
    command: tuple[str, ...] = ()  # the CLI's executable and leading args (generic: the program)
    log: Callable[[str], None] = lambda line: None  # the runner's log: one line per call
    start_limit: float = RUNNER_START_LIMIT_SECONDS  # from start to ready; past it, a failed start


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A session's context as a hand-off carries it (the hand-off issue builds on this)."""

    cli: str
    session_id: str | None
    transcript: Path | None = None  # the CLI's own transcript file, where it keeps one
    last_answer: str | None = None  # the model's last words in the session
    extra: Mapping[str, object] = field(default_factory=dict)


class Adapter(Protocol):
    """One coding CLI, driven headless. Calls come from the runner's loop, one at a time, except
    ``inject`` and ``interrupt``, which may come from another thread during ``events``."""

    name: str  # as ``--cli`` names it: claude, codex, copilot, gemini, cursor, generic
    runtime: str  # the session runtime its agent CLI records (integrations.agent_clis), or "generic"
    warm: bool  # keeps one process across turns

    def start(self, launch: Launch, resume: str | None = None) -> None:
        """Get the CLI ready for its first turn, continuing session ``resume`` when given: it
        returns once the CLI can take a prompt (a warm CLI answered; a per-turn CLI's executable
        answered). Raises CliUnavailable when it cannot start at all, CliExited when it died on
        the way up or was not ready within ``launch.start_limit`` (then it was ended)."""
        ...

    def prompt(self, text: str, turn_id: str) -> None:
        """Begin a turn whose input is ``text`` (mail fenced as a model reads it, or a tick)."""
        ...

    def events(self, deadline: float) -> Iterator[TurnEvent]:
        """The current turn's events, ending with ``done`` or ``failed``. Raises CliExited when
        the process dies mid-turn and TurnTimedOut at ``deadline`` (``time.monotonic()``)."""
        ...

    def inject(self, text: str) -> bool:
        """Give urgent input to the running turn where the CLI allows it (Claude Code: after the
        current tool round); False when it must wait for the turn's end."""
        ...

    def interrupt(self) -> None:
        """Stop the running turn (it ran past the limit); the process may live on."""
        ...

    @property
    def session_id(self) -> str | None:
        """The CLI's own session id (for resume), once known."""
        ...

    def clear(self) -> None:
        """Start a fresh context for the next turn (a new CLI session), keeping tools and prompt."""
        ...

    def alive(self) -> bool:
        """Whether the CLI can take a turn now without a respawn (per-turn CLIs: always)."""
        ...

    def stop(self, grace: float) -> None:
        """End the CLI gracefully (its own way to exit), killing it and what it started after
        ``grace`` seconds. Safe to call twice or on a dead process."""
        ...

    def snapshot(self) -> Snapshot:
        """The session's context for a hand-off."""
        ...

    def session_holds(self, message_ids: Sequence[str]) -> list[str] | None:
        """Those of ``message_ids`` (the mail of a turn the CLI died in) that its session's own
        store holds as the turn's input: a resume of the session carries them (``session_store``).
        None when the runner reads no store of this CLI: then ``took`` is all it goes by."""
        ...

    def inject_context(self, text: str) -> None:
        """Context to carry into the next turn (a hand-off's packet), ahead of its input."""
        ...
