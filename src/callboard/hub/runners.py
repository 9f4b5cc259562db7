"""The REST endpoints of /v1/runners: what each runner (``callboard run``) reports of itself.

A runner writes its report here on every change and with each heartbeat, so that ``callboard
runner status`` on any machine of the workspace lists it. The rules (a caller reports only its
own agent's runner; a report gone quiet is not live) are the service's (service/runner_reports.py)."""

from __future__ import annotations

from callboard.address import parse_name
from callboard.errors import BadRequest
from callboard.hub.endpoint import Call
from callboard.runners import RunnerReport


async def report_runner(call: Call) -> RunnerReport:
    await call.identify()
    report = await call.body(RunnerReport)
    if parse_name(call.path("agent"), "agent") != report.agent.strip().lower():
        raise BadRequest(f"the path names agent {call.path('agent')!r}, the report {report.agent!r}: name one agent.")
    return await call.run_as(call.hub.service.runners.report, report)


async def list_runners(call: Call) -> list[RunnerReport]:
    await call.identify()
    return await call.run_as(call.hub.service.runners.listed, call.query("agent") or None)
