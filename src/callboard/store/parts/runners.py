"""The runners part: each runner's newest report of itself, one per (workspace, agent,
machine). Its interface, and its SQL for both dialects."""

from __future__ import annotations

from typing import Protocol

from callboard.runners import RunnerReport
from callboard.store.rows import to_ts
from callboard.store.sql import QUIET, Database


class RunnersPart(Protocol):
    def put_runner_report(self, workspace: str, report: RunnerReport) -> None:
        """Keep ``report`` as its runner's newest, replacing the one of the same agent and machine."""
        ...

    def runner_reports(self, workspace: str, agent: str | None = None) -> list[RunnerReport]:
        """The workspace's runner reports (of ``agent`` only, when given), newest update first;
        ``live`` as the runner wrote it (the service marks it)."""
        ...


class SQLRunners:
    def __init__(self, db: Database) -> None:
        self._db = db

    def put_runner_report(self, workspace: str, report: RunnerReport) -> None:
        # Quiet: nothing waits on a report, and a heartbeat every few seconds per runner would
        # stir every replica for nothing.
        self._db.change(
            "INSERT INTO runner_reports (workspace, agent, machine, updated_at, report) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (workspace, agent, machine) DO UPDATE SET "
            "updated_at = excluded.updated_at, report = excluded.report RETURNING 1",
            (workspace, report.agent, report.machine, to_ts(report.updated_at), report.model_dump_json()),
            QUIET,
        )

    def runner_reports(self, workspace: str, agent: str | None = None) -> list[RunnerReport]:
        query = "SELECT report FROM runner_reports WHERE workspace = ?"
        args: tuple[str, ...] = (workspace,)
        if agent is not None:
            query, args = query + " AND agent = ?", (workspace, agent)
        rows = self._db.rows(query + " ORDER BY updated_at DESC, agent, machine", args)
        return [RunnerReport.model_validate_json(row[0]) for row in rows]
