"""Fixtures for driving real coding CLIs against ``callboard mcp``, offline.

Each CLI is installed from npm at the exact version that was verified against a mock model
(see the pins below), once, into a cache folder shared by every run on the machine:
``$CALLBOARD_TEST_CLI_CACHE`` or ``~/.cache/callboard-test-clis/<cli>-<version>/``. A file
lock keeps parallel runs from installing into the same folder at once. A failed install fails
the test with npm's output: these tests need Node and npm, and are never skipped.

Fixtures:
  claude_code, codex  the path of the installed CLI's executable (session-wide)
  claude_code_current the current Claude Code, whose sessions have a messaging socket
  machine             an isolated HOME, CALLBOARD_HOME and working folder; ``.env()`` builds a
                      CLI's environment, ``.mcp_server(agent)`` our stdio server's launch spec,
                      ``.run()`` runs a CLI with a deadline, ``.start()`` starts one that stays
                      (stdin open; killed at the end of the test), ``.mailbox(agent)`` reads a
                      mailbox, ``.client(agent)`` acts as an agent on the same store,
                      ``.install(client)`` runs ``callboard install`` in the working folder,
                      ``.processes(command)`` finds the processes working on its store
  model               a started ``MockModel`` whose script calls send_message to bob
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from callboard.client.local import LocalClient
from callboard.config import Settings
from callboard.model import MailItem
from tests.support.cli_runner import isolated_env
from tests.support.mock_model import MockModel
from tests.support.waiting import wait_until

INSTALL_TIMEOUT = 600.0  # a first install downloads a few hundred MB
VERSION_TIMEOUT = 60.0
RUN_TIMEOUT = 120.0  # one headless run of a CLI, start to exit
LEFTOVER_TIMEOUT = 10.0  # after the CLI exits, for what it started to exit too
TEST_TIMEOUT = INSTALL_TIMEOUT + 2 * RUN_TIMEOUT
WAKE_TIMEOUT = 30.0  # from a send to the model's request: well under a second when it works  # pytest-timeout counts the first test's install too

# Variables from the environment that runs pytest that could point a CLI at a real account,
# another config folder or a real endpoint: removed from every CLI's environment.
FOREIGN_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "AZURE_OPENAI_", "GEMINI_", "GOOGLE_")
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@dataclass(frozen=True)
class NpmCli:
    name: str
    package: str
    version: str
    executable: str
    answers_version: bool = True  # `<executable> --version` prints the version (a CLI does; a library's tool may not)

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


# The versions verified offline against a mock model (shared/reference/coding-clis.md).
CLAUDE_CODE = NpmCli("claude-code", "@anthropic-ai/claude-code", "2.1.197", "claude")
# npm's latest when the messaging socket was verified (claude-code-messaging-socket.md). Beside
# 2.1.197, not instead: there our tools are deferred behind ToolSearch, so the send_message
# test's script would not run as it is.
CLAUDE_CODE_CURRENT = NpmCli("claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude")
CODEX = NpmCli("codex", "@openai/codex", "0.171.0", "codex")
COPILOT = NpmCli("copilot", "@github/copilot", "1.0.102", "copilot")
GEMINI = NpmCli("gemini", "@google/gemini-cli", "0.61.0", "gemini")


def cli_cache() -> Path:
    configured = os.environ.get("CALLBOARD_TEST_CLI_CACHE")
    if configured:
        return Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "callboard-test-clis"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not on PATH: the real-client tests need Node (20 or newer) and npm")
    return found


def _output(proc: subprocess.CompletedProcess[str] | subprocess.TimeoutExpired) -> str:
    def text(value: str | bytes | None) -> str:
        return value.decode(errors="replace") if isinstance(value, bytes) else value or ""

    return f"--- stdout\n{text(proc.stdout)}\n--- stderr\n{text(proc.stderr)}"


def install(cli: NpmCli) -> Path:
    """The executable of ``cli``, installed from npm into the cache unless it is there already."""
    npm = _tool("npm")
    _tool("node")
    cache = cli_cache()
    cache.mkdir(parents=True, exist_ok=True)
    folder = cache / f"{cli.name}-{cli.version}"
    executable = folder / "node_modules" / ".bin" / cli.executable
    installed = folder / ".installed"  # written last: a folder without it is a broken install
    with open(cache / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run installing the same CLI: wait for it
        if installed.exists() and executable.exists():
            return executable
        shutil.rmtree(folder, ignore_errors=True)
        command = [
            npm,
            "install",
            "--prefix",
            str(folder),
            "--no-audit",
            "--no-fund",
            "--no-update-notifier",
            "--ignore-scripts=false",  # Claude Code's postinstall puts its native binary in place
            "--include=optional",  # the platform's native package is an optional dependency
            cli.spec,
        ]
        try:
            proc = subprocess.run(
                command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired as error:
            pytest.fail(f"npm install {cli.spec} did not finish in {INSTALL_TIMEOUT:g} s\n{_output(error)}")
        if proc.returncode != 0 or not executable.exists():
            pytest.fail(f"npm install {cli.spec} failed (exit {proc.returncode})\n{_output(proc)}")
        if cli.answers_version:
            _check_version(cli, executable)
        installed.write_text(cli.version + "\n")
    return executable


def _check_version(cli: NpmCli, executable: Path) -> None:
    # In a throwaway HOME: a CLI may create its config folder on any start.
    with tempfile.TemporaryDirectory(prefix="callboard-cli-version-") as home:
        env = {**os.environ, "HOME": home}
        try:
            proc = subprocess.run(
                [str(executable), "--version"],
                capture_output=True,
                text=True,
                timeout=VERSION_TIMEOUT,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        except subprocess.TimeoutExpired as error:
            pytest.fail(f"{executable} --version did not answer in {VERSION_TIMEOUT:g} s\n{_output(error)}")
    if proc.returncode != 0 or cli.version not in proc.stdout:
        pytest.fail(f"{executable} --version is not {cli.version} (exit {proc.returncode})\n{_output(proc)}")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="session")
def claude_code() -> Path:
    return install(CLAUDE_CODE)


@pytest.fixture(scope="session")
def claude_code_current() -> Path:
    return install(CLAUDE_CODE_CURRENT)


@pytest.fixture(scope="session")
def codex() -> Path:
    return install(CODEX)


@pytest.fixture(scope="session")
def copilot() -> Path:
    return install(COPILOT)


@pytest.fixture(scope="session")
def gemini() -> Path:
    return install(GEMINI)


def claude_code_env(machine: Machine, model: MockModel, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Claude Code's environment on ``machine``, talking to ``model`` and to nothing else."""
    return machine.env(
        {
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": "sk-ant-callboard-test-0123456789",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            # Connect the MCP servers before the first model request (by default -p starts without
            # them and offers a WaitForMcpServers tool), and give a slow machine time to start ours.
            "MCP_CONNECTION_NONBLOCKING": "false",
            "MCP_CONNECT_TIMEOUT_MS": "60000",
            "MCP_TIMEOUT": "60000",
            **model.proxy_env(),
            **(extra or {}),
        }
    )


# --- one isolated machine ----------------------------------------------------------------------


class LiveCli:
    """A CLI started with its stdin open (stream-json input): what it prints is collected as it
    comes, line by line; ``wait_for`` waits on it with a deadline."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self._lock = threading.Lock()
        self._stdout: list[str] = []
        self._stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._collect, args=(process.stdout, self._stdout), daemon=True),
            threading.Thread(target=self._collect, args=(process.stderr, self._stderr), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _collect(self, stream: Any, lines: list[str]) -> None:
        for line in stream:
            with self._lock:
                lines.append(line)

    @property
    def pid(self) -> int:
        return self.process.pid

    def write(self, document: dict[str, Any]) -> None:
        """One JSON line on the CLI's stdin."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(document) + "\n")
        self.process.stdin.flush()

    def say(self, text: str) -> None:
        """A user message on a stream-json stdin."""
        self.write({"type": "user", "message": {"role": "user", "content": text}})

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            lines = list(self._stdout)
        return [json.loads(line) for line in lines if line.startswith("{")]

    def results(self) -> list[dict[str, Any]]:
        """The ``result`` events so far: one per finished turn."""
        return [e for e in self.events() if e.get("type") == "result"]

    def wait_for(self, condition: Any, what: str, timeout: float = RUN_TIMEOUT) -> Any:
        def check() -> Any:
            if self.process.poll() is not None and not condition():
                pytest.fail(f"the CLI exited ({self.process.returncode}) before {what}{self.transcript()}")
            return condition()

        return wait_until(check, timeout=timeout, what=f"{what}{self.transcript()}", interval=0.01)

    def transcript(self) -> str:
        with self._lock:
            return f"\n--- stdout\n{''.join(self._stdout)}\n--- stderr\n{''.join(self._stderr)}"

    def close(self, timeout: float = RUN_TIMEOUT) -> int:
        """End stdin and wait for the CLI and everything it started to exit; its exit status."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the CLI did not exit {timeout:g} s after its stdin closed{self.transcript()}")
        _wait_group_gone(self.process.pid, str(self.process.args[0]))
        for reader in self._readers:
            reader.join(timeout=LEFTOVER_TIMEOUT)
        return self.process.returncode

    def kill(self) -> None:
        _kill_group(self.process.pid)
        self.process.wait()


def _wait_group_gone(pgid: int, name: str) -> None:
    """The CLI's children (our MCP server among them) end with it; fail if they do not."""
    deadline = time.monotonic() + LEFTOVER_TIMEOUT
    while _group_alive(pgid):
        if time.monotonic() > deadline:
            left = subprocess.run(["ps", "-o", "pid,args", "-g", str(pgid)], capture_output=True, text=True)
            _kill_group(pgid)
            pytest.fail(f"{name} exited but left processes running {LEFTOVER_TIMEOUT:g} s later:\n{left.stdout}")
        time.sleep(0.02)


@dataclass
class Machine:
    root: Path

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.callboard_home = self.root / "callboard-home"
        self.workdir = self.root / "work"
        for folder in (self.home, self.callboard_home, self.workdir):
            folder.mkdir(parents=True, exist_ok=True)
        self.workdir = self.workdir.resolve()
        self._started: list[LiveCli] = []

    def mcp_server(self, agent: str) -> dict[str, object]:
        """How a CLI launches our stdio server acting as ``agent`` (command, args, env)."""
        return {
            "command": sys.executable,
            "args": ["-m", "callboard", "mcp"],
            "env": {"CALLBOARD_AGENT": agent, "CALLBOARD_HOME": str(self.callboard_home)},
        }

    def env(self, extra: Mapping[str, str]) -> dict[str, str]:
        """A CLI's environment: isolated HOME, nothing of the caller's accounts or proxies, and
        no CALLBOARD_* at all (our server gets its agent and store from the CLI's config)."""
        removed: dict[str, str | None] = {
            key: None
            for key in os.environ
            if key.upper().startswith(FOREIGN_PREFIXES) or key.upper() in PROXY_VARIABLES
        }
        # Callboard installed as a user has it: 'callboard' on the PATH the agent CLI starts with
        # (project-scope settings name the bare command, README "A team's repository").
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        return isolated_env(self.home, self.callboard_home, {**removed, "CALLBOARD_HOME": None, "PATH": path, **extra})

    def agent_env(self, agent: str) -> dict[str, str]:
        """What a CLI's environment adds for settings written by ``callboard install`` (which
        name no agent and no store): its hooks and servers inherit it."""
        return {"CALLBOARD_AGENT": agent, "CALLBOARD_HOME": str(self.callboard_home)}

    def processes(self, command: str) -> list[int]:
        """The pids of the processes that work on this machine's store (CALLBOARD_HOME in
        their environment, as our servers and the hooks of installed settings have it) and
        whose command line holds ``command``: ``machine.processes("callboard hook wake")``."""
        marker = f"CALLBOARD_HOME={self.callboard_home}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if command.encode() not in (entry / "cmdline").read_bytes().replace(b"\0", b" "):
                    continue
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:  # gone meanwhile, or not ours to read
                continue
        return found

    def install(self, client: str, scope: str = "project") -> str:
        """Run the real ``callboard install <client> --scope <scope>`` in the working folder
        (this machine's HOME and store); what it printed. Fails the test if it fails."""
        env = isolated_env(self.home, self.callboard_home, {"CLAUDE_CONFIG_DIR": None})
        proc = subprocess.run(
            [sys.executable, "-m", "callboard", "install", client, "--scope", scope],
            env=env,
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode != 0:
            pytest.fail(f"callboard install {client} --scope {scope} failed (exit {proc.returncode})\n{_output(proc)}")
        return proc.stdout

    def run(
        self, argv: Sequence[str | Path], env: Mapping[str, str], timeout: float = RUN_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        """Run a CLI headless in the working folder; on the deadline kill it with everything it
        started (our MCP server included) and fail with what it printed."""
        args = [str(a) for a in argv]
        process = self._popen(args, env, subprocess.DEVNULL)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)
            stdout, stderr = process.communicate()
            pytest.fail(f"{args[0]} did not finish in {timeout:g} s\n--- stdout\n{stdout}\n--- stderr\n{stderr}")
        _wait_group_gone(process.pid, args[0])
        return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)

    def _popen(self, args: list[str], env: Mapping[str, str], stdin: int) -> subprocess.Popen[str]:
        """A CLI in the working folder, in a process group of its own (killed whole at the end)."""
        return subprocess.Popen(
            args,
            env=dict(env),
            cwd=self.workdir,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )

    def start(self, argv: Sequence[str | Path], env: Mapping[str, str]) -> LiveCli:
        """Start a CLI in the working folder with its stdin open; whatever still runs at the end
        of the test is killed with everything it started."""
        process = self._popen([str(a) for a in argv], env, subprocess.PIPE)
        live = LiveCli(process)
        self._started.append(live)
        return live

    def stop_all(self) -> None:
        for live in self._started:
            if _group_alive(live.pid):
                live.kill()

    @contextmanager
    def client(self, agent: str) -> Iterator[LocalClient]:
        """A LocalClient acting as ``agent`` on the store our server uses."""
        env = {"CALLBOARD_HOME": str(self.callboard_home)}
        client = LocalClient.open(Settings.load(env), agent=agent, env=env)
        try:
            yield client
        finally:
            client.service.store.close()

    def mailbox(self, agent: str) -> list[MailItem]:
        """``agent``'s unread mail in the store our server used (read: marked read)."""
        env = {"CALLBOARD_HOME": str(self.callboard_home)}
        client = LocalClient.open(Settings.load(env), agent=agent, env=env)
        try:
            return client.read().items
        finally:
            client.service.store.close()


@pytest.fixture
def socket_tmp() -> Iterator[Path]:
    """Claude Code's TMPDIR, where it binds ``cc-socks/<pid>.sock``: short (a socket path has
    about 100 bytes) and this test's own."""
    with tempfile.TemporaryDirectory(prefix="cb-cc-") as folder:
        yield Path(folder)


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[Machine]:
    machine = Machine(tmp_path)
    try:
        yield machine
    finally:
        machine.stop_all()


@pytest.fixture
def model(request: pytest.FixtureRequest) -> Iterator[MockModel]:
    """A mock model whose first turn calls our send_message: to bob, a text naming this test."""
    tool_input = {
        "to": "bob",
        "message": f"Hello bob, this is alice through {request.node.name}.",
        "subject": "real client",
    }
    with MockModel(tool_input=tool_input) as server:
        yield server


def assert_sent_through_our_server(machine: Machine, model: MockModel, client: str, tool: str, seen: str) -> None:
    """What every real client's run must show: the model was offered our tool under ``tool``
    and got exactly one result back; bob's mailbox holds the message the model wrote, from
    alice; the client reached no other host."""
    assert model.offered_tool() == tool, seen
    results = model.tool_results()
    assert len(results) == 1, seen
    mail = machine.mailbox("bob")
    assert len(mail) == 1, [m.message for m in mail]
    message = mail[0].message
    assert message.sender == "alice"
    assert message.text == model.tool_input["message"]
    assert message.subject == model.tool_input["subject"]
    assert message.id in results[0], seen  # the result the model saw names that message
    assert model.proxied() == [], f"{client} tried to reach another host:{seen}"
