"""What each runner reports of itself, kept where every machine can see it.

A runner (``switchboard run``) writes its state here on every change and with each heartbeat:
starting, idle, working on what, sleeping until when, crashed and why, its CLI's session id and
the tokens and cost its CLI reported. ``switchboard runner status`` lists them for the whole
workspace, so a runner on another machine shows through the hub like a local one. A report
whose runner stopped writing (killed, machine down) is shown as gone, not as its last word.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from switchboard.model import Model

RunnerState = Literal["starting", "idle", "working", "sleeping", "crashed", "stopping", "stopped"]
RUNNER_STATES: tuple[RunnerState, ...] = ("starting", "idle", "working", "sleeping", "crashed", "stopping", "stopped")


class RunnerReport(Model):
    """One runner as it last reported itself (the runner writes every field but ``live``)."""

    agent: str
    machine: str
    pid: int = Field(description="the runner's process (its session is agent@machine#pid)")
    session_id: str | None = Field(default=None, description="its Switchboard session")
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
