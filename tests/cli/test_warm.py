"""Everyday commands start like a small tool: the ``callboard`` process of a send, read,
status or who imports no typer, rich, pydantic, httpx nor the service — the warm server it
started on first use (cli/warm_server.py) runs the command — and says and exits exactly what
the command run in its own process says and exits.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from callboard.cli import warm_client
from callboard.cli.main import ALL_MODULES, COMMAND_MODULES, SUBCOMMAND_MODULES
from tests.support.cli_runner import CLI, describe
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

HEAVY = ("typer", "click", "rich", "pydantic", "httpx", "callboard.service", "callboard.store", "callboard.model")
COLD = {"CALLBOARD_WARM": "0"}  # the command in its own process, as before


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[CLI]:
    cli = CLI(tmp_path)
    yield cli
    (cli.callboard_home / warm_client.SOCKET_FILE).unlink(missing_ok=True)  # its server ends within a second


def python(cli: CLI, *argv: str, agent: str = "alice") -> subprocess.CompletedProcess[str]:
    """Run ``python <argv>`` as ``agent`` on the test's machine."""
    return subprocess.run(
        [sys.executable, *argv],
        env=cli.env(agent),
        cwd=cli.workdir,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def imported(cli: CLI, *args: str, agent: str = "alice") -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``callboard <args>`` under ``-X importtime``: the process and the modules it imported."""
    proc = python(cli, "-X", "importtime", "-m", "callboard", *args, agent=agent)
    modules = {m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)", proc.stderr, re.M)}
    proc.stderr = "".join(line for line in proc.stderr.splitlines(keepends=True) if not line.startswith("import time:"))
    return proc, modules


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY or any(m.startswith(h) for h in HEAVY if "." in h)}


def warmed(cli: CLI) -> None:
    """The first command starts the warm server; wait until a send is served by it (lean). It
    idles a minute, not the tests' usual 5 s: a cold run between two warm ones may take longer
    on a loaded machine, and the next warm one would find no server."""
    assert cli.run("read", agent="bob", env={"CALLBOARD_WARM_IDLE": "60"}).returncode == 0

    def lean_send() -> bool:
        proc, modules = imported(cli, "send", "bob", "warming")
        assert proc.returncode == 0, describe(proc)
        return not heavy(modules)

    wait_until(lean_send, timeout=60, what="a send served by the warm server", interval=0.2)


def test_a_send_imports_nothing_heavy_and_says_what_a_cold_send_says(cli: CLI):
    warmed(cli)
    for args in (["send", "bob", "hello there"], ["read", "--peek"], ["status", "nope"], ["who"], ["inbox"]):
        proc, modules = imported(cli, *args)
        assert heavy(modules) == set(), (args, sorted(heavy(modules)))
        cold = cli.run(*args, agent="alice", env=COLD)
        if args[0] == "send":  # a new id each time
            proc.stdout, cold.stdout = (re.sub(r"[0-9a-f-]{36}", "<id>", p.stdout) for p in (proc, cold))
        assert (proc.returncode, proc.stdout, proc.stderr) == (cold.returncode, cold.stdout, cold.stderr), args
    texts = [m["message"]["parts"][0]["text"] for m in cli.run_json("read", agent="bob")["items"]]
    assert texts.count("hello there") == 2 and set(texts) == {"warming", "hello there"}  # sent warm and cold


def test_errors_exit_codes_stdin_and_the_callers_folder_are_the_callers(cli: CLI):
    warmed(cli)
    project = cli.workdir / "webapp"
    project.mkdir()
    (project / ".callboard-agent").write_text("carol\n")
    env = cli.env()  # no CALLBOARD_AGENT: the agent file of the working folder names carol
    for extra in ({}, COLD):
        sent = subprocess.run(
            [sys.executable, "-m", "callboard", "send", "bob", "-", "--json"],
            env={**env, **extra},
            cwd=project,
            input="from stdin\n",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert sent.returncode == 0, describe(sent)
    items = cli.run_json("read", agent="bob")["items"]
    assert [(m["message"]["sender"], m["message"]["parts"][0]["text"]) for m in items[-2:]] == [
        ("carol", "from stdin\n")
    ] * 2
    for args in (["status", "not-an-id"], ["send", "", "x"], ["read", "--limit", "many"]):
        warm, cold = cli.run(*args, agent="alice"), cli.run(*args, agent="alice", env=COLD)
        assert warm.returncode == cold.returncode == 2, describe(warm)
        assert (warm.stdout, warm.stderr) == (cold.stdout, cold.stderr)
        assert warm.stderr.startswith("error: ") and "Traceback" not in warm.stderr


def test_the_server_ends_when_its_socket_is_removed(cli: CLI):
    warmed(cli)
    socket_path = cli.callboard_home / warm_client.SOCKET_FILE
    (pid,) = [
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit()
        and b"callboard.cli.warm_server" in _cmdline(p)
        and str(cli.callboard_home).encode() in _cmdline(p)
    ]
    socket_path.unlink()
    wait_until(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), timeout=10, what="the server to end")


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def test_what_lives_long_or_sets_up_is_not_served_and_the_rest_is():
    assert warm_client.served(["send", "bob", "x"], {})
    assert not warm_client.served(["send", "bob", "x"], {"CALLBOARD_WARM": "0"})
    assert not warm_client.served(["read", "--follow"], {}) and not warm_client.served(["read", "-nf", "3"], {})
    assert warm_client.served(["read", "--wait", "5"], {})
    assert warm_client.served(["hook", "prompt", "--client", "claude"], {})
    assert not warm_client.served(["hook", "wake", "--client", "claude"], {})  # the waiter: a process of its own
    for args in (
        ["runner", "logs", "bob", "-f"],
        ["team", "logs", "dev", "--follow"],
        ["session", "keep", "--pid", "1"],
    ):
        assert not warm_client.served(args, {}), args
    for args in (["team", "up"], ["team", "down"], ["run"], ["install", "claude"], ["up"], ["mcp"], ["login", "x"]):
        assert not warm_client.served(args, {}), args
    worker = (
        ["task", "update", "t", "--state", "completed"],
        ["task", "show", "t"],
        ["task", "list"],
        ["task", "send", "bob", "x"],
        ["task", "cancel", "t"],
        ["agent", "card", "bob"],
        ["agent", "list"],
        ["channel", "post", "#c", "x"],
        ["whoami"],
        ["runner", "logs", "bob", "-n", "5"],
        ["runner", "status"],
        ["session", "start"],
        ["team", "status"],
    )
    for args in worker:
        assert warm_client.served(args, {}), args


# The commands a worker of a task runs, each compared with the same command in its own process.
WORKER_COMMANDS = (
    ["task", "update", "{task}", "--state", "working", "--message", "on it"],
    ["task", "show", "{task}"],
    ["task", "list"],
    ["task", "list", "--json"],
    ["whoami"],
    ["agent", "list"],
    ["agent", "card", "bob"],
    ["channel", "list"],
    ["channel", "post", "#ops", "progress"],
    ["task", "update", "no-such-task", "--state", "working"],  # errors: the same line, exit 2
    ["task", "show", "no-such-task", "--json"],
    ["channel", "post", "#nowhere", "x"],
    ["task", "update", "{task}", "--state", "sideways"],
)


def test_a_workers_commands_import_nothing_heavy_and_say_what_they_say_cold(cli: CLI):
    warmed(cli)
    task = cli.run_json("task", "send", "bob", "review it", agent="alice")["task"]["id"]
    assert cli.run("channel", "create", "#ops", agent="bob").returncode == 0
    assert cli.run("channel", "join", "#ops", agent="alice").returncode == 0
    for shape in WORKER_COMMANDS:
        args = [word.format(task=task) for word in shape]
        proc, modules = imported(cli, *args, agent="bob")
        assert heavy(modules) == set(), (args, sorted(heavy(modules)))
        cold = cli.run(*args, agent="bob", env=COLD)
        proc.stdout, cold.stdout = (_unstamped(p.stdout) for p in (proc, cold))
        assert (proc.returncode, proc.stdout, proc.stderr) == (cold.returncode, cold.stdout, cold.stderr), args


def _unstamped(text: str) -> str:
    """``text`` without what differs between two runs of one command: a new message's id, the
    times and the generation of a task the first run moved."""
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)
    text = re.sub(r"\d{4}-\d\d-\d\d[T ][\d:.]+(Z|[+-]\d\d:\d\d)?", "<time>", text)
    return re.sub(r"(generation\W{0,3})\d+", r"\1<n>", text)


def test_a_session_started_warm_is_the_callers_parent(cli: CLI):
    """``session start`` registers the process that ran the command (its parent), served or not."""
    warmed(cli)
    for extra in ({}, COLD):
        proc = subprocess.run(
            [sys.executable, "-m", "callboard", "session", "start", "--json"],
            env={**cli.env("alice"), **extra},
            cwd=cli.workdir,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, describe(proc)
        assert json.loads(proc.stdout)["pid"] == os.getpid(), (extra, proc.stdout)


def test_each_command_is_registered_by_the_module_the_table_names():
    code = (
        "import importlib, json, typer.main\n"
        "from callboard.cli.app import app\n"
        "from callboard.cli.main import ALL_MODULES\n"
        "found = {}\n"
        "for module in ALL_MODULES:\n"
        "    before = set(typer.main.get_group(app).commands)\n"
        "    importlib.import_module(f'callboard.cli.{module}')\n"
        "    found.update({name: module for name in set(typer.main.get_group(app).commands) - before})\n"
        "print(json.dumps(found))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == COMMAND_MODULES
    assert set(ALL_MODULES) == {*COMMAND_MODULES.values(), *(m for more in SUBCOMMAND_MODULES.values() for m in more)}


# A thin client that, once its request is sent, waits until the served command has ended
# before going on (a client descheduled on a loaded machine): the command must count as run.
LATE_CLIENT = """
import _socket, os, sys, time
from callboard.cli import warm_client

class Late(_socket.socket):
    def sendmsg(self, *args):
        sent = super().sendmsg(*args)
        deadline = time.monotonic() + 30
        while b"\\nX" not in self.recv(256, _socket.MSG_PEEK):  # the command's exit line is in
            if time.monotonic() > deadline:
                sys.exit("the command did not end in 30 s")
            time.sleep(0.01)
        pid = int(self.recv(256, _socket.MSG_PEEK).split(b"\\n")[0][1:])
        while os.path.exists(f"/proc/{pid}"):  # and its process, the connection's other end, is gone
            time.sleep(0.01)
        return sent

shim = type(sys)("_socket_late")
shim.__dict__.update({k: getattr(_socket, k) for k in dir(_socket) if not k.startswith("__")})
shim.socket = Late
warm_client._socket = shim
code = warm_client.run(sys.argv[1:])
sys.exit(f"not served: {code}" if code is None else code)
"""


def test_a_command_that_ended_before_its_client_looked_is_not_run_again(cli: CLI):
    warmed(cli)
    proc = python(cli, "-c", LATE_CLIENT, "send", "bob", "only once")
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.count("sent ") == 1, describe(proc)
    texts = [m["message"]["parts"][0]["text"] for m in cli.run_json("read", agent="bob")["items"]]
    assert texts.count("only once") == 1, texts
