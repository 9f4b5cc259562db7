"""What each runner reports of itself, kept where every machine can see it.

A runner (``callboard run``) writes its report (``callboard.runners``) on every change and with
each heartbeat. ``callboard runner status`` lists them for the whole
workspace, so a runner on another machine shows through the hub like a local one. A report
whose runner stopped writing (killed, machine down) is shown as gone, not as its last word.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from callboard.address import shown
from callboard.errors import Forbidden
from callboard.model import Caller
from callboard.runners import FINAL_STATES, RunnerReport, checked_name, checked_report
from callboard.service.identity_gate import as_agent
from callboard.service.liveness import Liveness

if TYPE_CHECKING:
    from callboard.store.parts.runners import RunnersPart


class RunnerReports:
    """Runner reports through the service: a caller writes only its own agent's, reads its
    workspace's; a report gone quiet past the liveness window is shown not live."""

    def __init__(
        self,
        reports: RunnersPart,
        liveness: Liveness,
        clock: Callable[[], datetime],
        enter: Callable[[Caller], None],
    ) -> None:
        """``enter``: creates the caller's agent when it does not exist yet (``Directory.enter``)."""
        self.reports = reports
        self.liveness = liveness
        self.clock = clock
        self.enter = enter

    def report(self, caller: Caller, report: RunnerReport) -> RunnerReport:
        """Keep ``report`` as the newest of its runner (agent, machine); what was kept."""
        caller = as_agent(caller)
        checked = checked_report(report).model_copy(update={"live": True})
        if checked.agent != caller.agent:
            raise Forbidden(f"{caller.agent} may report only its own runner, not {shown(report.agent)}'s.")
        self.enter(caller)  # a runner's agent exists once its report is kept
        self.reports.put_runner_report(caller.workspace, checked)
        return checked

    def listed(self, caller: Caller, agent: str | None = None) -> list[RunnerReport]:
        """The workspace's runners (of ``agent`` only, when given), newest update first."""
        name = checked_name(agent) if agent is not None else None
        now = self.clock()
        return [self.marked(r, now) for r in self.reports.runner_reports(caller.workspace, name)]

    def marked(self, report: RunnerReport, now: datetime) -> RunnerReport:
        live = report.state in FINAL_STATES or self.liveness.recent(report.updated_at, now)
        return report.model_copy(update={"live": live})
