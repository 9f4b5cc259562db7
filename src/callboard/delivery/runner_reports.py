"""What each runner reports of itself, kept where every machine can see it.

A runner (``callboard run``) writes its state here on every change and with each heartbeat:
starting, idle, working on what, sleeping until when, crashed and why, its CLI's session id and
the tokens and cost its CLI reported. ``callboard runner status`` lists them for the whole
workspace, so a runner on another machine shows through the hub like a local one. A report
whose runner stopped writing (killed, machine down) is shown as gone, not as its last word.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from callboard.address import ID_CHARS, PID_MAX, parse_machine, parse_name, shown
from callboard.errors import BadRequest, CallboardError, Forbidden
from callboard.liveness import Liveness
from callboard.model import Caller, Model

if TYPE_CHECKING:  # the store's interface names RunnerReport: imported for types only
    from callboard.store.base import Store

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


# --- the service's rule: who may report, what a report may say, when one is still live -----

COUNT_MAX = 2**63 - 1  # every counter fits a signed 64-bit column in both stores
COST_MAX = 1e12  # dollars: past this a figure is a bug, not a bill
DETAIL_CHARS = 2000
CLI_CHARS = 1000  # generic:CMD carries its command line
CLI_SESSION_ID_CHARS = 200
CWD_CHARS = 4096
# Stopped and crashed are last words: true however old; every other state must be kept current.
FINAL_STATES = frozenset({"stopped", "crashed"})


class RunnerReports:
    """Runner reports through the service: a caller writes only its own agent's, reads its
    workspace's; a report gone quiet past the liveness window is shown not live."""

    def __init__(
        self,
        store: Store,
        liveness: Liveness,
        clock: Callable[[], datetime],
        enter: Callable[[Caller], None],
    ) -> None:
        """``enter``: creates the caller's agent when it does not exist yet (``Directory.enter``)."""
        self.store = store
        self.liveness = liveness
        self.clock = clock
        self.enter = enter

    def report(self, caller: Caller, report: RunnerReport) -> RunnerReport:
        """Keep ``report`` as the newest of its runner (agent, machine); what was kept."""
        checked = checked_report(report).model_copy(update={"live": True})
        if checked.agent != caller.agent:
            raise Forbidden(f"{caller.agent} may report only its own runner, not {shown(report.agent)}'s.")
        self.enter(caller)  # a runner's agent exists once its report is kept
        self.store.put_runner_report(caller.workspace, checked)
        return checked

    def listed(self, caller: Caller, agent: str | None = None) -> list[RunnerReport]:
        """The workspace's runners (of ``agent`` only, when given), newest update first."""
        name = _name(agent) if agent is not None else None
        now = self.clock()
        return [self.marked(r, now) for r in self.store.runner_reports(caller.workspace, name)]

    def marked(self, report: RunnerReport, now: datetime) -> RunnerReport:
        live = report.state in FINAL_STATES or self.liveness.recent(report.updated_at, now)
        return report.model_copy(update={"live": live})


def checked_report(report: RunnerReport) -> RunnerReport:
    """The report with its names folded, or BadRequest with a sentence saying what is wrong."""
    agent = _name(report.agent)
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


def _name(agent: str) -> str:
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
