"""What the CLIs driven one process per turn have in common (Codex, Copilot, Gemini, Cursor).

Between turns nothing runs: an idle runner holds no model client at all, so it is ready once
its CLI is found and answers ``--version`` (checked at each start). Each turn starts the CLI
headless with the turn's input, reads its JSON lines until the turn's end, and keeps the CLI's
own session id, which the next turn (and a respawn) passes back to continue the same session —
each CLI's own headless resume. A subclass says only what is particular to its CLI:
where its executable is, its command line for a turn, and what each line of its output means.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from callboard.integrations.agent_clis import AgentCli
from callboard.runner.adapters.base import CliExited, CliUnavailable, Launch, Snapshot, TurnEvent, TurnTimedOut
from callboard.runner.adapters.json_lines import next_event
from callboard.runner.process import CliProcess, deadline_left

ENDING = frozenset({"done", "failed"})
VERSION_ARG = "--version"  # what each of these CLIs answers at once, model or not: ready to run


class PerTurnAdapter:
    """The Adapter shape of a per-turn CLI. A subclass names its row of the table of coding CLIs
    (``cli``: its name, runtime, title, executables and their variable are read there) and
    implements ``turn_argv`` and ``read``; ``finish``, ``transcript`` and ``session_holds`` have
    defaults."""

    cli: ClassVar[AgentCli]
    name = ""
    runtime = ""
    warm = False
    label = ""  # the CLI's name in sentences: "Copilot CLI"
    executables: tuple[str, ...] = ()  # looked up on the CLI's PATH, in order
    bin_variable = ""  # CALLBOARD_<CLI>_BIN: where the executable is, when not on PATH

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cli = cls.cli
        cls.name, cls.runtime, cls.label = cli.name, cli.runtime, cli.title
        cls.executables, cls.bin_variable = cli.executables, cli.bin_variable

    def __init__(self) -> None:
        self.launch: Launch | None = None
        self.executable: list[str] = []
        self.process: CliProcess | None = None
        self._session_id: str | None = None
        self.last_answer: str | None = None
        self._context: list[str] = []

    # --- what a subclass says ------------------------------------------------------------------

    def turn_argv(self, text: str) -> tuple[list[str], str | None]:
        """The turn's command line (after the executable), and what goes to its stdin (None: nothing)."""
        raise NotImplementedError

    def read(self, event: dict[str, Any]) -> Iterator[TurnEvent]:
        """The TurnEvents one output line means; a ``done`` or ``failed`` ends the turn."""
        raise NotImplementedError

    def finish(self, process: CliProcess) -> Iterator[TurnEvent]:
        """Events to add once the turn's process ended well (usage a CLI writes at its exit)."""
        return iter(())

    def transcript(self) -> Path | None:
        """The CLI's own transcript of the session, where it keeps one."""
        return None

    # --- the Adapter interface ------------------------------------------------------------------

    def start(self, launch: Launch, resume: str | None = None) -> None:
        """Nothing runs until a turn, so ready is: the CLI found, and answering (``--version``, in
        the turns' environment). Remembers the session to continue."""
        self.launch = launch
        self.executable = list(launch.command) or [self._find(launch)]
        self._check_answers(launch)
        self._session_id = resume or self._session_id

    def _check_answers(self, launch: Launch) -> None:
        """Run ``<executable> --version``: CliUnavailable when it fails (a broken install: a turn
        would fail the same way), CliExited when it did not end within the start limit."""
        process = CliProcess(
            [*self.executable, VERSION_ARG], cwd=launch.cwd, env=self.turn_env(launch), stdin=False, log=launch.log
        )
        deadline = time.monotonic() + launch.start_limit
        said: list[str] = []
        try:
            while (line := process.next_line(deadline_left(deadline))) is not None:
                said.append(line.strip())
        except CliExited:  # its output ended: it exited
            pass
        else:
            process.terminate(0)
            raise CliExited(
                f"{self.label} ({self.executable[0]}) did not answer {VERSION_ARG} within {launch.start_limit:g} s"
            )
        if process.returncode != 0:
            raise CliUnavailable(f"{self.label} does not run: {VERSION_ARG}: {process.exit_description()}")
        version = next((line for line in said if line), "no version said")
        launch.log(f"{self.name} ready: {Path(self.executable[0]).name} answered {VERSION_ARG} ({version[:200]})")

    def _find(self, launch: Launch) -> str:
        configured = launch.env.get(self.bin_variable, "").strip() if self.bin_variable else ""
        for candidate in ([configured] if configured else []) + list(self.executables):
            found = shutil.which(candidate, path=launch.env.get("PATH"))
            if found:
                return found
        names = " or ".join(self.executables)
        raise CliUnavailable(
            f"{self.label} ({names}) is not on PATH: install it, or set {self.bin_variable} to its executable."
        )

    def prompt(self, text: str, turn_id: str) -> None:
        launch = self.launch
        if launch is None:
            raise CliExited(f"{self.label} was not started")
        parts = [*self._context, text]
        if self._session_id is None and launch.role_prompt:
            parts.insert(0, launch.role_prompt)  # a new session: who the agent is, once (resumes keep it)
        self._context.clear()
        argv, stdin = self.turn_argv("\n\n".join(parts))
        self.process = CliProcess(
            [*self.executable, *argv],
            cwd=launch.cwd,
            env=self.turn_env(launch),
            stdin=stdin is not None,
            log=launch.log,
        )
        if stdin is not None:
            self.process.write_line(stdin)
            self.process.close_stdin()

    def turn_env(self, launch: Launch) -> dict[str, str]:
        """The turn's environment (a subclass may add to it)."""
        return dict(launch.env)

    def events(self, deadline: float) -> Iterator[TurnEvent]:
        process = self.process
        if process is None:
            raise CliExited(f"no {self.label} turn is running")
        log = self.launch.log if self.launch else (lambda line: None)
        try:
            while (event := next_event(process, deadline, log)) is not None:
                for turn_event in self.read(event):
                    if turn_event.kind == "session" and turn_event.session_id:
                        self._session_id = turn_event.session_id
                    if turn_event.kind == "text" and turn_event.text:
                        self.last_answer = turn_event.text
                    if turn_event.kind == "done":
                        process.wait(5.0)  # what it writes at its exit (usage) is written by then
                        yield from self.finish(process)
                    yield turn_event
                    if turn_event.kind in ENDING:
                        return
        except CliExited:
            if (process.returncode or 0) < 0:
                raise  # killed: the runner starts it again, resuming the session
            yield TurnEvent("failed", text=f"the turn ended without a result: {process.exit_description()}")
            return
        raise TurnTimedOut(f"the {self.label} turn ran past its limit")

    def inject(self, text: str) -> bool:
        return False  # a per-turn CLI takes its input once: the mail waits for the next turn

    def interrupt(self) -> None:
        """SIGINT to the turn's process group: the CLI cancels the turn and exits."""
        if self.process is not None and self.process.alive():
            try:
                os.killpg(self.process.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    @property
    def session_id(self) -> str | None:
        return self._session_id

    def clear(self) -> None:
        self._session_id = None  # the next turn starts a new session

    def alive(self) -> bool:
        return True  # nothing to keep alive between turns

    def stop(self, grace: float) -> None:
        if self.process is not None:
            self.process.terminate(grace)

    def snapshot(self) -> Snapshot:
        return Snapshot(self.name, self._session_id, self.transcript(), self.last_answer)

    def session_holds(self, message_ids: Sequence[str]) -> list[str] | None:
        return None  # a subclass whose session store the runner reads says what it holds

    def inject_context(self, text: str) -> None:
        self._context.append(text)
