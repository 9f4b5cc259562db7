"""The runner's report of itself: kept current, written on each change and every 15 s."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from callboard.client.base import Client
from callboard.errors import CallboardError
from callboard.runner.adapters.base import Usage
from callboard.runners import RunnerReport, RunnerState

REPORT_EVERY_SECONDS = 15.0


class Reporter:
    """Holds the runner's RunnerReport and sends it with ``client.report_runner`` on every
    change and every ``every`` seconds from a thread."""

    def __init__(
        self,
        client: Client,
        base: RunnerReport,
        log: Callable[[str], None],
        every: float = REPORT_EVERY_SECONDS,
    ) -> None:
        self._client = client
        self._log = log
        self._every = every
        self._lock = threading.Lock()
        self.report = base
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="runner-report", daemon=True)
        self._failed_once = False

    def start(self) -> None:
        self._send()
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def state(self, state: RunnerState, detail: str | None = None, sleeping_for: float | None = None) -> None:
        """A change of state, sent at once (not logged: the runner logs the event that made it,
        once)."""
        until = datetime.now(UTC) + timedelta(seconds=sleeping_for) if sleeping_for is not None else None
        self._update(state=state, detail=detail, sleeping_until=until)
        self._send()

    def turn_done(self, usage: Usage, cli_session_id: str | None) -> None:
        """A turn ended: count it and add what it used."""
        with self._lock:
            r = self.report
            cost = r.cost_usd if usage.cost_usd is None else (r.cost_usd or 0.0) + usage.cost_usd
            self.report = r.model_copy(
                update={
                    "turns": r.turns + 1,
                    "input_tokens": r.input_tokens + usage.input_tokens,
                    "output_tokens": r.output_tokens + usage.output_tokens,
                    "cache_read_tokens": r.cache_read_tokens + usage.cache_read_tokens,
                    "cache_write_tokens": r.cache_write_tokens + usage.cache_write_tokens,
                    "cost_usd": cost,
                    "cli_session_id": cli_session_id or r.cli_session_id,
                }
            )

    def update(self, **fields: object) -> None:
        """Other fields (restarts, counts), sent with the next report."""
        self._update(**fields)

    def update_now(self, **fields: object) -> None:
        """Fields that others may look for at once (the CLI's session and transcript, which a
        hand-off from this runner reads while its turn still runs): sent now when they changed."""
        with self._lock:
            changed = any(getattr(self.report, name) != value for name, value in fields.items())
        if changed:
            self._update(**fields)
            self._send()

    def _update(self, **fields: object) -> None:
        with self._lock:
            self.report = self.report.model_copy(update={**fields, "updated_at": datetime.now(UTC)})

    def _send(self) -> None:
        with self._lock:
            report = self.report.model_copy(update={"updated_at": datetime.now(UTC)})
        try:
            self._client.report_runner(report)
            self._failed_once = False
        except CallboardError as error:
            if not self._failed_once:  # once per outage, not every 15 s
                self._log(f"report not written: {error.code}: {error.message}")
            self._failed_once = True

    def _beat(self) -> None:
        while not self._stopped.wait(self._every):
            self._send()
