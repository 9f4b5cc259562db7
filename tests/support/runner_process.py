"""Starting ``callboard run`` as a real process on a test Machine (a Claude Code or a Codex
runner against a mock model), and reading what it reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from callboard import procs
from callboard.model import RecipientStatus
from callboard.requests import SendRequest
from callboard.runner import prompts
from tests.agent_clis_e2e.conftest import RUN_TIMEOUT, Machine, claude_code_env
from tests.support.codex_config import offline_config
from tests.support.mock_model import MockModel
from tests.support.processes import process_gone
from tests.support.waiting import wait_until


class RunnerProcess:
    """``callboard run --agent <agent> --cli <cli>`` in the machine's working folder."""

    def __init__(self, machine: Machine, agent: str, cli: str, env: Mapping[str, str]) -> None:
        self.machine, self.agent, self.cli = machine, agent, cli
        argv = [sys.executable, "-m", "callboard", "run", "--agent", agent, "--cli", cli]
        self.out = machine.root / f"runner-{agent}.out"  # what it prints (a pipe nobody reads could fill)
        self.process = subprocess.Popen(
            [*argv, "--cwd", str(machine.workdir)],
            env={**env, "CALLBOARD_HOME": str(machine.callboard_home)},
            cwd=machine.workdir,
            stdin=subprocess.DEVNULL,
            stdout=self.out.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def report(self) -> Any:
        """The runner's last report (client.list_runners), or None."""
        with self.machine.client("carol") as client:
            found = [r for r in client.list_runners() if r.agent == self.agent and r.pid == self.pid]
        return found[0] if found else None

    def wait_state(self, state: str, what: str, timeout: float = RUN_TIMEOUT, **fields: object) -> Any:
        def check() -> Any:
            if self.process.poll() is not None:
                raise AssertionError(f"the runner exited ({self.process.returncode}) before {what}\n{self.output()}")
            report = self.report()
            ok = report is not None and report.state == state
            return report if ok and all(getattr(report, k) == v for k, v in fields.items()) else None

        return wait_until(check, timeout=timeout, what=f"{what} (last report {self.report()})")

    def said_before_ready(self, *words: str) -> bool:
        """Whether a line of its log holds all of ``words`` and comes before its ready line."""
        log = self.log().splitlines()
        ready = next((i for i, line in enumerate(log) if f" ready: {self.agent}@" in line), None)
        said = next((i for i, line in enumerate(log) if all(w in line for w in words)), None)
        return ready is not None and said is not None and said < ready

    def cli_pids(self) -> list[int]:
        """The runner's CLI processes (its direct children that are not Python)."""
        found = []
        for child in procs.children_of(self.pid):
            command = procs.process_command_line(child)
            if command and "python" not in command[0]:
                found.append(child)
        return found

    def log(self) -> str:
        """Its runner.log (what `runner logs` shows)."""
        return "\n".join(p.read_text() for p in (self.machine.callboard_home / "runners").rglob("runner.log"))

    def output(self) -> str:
        logs = self.log()[-4000:] or "(no runner.log)"
        return logs + (f"\n--- printed\n{self.out.read_text()[-2000:]}" if self.out.exists() else "")

    def stop(self) -> int:
        """SIGTERM, as a person or `team down` ends it; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.process.wait()
                raise AssertionError(f"the runner did not end on SIGTERM\n{self.output()}") from None
        return self.process.returncode


@contextmanager
def claude_runner(
    claude_code: Path, machine: Machine, model: MockModel, agent: str = "alice"
) -> Iterator[RunnerProcess]:
    """``agent``'s Claude Code runner against ``model``, idle; stopped on the way out."""
    env = claude_code_env(machine, model, {"CALLBOARD_CLAUDE_BIN": str(claude_code)})
    runner = RunnerProcess(machine, agent, "claude", env)
    try:
        runner.wait_state("idle", "the runner to be idle")
        yield runner
    finally:
        runner.stop()


def codex_runner(codex: Path, machine: Machine, model: MockModel, agent: str = "alice") -> RunnerProcess:
    """``agent``'s Codex runner, its Codex offline against the mock model (the machine's one
    CODEX_HOME: one Codex runner a machine)."""
    codex_home = machine.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(offline_config(model))
    env = machine.env(
        {
            "CODEX_HOME": str(codex_home),
            "MOCK_MODEL_API_KEY": "mock-key",
            "CALLBOARD_CODEX_BIN": str(codex),
            **model.proxy_env(),
        }
    )
    return RunnerProcess(machine, agent, "codex", env)


def status_of(machine: Machine, sender: str, message_id: str, agent: str) -> RecipientStatus:
    with machine.client(sender) as client:
        (status,) = [r for r in client.message_status(message_id).recipients if r.agent == agent]
    return status


def answers_then_resumes(runner: RunnerProcess, machine: Machine, model: Any) -> Any:
    """What every per-turn CLI's runner must show: ready once its CLI answered ``--version``;
    idle, no CLI process and no model request; woken by bob's message, it answers through our MCP tool; the status says surfaced via the
    runner; the next turn resumes the same CLI session (its request carries the first turn). The
    report after the second turn."""
    runner.wait_state("idle", "the runner to be idle")
    assert runner.said_before_ready(f"{runner.cli} ready: ", "answered --version"), runner.output()
    assert model.model_requests() == [] and runner.cli_pids() == []  # idle: no CLI process at all
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text="Please say hello back."))
    wait_until(lambda: model.requests_mentioning("Please say hello back."), timeout=RUN_TIMEOUT, what="the request")
    (answer,) = wait_until(lambda: machine.mailbox("bob"), timeout=RUN_TIMEOUT, what="alice's answer")
    assert answer.message.sender == "alice" and answer.message.text == model.tool_input["message"]
    first = runner.wait_state("idle", "the first turn to end", turns=1)
    assert first.cli_session_id and first.input_tokens > 0, first
    status = status_of(machine, "bob", sent.message_id, "alice")
    assert status.via == "runner" and status.state in ("surfaced", "read", "acked"), status

    with machine.client("bob") as bob:
        bob.send(SendRequest(to="alice", text="And a second word, please."))
    second_request = wait_until(
        lambda: model.requests_mentioning("And a second word, please."), timeout=RUN_TIMEOUT, what="turn two"
    )
    assert second_request[0].mentions("Please say hello back."), "the second turn did not resume the session"
    second = runner.wait_state("idle", "the second turn to end", turns=2)
    assert second.cli_session_id == first.cli_session_id
    return second


def in_records(files: Iterable[Path], message_id: str, is_input: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether a JSON-lines record of ``files`` (a CLI's session store) that ``is_input`` (the
    turn's input, as the CLI records it) names ``message_id``."""
    for path in files:
        for line in path.read_text().splitlines():
            if message_id in line and is_input(json.loads(line)):
                return True
    return False


def goes_on_after_a_kill(
    runner: RunnerProcess, machine: Machine, model: MockModel, in_store: Callable[[str], bool]
) -> str:
    """What a per-turn CLI's runner must show when the CLI is killed mid-turn (the model holding
    its answer) with the turn's mail in its session's store (``in_store(message_id)``): the next
    turn goes on with the session — its input says the last turn was interrupted, and every model
    request after the kill carries the mail once — and ends, the mail read and surfaced once,
    via the runner. The message's id."""
    text = "Please answer once: HELD-IN-SESSION."
    model.hold(text)
    with machine.client("bob") as bob:
        sent = bob.send(SendRequest(to="alice", text=text))
    wait_until(lambda: in_store(sent.message_id), timeout=RUN_TIMEOUT, what="the mail in the session's store")
    wait_until(lambda: [r for r in model.model_requests() if text in json.dumps(r.body)], timeout=RUN_TIMEOUT)
    (cli,) = runner.cli_pids()
    before = len(model.model_requests())
    os.killpg(cli, signal.SIGKILL)  # the CLI and what it runs (a launcher's binary)
    wait_until(lambda: process_gone(cli), timeout=RUN_TIMEOUT, what="the CLI to end")
    model.release()
    status = wait_until(
        lambda: (s := status_of(machine, "bob", sent.message_id, "alice")).state == "read" and s,
        timeout=RUN_TIMEOUT,
        what="the mail read at the end of the turn after the kill",
    )
    assert status.via == "runner" and [e.event for e in status.history].count("surfaced") == 1, status
    after = [json.dumps(r.body) for r in model.model_requests()[before:] if text in json.dumps(r.body)]
    assert after, model.summary()
    assert all(body.count(text) == 1 and body.count(f"id: {sent.message_id}") == 1 for body in after), after[0]
    assert json.dumps(prompts.INTERRUPTED_TEXT)[1:-1] in after[0]
    return sent.message_id
