"""Runner reports in the PostgreSQL schema: functions on the database, called by PostgresStore."""

from __future__ import annotations

from callboard.runners import RunnerReport
from callboard.store.postgres.connection import PostgresDatabase
from callboard.store.rows import to_ts


def put_runner_report(db: PostgresDatabase, workspace: str, report: RunnerReport) -> None:
    # No change notification: nothing waits on a report, and a heartbeat every few seconds per
    # runner would stir every replica for nothing.
    args = {
        "ws": workspace,
        "agent": report.agent,
        "machine": report.machine,
        "at": to_ts(report.updated_at),
        "report": report.model_dump_json(),
    }
    statement = (
        "INSERT INTO runner_reports (workspace, agent, machine, updated_at, report) "
        "VALUES (%(ws)s, %(agent)s, %(machine)s, %(at)s, %(report)s) "
        "ON CONFLICT (workspace, agent, machine) DO UPDATE SET "
        "updated_at = excluded.updated_at, report = excluded.report"
    )
    db.run(lambda conn: conn.execute(statement, args))


def runner_reports(db: PostgresDatabase, workspace: str, agent: str | None) -> list[RunnerReport]:
    query = "SELECT report FROM runner_reports WHERE workspace = %s"
    args: tuple[str, ...] = (workspace,)
    if agent is not None:
        query, args = query + " AND agent = %s", (workspace, agent)
    rows = db.all(query + " ORDER BY updated_at DESC, agent, machine", args)
    return [RunnerReport.model_validate_json(row[0]) for row in rows]
