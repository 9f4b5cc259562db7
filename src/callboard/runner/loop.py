"""The runner: one CLI working as one agent, woken by its mail.

It registers a live session of the agent whose pid is the runner's own (so ``agent@machine#pid``
addresses it), starts the CLI through its adapter, and then does nothing until it is woken: by
mail (``wake.MailWatch``), by SIGUSR1 / ``runner wake``, or by the optional tick. Woken, it takes
all the mail there is as one batch (``surface(via="runner")``: handed to its session), gives it
to the CLI as one turn, and marks it surfaced when the CLI took it. Mail that comes during a turn
waits for the turn's end (urgent mail goes in at once where the adapter can inject it).

The runner is ready (it says so, and reports itself idle) only once its CLI can take a prompt:
the adapter's ``start`` returns when the CLI runs and answered (Claude Code: its control
requests, with our MCP server connected), and a CLI that cannot start, ends before it answered
or is not ready within ``--start-limit`` is a failed start — the runner ends with exit status 3,
saying why, and does not try again. A CLI that started fine and dies later is respawned (and
waited for in the same way), resuming its session, with capped backoff (``respawn``). The mail of
a turn it died in is not given again where the resumed session holds it already (its own store
says so): the next turn continues the interrupted one, so the model gets that mail once; the rest
is given again. A turn past the limit is interrupted, then the CLI stopped and respawned.
SIGTERM/SIGINT stop the CLI (its grace), end the session, exit 0. Each event is one line of the
runner's log. The loop knows no particular CLI.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from callboard.client.base import Client
from callboard.client.session_keeper import SessionKeeper
from callboard.errors import CallboardError
from callboard.fence import visible
from callboard.handoff import full, packet_in
from callboard.limits import RUNNER_START_LIMIT_SECONDS
from callboard.model import MailItem
from callboard.requests import SurfaceQuery
from callboard.runner import prompts
from callboard.runner.adapters.base import Adapter, CliExited, CliUnavailable, Launch, TurnEvent
from callboard.runner.env import cli_env, mcp_server
from callboard.runner.files import RunnerFiles, RunnerNotStarted
from callboard.runner.reporting import Reporter
from callboard.runner.respawn import CrashPolicy
from callboard.runner.schedule import DEFAULT_IDLE_STEP, DEFAULT_MAX_SLEEP, ClearGate, TickBackoff
from callboard.runner.turns import Turn, TurnResult
from callboard.runner.unfinished import held, sort_unfinished
from callboard.runner.wake import MailWatch, Wake, on_sigusr1
from callboard.runners import RunnerReport

EXIT_OK = 0
EXIT_CRASH_LOOP = 3  # also a CLI that did not start: the runner gave up on its CLI
RUNTIME = "runner"
TIMED_OUT_RETRIES = 1  # a turn's mail is given again once after the turn ran past its limit
CLI_WATCH_SECONDS = 0.5  # how often an idle runner looks whether its CLI still runs


@dataclass(frozen=True, slots=True)
class RunnerOptions:
    """What ``callboard run`` was asked for."""

    agent: str
    cli: str
    cwd: Path
    role_prompt: str | None = None
    every: float | None = None
    idle_step: float = DEFAULT_IDLE_STEP
    max_sleep: float = DEFAULT_MAX_SLEEP
    turn_limit: float = 600.0
    clear_min_gap: float = 600.0
    grace: float = 10.0
    batch_limit: int = 50
    respawn_base: float = 1.0  # the first respawn's wait (doubling, capped)
    start_limit: float = RUNNER_START_LIMIT_SECONDS  # the CLI's start to ready; past it, a failed start


class Stopping(Exception):
    """SIGTERM or SIGINT came during a turn: leave it at once."""


class CrashLoop(Exception):
    """The CLI crashed too often: the runner gives up (``str()`` says the last reason)."""


class Runner:
    """The loop. ``run()`` returns the process's exit status."""

    def __init__(
        self,
        client: Client,
        adapter: Adapter,
        options: RunnerOptions,
        files: RunnerFiles,
        *,
        machine: str,
        on_ready: Callable[[str], None] = lambda address: None,
    ) -> None:
        self.client = client  # acting as the agent (it registers the session)
        self.adapter = adapter
        self.options = options
        self.files = files
        self.machine = machine
        self.on_ready = on_ready
        self.wake = Wake()
        self.backoff = TickBackoff(options.every, options.idle_step, options.max_sleep)
        self.clear_gate = ClearGate(options.clear_min_gap)
        self.crashes = CrashPolicy(base=options.respawn_base)
        self.carry: list[MailItem] = []  # handed to us, not yet taken by the CLI: given again
        self.resumed: list[MailItem] = []  # in the CLI's session from an interrupted turn: continued
        self.given: dict[str, int] = {}  # message id -> times a turn it was in ended unfinished
        self.session_client: Client = client
        self._stopping = False
        self._stop_reason = "a signal"
        self._in_turn = False
        self._urgent_looked = False
        self._echo: bool | None = None  # whether log lines also go to stderr (found on the first)
        self.turns = 0

    # --- the whole life ---------------------------------------------------------------------

    def run(self) -> int:
        self.files.acquire()  # RunnerRunning when another runner has this agent here
        keeper = SessionKeeper(self.client, on_parent_gone=lambda: None, parent=os.getpid())
        keeper.start(RUNTIME)
        if keeper.session is None:
            self.files.release()
            raise RunnerNotStarted("could not register the runner's session (see the log above); nothing started")
        session = keeper.session
        self.session_client = self.client.as_agent(self.options.agent, session_id=session.id)
        self.reporter = Reporter(self.session_client, self._first_report(session.id), self.log)
        self.reporter.start()
        self.watch = MailWatch(self.session_client, self.wake, self.log)
        env = cli_env(os.environ, self.options.agent, session.id)
        self.launch = Launch(
            agent=self.options.agent,
            cwd=self.options.cwd,
            env=env,
            mcp_server=mcp_server(env),
            role_prompt=self.options.role_prompt,
            log=self.log,
            start_limit=self.options.start_limit,
        )
        self._take_signals()
        code = EXIT_OK
        try:
            self._first_start()
            if self._stopping:
                return code
            self.watch.start()
            threading.Thread(target=self._watch_cli, name="callboard-runner-cli-watch", daemon=True).start()
            self.log(f"ready: {session.address} with --cli {self.options.cli}")
            self.on_ready(session.address)
            self._loop()
        except (Stopping, KeyboardInterrupt):
            pass
        except CrashLoop as loop:
            code = EXIT_CRASH_LOOP
            self._gave_up(f"gave up: {loop}")
        except (CliUnavailable, CliExited) as error:  # CliExited: only the first start lets it out
            code = EXIT_CRASH_LOOP
            self._gave_up(f"--cli {self.options.cli} did not start: {error}. Not tried again: fix it, then run again.")
        finally:
            self._shutdown(keeper, crashed=code != EXIT_OK)
        return code

    def _first_start(self) -> None:
        """Start the CLI: returns once it runs and answered (see the adapter's ``start``); one
        that cannot start, or ends first, is not tried again (CliUnavailable, CliExited)."""
        self.adapter.start(self.launch)
        self._note_cli_session()

    def _note_cli_session(self) -> None:
        """The CLI's session as the report shows it: its id, and its transcript file where the
        CLI keeps one (a hand-off ``--from`` this runner excerpts it, on this machine). Looked
        for (a per-turn CLI's: a search of its folders) only when the session is new, or its file
        was not there yet: a session event comes with every turn of some CLIs."""
        known = self.reporter.report
        if self.adapter.session_id == known.cli_session_id and known.transcript is not None:
            return
        transcript = self.adapter.snapshot().transcript
        self.reporter.update_now(
            cli_session_id=self.adapter.session_id, transcript=str(transcript) if transcript is not None else None
        )

    def _gave_up(self, why: str) -> None:
        self.log(why)
        self.reporter.state("crashed", why)

    def _shutdown(self, keeper: SessionKeeper, crashed: bool) -> None:
        self._stopping = True
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one shutdown, however many signals
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if not crashed:
            self.log(f"stopping ({self._stop_reason})")
            self.reporter.state("stopping")
        self.watch.stop()
        self.adapter.stop(self.options.grace)
        keeper.stop()  # mail still handed to the session goes back to the mailbox
        if not crashed:
            self.log("stopped")
            self.reporter.state("stopped", f"stopped by {self._stop_reason}")
        self.reporter.stop()
        if self.session_client is not self.client:
            self.session_client.close()
        self.files.release()

    def _take_signals(self) -> None:
        def stop(signum: int, frame: object) -> None:
            if self._stopping:
                return
            self._stop_reason = signal.Signals(signum).name
            self._stopping = True
            self.wake.set("stop")
            if self._in_turn:
                raise Stopping

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        on_sigusr1(self.wake)

    # --- the loop ---------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping:
            reasons = self._wait()
            if self._stopping:
                return
            if self.files.take_clear_request():
                self.log("clear asked for by `callboard runner clear`")
                self.clear_gate.ask()
            self._clear_if_due()
            if "died" in reasons and not self.adapter.alive():
                self._respawn(f"{self.adapter.name} exited while idle")
            items = [*self.carry, *self._take()]
            self.carry = []
            if items or self.resumed:
                self.backoff.reset()
                self._mail_turn(items)
            elif reasons & {"signal", "tick"}:
                if "signal" in reasons:
                    self.backoff.reset()
                else:
                    self.backoff.ticked()
                self._turn([], prompts.tick_prompt(), "tick" if "tick" in reasons else "wake")

    def _mail_turn(self, items: list[MailItem]) -> None:
        """A turn over new mail; or one that goes on with an interrupted turn whose mail the CLI's
        session holds (not given again: ``unfinished``), the new mail after it."""
        resumed, self.resumed = self.resumed, []
        self._take_handoffs(items)
        if resumed:
            text = prompts.continue_prompt(self.options.agent, items)
            what = f"continuing an interrupted turn: {self._describe([*resumed, *items])}"
        else:
            text, what = prompts.mail_prompt(self.options.agent, items), self._describe(items)
        self._turn([*resumed, *items], text, what)

    def _watch_cli(self) -> None:
        """A CLI that dies between turns is started again at once, not when the next mail comes
        (which would then wait for the start); a per-turn CLI has no process to watch."""
        while not self._stopping:
            time.sleep(CLI_WATCH_SECONDS)
            if not self._in_turn and not self._stopping and not self.adapter.alive():
                self.wake.set("died")

    def _wait(self) -> set[str]:
        """Wait for a wake or the tick; the reasons ("mail", "signal", "tick", "stop")."""
        if self.carry or self.resumed:
            return {"carry"}
        interval = self.backoff.interval()
        if not self.wake.is_set():
            if interval is None:
                self.reporter.state("idle")
            else:
                self.log(f"sleeping: next tick in {interval:g} s")
                self.reporter.state("sleeping", f"next tick in {interval:g} s", sleeping_for=interval)
        if self.wake.wait(interval):
            return self.wake.take()
        return {"tick"}

    def _take(self) -> list[MailItem]:
        """All the mail there is, handed to the runner's session (the watch looks again after)."""
        try:
            items = self.session_client.surface(SurfaceQuery(via="runner", limit=self.options.batch_limit)).items
        except CallboardError as error:
            self.log(f"could not take mail: {error.code}: {error.message}")
            items = []
        self.watch.rearm()
        return list(items)

    def _take_handoffs(self, items: Sequence[MailItem]) -> None:
        """A hand-off's packet goes into the CLI's context whole, ahead of the turn's mail (the
        mail itself shows the packet by name only: see fence)."""
        for item in items:
            packet = packet_in(item.message.parts)
            if packet is not None:
                self.log(f"hand-off from {packet.from_agent}: its packet goes into {self.adapter.name}'s context")
                self.adapter.inject_context(full(packet))

    def _describe(self, items: Sequence[MailItem]) -> str:
        senders = sorted({item.message.sender for item in items})
        return f"mail from {', '.join(senders)} ({len(items)} message{'s' if len(items) != 1 else ''})"

    # --- one turn, with what can go wrong ---------------------------------------------------

    def _turn(self, items: list[MailItem], text: str, what: str) -> None:
        if not self.adapter.alive():
            self._respawn(f"{self.adapter.name} was not running")
        self.turns += 1
        turn_id = f"t{self.turns}-{uuid.uuid4().hex[:8]}"
        self.reporter.state("working", what)
        self.log(f"turn {turn_id}: {what}")
        turn = Turn(self.adapter, self.session_client, [i.message.id for i in items], self.log, self._during_turn)
        self._in_turn, self._urgent_looked = True, False
        try:
            result = turn.run(text, turn_id, self.options.turn_limit)
        except CliExited as exited:
            self._in_turn = False
            self._give_again(items, turn.result)
            self._respawn(str(exited))
            return
        finally:
            self._in_turn = False
        self.reporter.turn_done(result.usage, self.adapter.session_id)
        self.log(f"turn {turn_id} {result.ended}" + (f": {result.detail}" if result.detail else ""))
        if result.ended == "timed_out":
            self.reporter.state("working", f"{result.detail}: restarting {self.adapter.name}")
            self.adapter.stop(self.options.grace)  # first: its session's store is final once it is gone
            self._give_again(items, result, most=TIMED_OUT_RETRIES)
            try:
                self._start(resume=self.adapter.session_id)
            except CliExited as exited:
                self._respawn(str(exited))
        if result.clear:
            self.clear_gate.ask()
        self._clear_if_due()

    def _give_again(self, items: list[MailItem], result: TurnResult, most: int | None = None) -> None:
        """The mail of a turn that ended unfinished goes into the next turn (``unfinished``): what
        the CLI's session holds is continued (surfaced now, by its store's evidence, if the CLI
        had not said it took it), the rest given again. After a crash always (a crash loop ends
        the runner, and its session's end returns the mail); after a timed-out turn ``most`` times."""
        ids = [item.message.id for item in items]
        in_store = self.adapter.session_holds(ids) if ids else []
        if in_store:
            self.log(
                f"{len(in_store)} message(s) of the turn are in {self.adapter.name}'s session: continued, not given again"
            )
            try:
                self.session_client.confirm_surfaced(in_store, evidence="transcript")
            except CallboardError as error:
                self.log(f"could not mark {len(in_store)} message(s) surfaced: {error.code}: {error.message}")
        next_turn = sort_unfinished(items, held(ids, in_store, result.took), self.given, most)
        for item in next_turn.dropped:
            self.log(
                f"message {item.message.id} hung {self.given[item.message.id]} turns before the CLI answered it: "
                "not given again (it stays with this runner's session; handed, it returns to the mailbox when that ends)"
            )
        self.resumed += next_turn.continued
        self.carry += next_turn.again

    def _during_turn(self, event: TurnEvent) -> None:
        """Between a turn's events: note a new CLI session id; urgent mail goes in if it can."""
        if event.kind == "session":
            self._note_cli_session()
        if self._urgent_looked or not self.wake.is_set():
            return
        self._urgent_looked = True  # once per turn: the rest waits for the turn's end
        try:
            peeked = self.session_client.surface(SurfaceQuery(via="runner", urgent_only=True, peek=True)).items
            if not peeked:
                return
            urgent = self.session_client.surface(SurfaceQuery(via="runner", urgent_only=True)).items
        except CallboardError as error:
            self.log(f"could not look for urgent mail: {error.code}: {error.message}")
            return
        if urgent and self.adapter.inject(prompts.mail_prompt(self.options.agent, urgent)):
            self.log(f"urgent mail put into the running turn: {self._describe(urgent)}")
            self.session_client.confirm_surfaced([i.message.id for i in urgent], evidence="turn")
        else:
            self.carry.extend(urgent)  # handed to us already: it goes first after the turn

    # --- respawn and clear -------------------------------------------------------------------

    def _respawn(self, reason: str) -> None:
        """The CLI died: start it again resuming its session, after a backoff; CrashLoop when
        it keeps dying."""
        while not self._stopping:
            delay = self.crashes.crashed(time.monotonic())
            if delay is None:
                raise CrashLoop(f"{self.crashes.recent} crashes within {self.crashes.window:g} s; last: {reason}")
            self.log(f"{self.adapter.name} died ({reason}); respawning in {delay:g} s")
            self.reporter.state("crashed", f"{reason}; respawning in {delay:g} s")
            if self.wake_stop(delay):
                return
            self.reporter.update(restarts=self.reporter.report.restarts + 1)
            try:
                self._start(resume=self.adapter.session_id)
                return
            except CliExited as again:
                reason = str(again)

    def wake_stop(self, seconds: float) -> bool:
        """Wait ``seconds`` unless a stop comes first; whether it did."""
        deadline = time.monotonic() + seconds
        while not self._stopping and time.monotonic() < deadline:
            time.sleep(min(0.1, deadline - time.monotonic()))
        return self._stopping

    def _start(self, resume: str | None) -> None:
        self.adapter.stop(min(self.options.grace, 2.0))  # whatever is left of the old one
        self.log(f"starting {self.adapter.name}" + (f", resuming session {resume}" if resume else ""))
        self.adapter.start(self.launch, resume=resume)
        self._note_cli_session()

    def _clear_if_due(self) -> None:
        if not self.clear_gate.pending:
            return
        now = time.monotonic()
        if not self.clear_gate.due(now):
            left = self.clear_gate.wait_left(now)
            self.log(
                f"clear refused: the last was under {self.options.clear_min_gap:g} s ago; kept pending ({left:.0f} s left)"
            )
            return
        self.log(f"clearing {self.adapter.name}'s context (a fresh session)")
        try:
            self.adapter.clear()
        except CliExited as exited:
            self._respawn(str(exited))
        self._note_cli_session()

    # --- reporting --------------------------------------------------------------------------

    def log(self, line: str) -> None:
        """One line to the runner's log file and, unless stderr is that same file (``team up``
        sends a runner's output there), to stderr: each event once in the log (a terminal gets what the CLI said shown,
        never obeyed: ``fence.visible``)."""
        self.files.log(line)
        if self._echo is None:
            self._echo = not self.files.is_log(sys.stderr)
        if self._echo:
            print(f"callboard run: {visible(line)}", file=sys.stderr, flush=True)

    def _first_report(self, session_id: str) -> RunnerReport:
        now = datetime.now(UTC)
        return RunnerReport(
            agent=self.options.agent,
            machine=self.machine,
            pid=os.getpid(),
            session_id=session_id,
            cli=self.options.cli,
            state="starting",
            cwd=str(self.options.cwd),
            started_at=now,
            updated_at=now,
        )
