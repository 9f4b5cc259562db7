"""Runner reports in the SQLite schema: functions on the database, called by SQLiteStore."""

from __future__ import annotations

import sqlite3

from callboard.runners import RunnerReport
from callboard.store.rows import to_ts
from callboard.store.sqlite.connection import SQLiteDatabase


def put_runner_report(db: SQLiteDatabase, workspace: str, report: RunnerReport) -> None:
    def upsert(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO runner_reports (workspace, agent, machine, updated_at, report) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (workspace, agent, machine) DO UPDATE SET "
            "updated_at = excluded.updated_at, report = excluded.report",
            (workspace, report.agent, report.machine, to_ts(report.updated_at), report.model_dump_json()),
        )

    db.transact(upsert)


def runner_reports(db: SQLiteDatabase, workspace: str, agent: str | None) -> list[RunnerReport]:
    query = "SELECT report FROM runner_reports WHERE workspace = ?"
    args: tuple[str, ...] = (workspace,)
    if agent is not None:
        query, args = query + " AND agent = ?", (workspace, agent)
    with db.read() as conn:
        rows = conn.execute(query + " ORDER BY updated_at DESC, agent, machine", args).fetchall()
    return [RunnerReport.model_validate_json(row[0]) for row in rows]
