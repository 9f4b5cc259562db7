"""A runner's report of itself: its record and the rule for what a report may say.

A runner (``callboard run``) writes its state on every change and with each heartbeat:
starting, idle, working on what, sleeping until when, crashed and why, its CLI's session id and
the tokens and cost its CLI reported. The service keeps the newest per runner
(``service.runner_reports``); the store stores it; both read this record.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from callboard.address import parse_machine, parse_name
from callboard.errors import BadRequest, CallboardError
from callboard.limits import (
    CLI_CHARS,
    CLI_SESSION_ID_CHARS,
    COST_MAX,
    COUNT_MAX,
    CWD_CHARS,
    DETAIL_CHARS,
    ID_CHARS,
    PID_MAX,
)
from callboard.model import Model

RunnerState = Literal["starting", "idle", "working", "sleeping", "crashed", "stopping", "stopped"]
RUNNER_STATES: tuple[RunnerState, ...] = ("starting", "idle", "working", "sleeping", "crashed", "stopping", "stopped")


class RunnerReport(Model):
    """One runner as it last reported itself (the runner writes every field but ``live``)."""

    agent: str
    machine: str
    pid: int = Field(description="the runner's process (its session is agent@machine#pid)")
    session_id: str | None = Field(default=None, description="its Callboard session")
    cli: str = Field(description="claude, codex, copilot, gemini, cursor or generic:CMD")
    cli_session_id: str | None = Field(default=None, description="the CLI's own session id (what a respawn resumes)")
    transcript: str | None = Field(
        default=None, description="the CLI's own transcript file on the runner's machine, where the CLI keeps one"
    )
    state: RunnerState
    detail: str | None = Field(
        default=None, description="working: on what; sleeping: why; crashed: why; stopped: how it ended"
    )
    sleeping_until: datetime | None = None
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = Field(default=None, description="as the CLI reported it; None when it reports none")
    restarts: int = Field(default=0, description="times the CLI was respawned after it died")
    cwd: str | None = None
    started_at: datetime
    updated_at: datetime
    live: bool = Field(
        default=True,
        description="still reporting (false: its runner stopped writing without saying so: killed, or its machine is down)",
    )


# Stopped and crashed are last words: true however old; every other state must be kept current.
FINAL_STATES = frozenset({"stopped", "crashed"})


def checked_report(report: RunnerReport) -> RunnerReport:
    """The report with its names folded, or BadRequest with a sentence saying what is wrong."""
    agent = checked_name(report.agent)
    try:
        machine = parse_machine(report.machine)
    except CallboardError as error:
        raise BadRequest(error.message) from None
    if not 1 <= report.pid <= PID_MAX:
        raise BadRequest(f"pid must be a process id, 1 to {PID_MAX}; got {report.pid}.")
    _check_counts(report)
    _check_texts(report)
    if report.cost_usd is not None and not (0 <= report.cost_usd <= COST_MAX):  # NaN fails this too
        raise BadRequest(f"cost_usd must be between 0 and {COST_MAX:g}; got {report.cost_usd}.")
    for field in ("started_at", "updated_at", "sleeping_until"):
        moment = getattr(report, field)
        if moment is not None and moment.tzinfo is None:
            raise BadRequest(f"{field} must carry a time zone (e.g. 2026-01-01T00:00:00Z).")
    return report.model_copy(update={"agent": agent, "machine": machine})


def checked_name(agent: str) -> str:
    try:
        return parse_name(agent, "agent")
    except CallboardError as error:
        raise BadRequest(error.message) from None


def _check_counts(report: RunnerReport) -> None:
    for field in ("turns", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "restarts"):
        value = getattr(report, field)
        if not 0 <= value <= COUNT_MAX:
            raise BadRequest(f"{field} must be a count, 0 to {COUNT_MAX}; got {value}.")


def _check_texts(report: RunnerReport) -> None:
    bounds = {
        "cli": CLI_CHARS,
        "detail": DETAIL_CHARS,
        "cli_session_id": CLI_SESSION_ID_CHARS,
        "cwd": CWD_CHARS,
        "transcript": CWD_CHARS,  # a path, as cwd is
        "session_id": ID_CHARS,
    }
    for field, most in bounds.items():
        value = getattr(report, field)
        if value is None:
            continue
        if len(value) > most:
            raise BadRequest(f"{field} must be at most {most} characters; got {len(value)}.")
        if "\x00" in value:
            raise BadRequest(f"{field} must not contain NUL characters.")
    if not report.cli.strip():
        raise BadRequest("cli must name the runner's CLI (claude, codex, …, generic:CMD).")
