"""What another agent wrote reaches a person's terminal as text, never as control.

Mallory (another agent, an outside A2A agent's card, a hub, a runner's CLI, a mailbox file)
puts an escape sequence in every field it controls: one that clears the screen and sets the
clipboard (OSC 52), a C1 control, a backspace, DEL and a lone CR, right-to-left overrides, and
rich markup. Bob runs each command on a real pseudo-terminal, as a person would: what reaches
the terminal holds none of those characters (only rich's own styles and line ends), shows
each escaped (``\\u001b[2J``), and prints the markup as typed. ``--json`` keeps every
character exactly as it was sent.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from callboard.procs import process_start_time
from tests.support.cli_runner import CLI, describe
from tests.support.terminal import on_terminal, unobeyed

ATTACK = "\x1b[2J\x1b]52;c;aGk=\x07"  # clear the screen; put "hi" on the clipboard
SHOWN_ATTACK = "\\u001b[2J\\u001b]52;c;aGk=\\u0007"
MARKUP = "[bold]loud[/bold] [link=https://evil.example]x[/link] :fire:"


def hostile(start: str) -> str:
    """``start``, the attack, then characters that reorder or hide text, and markup."""
    return f"{start} {ATTACK} \u202eevil\u202c \x9b31m \x08\x7f\r {MARKUP}"


def assert_shown_not_obeyed(output: str, *, whole: bool = True) -> None:
    """Nothing obeyed; the attack shown escaped; and, unless the field is cut short (``whole``),
    the rest of it too, its markup as typed."""
    assert not unobeyed(output), f"{unobeyed(output)} reached the terminal:\n{output!r}"
    assert SHOWN_ATTACK + " \\u202eevil\\u202c" in output, f"the attack is not shown escaped:\n{output!r}"
    if whole:
        assert " \\u009b31m \\u0008\\u007f\\r " + MARKUP in output, f"not shown as typed:\n{output!r}"
    assert "\x1b]8;" not in output, f"a hyperlink was made:\n{output!r}"


# --- mallory's doing ---------------------------------------------------------------------------

PEER = """
import json, sys
from callboard.client.opening import open_client
from callboard.config import Settings
client = open_client(Settings.load())
given = json.loads(sys.argv[1])
exec(sys.argv[2])
client.close()
"""


def as_peer(cli: CLI, agent: str, code: str, /, **given: Any) -> None:
    """Run ``code`` with ``client`` acting as ``agent`` (and ``given``) through the client API,
    as an agent's own program would."""
    done = subprocess.run(
        [sys.executable, "-c", PEER, json.dumps(given), code],
        env=cli.env(agent),
        cwd=cli.workdir,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@dataclass
class World:
    cli: CLI
    pid: int  # a live process, for sessions
    served: dict[str, tuple[int, Any]]  # what the loopback server answers, by path
    url: str  # the loopback server

    def ok(self, *args: object, agent: str = "mallory", env: dict[str, str] | None = None) -> Any:
        return self.cli.run_json(*args, agent=agent, env=env)

    def pane(self) -> dict[str, str]:
        """Mallory's session, labelled with the attack; the environment of a command run in it."""
        session = self.ok("session", "start", "--pid", self.pid, "--terminal", hostile("tmux:%1"))
        return {"CALLBOARD_SESSION": session["id"]}

    def mail(self) -> str:
        """Mail from mallory's pane to bob, its subject and body the attack: its id."""
        sent = self.ok("send", "bob", hostile("body"), "--subject", hostile("plan"), env=self.pane())
        return sent["message_id"]

    def task(self) -> str:
        """A task bob asked of mallory, moved by mallory with the attack in its status and artifact."""
        task_id = self.ok("task", "send", "mallory", "review it", agent="bob")["task"]["id"]
        artifact = {"name": hostile("report"), "description": hostile("about"), "parts": [{"text": hostile("art")}]}
        moving = (
            "client.update_task(given['id'], state='working', parts=[{'text': given['say']}], artifacts=[given['a']])"
        )
        as_peer(self.cli, "mallory", moving, id=task_id, say=hostile("status"), a=artifact)
        return task_id


Case = Callable[[World], list[object]]


def _read(world: World) -> list[object]:
    world.mail()
    return ["read"]


def _follow(world: World) -> list[object]:
    world.mail()
    return ["read", "--follow", "-n", "1"]


def _inbox(world: World) -> list[object]:
    world.mail()
    return ["inbox"]


def _status(world: World) -> list[object]:
    return ["status", world.mail()]


def _who(world: World) -> list[object]:
    env = world.pane()
    breaking = "client.heartbeat(given['session'], delivery_error=given['error'])"
    as_peer(world.cli, "mallory", breaking, session=env["CALLBOARD_SESSION"], error=hostile("socket refused"))
    # And a Claude Code session on this machine, named by what its model was told.
    folder = world.cli.home / ".claude" / "sessions"
    folder.mkdir(parents=True)
    entry = {"pid": world.pid, "sessionId": "s1", "cwd": hostile("/tmp"), "name": hostile("chat")}
    entry["procStart"] = str(process_start_time(world.pid))
    (folder / f"{world.pid}.json").write_text(json.dumps(entry))
    return ["who"]


def _card(world: World) -> None:
    if "mallory" not in [a["name"] for a in world.ok("agent", "list")]:  # describing oneself creates no one
        world.ok("agent", "create", "mallory")
    world.ok("agent", "describe", "mallory", "--description", hostile("helper"), "--skill", hostile("ops"))


def _agent_list(world: World) -> list[object]:
    _card(world)
    return ["agent", "list"]


def _agent_describe(world: World) -> list[object]:
    _card(world)
    return ["agent", "describe", "mallory"]


def _agent_card(world: World) -> list[object]:
    _card(world)
    return ["agent", "card", "mallory"]


def _channel_list(world: World) -> list[object]:
    world.ok("channel", "create", "ops", "--description", hostile("ops"))
    return ["channel", "list"]


def _task_list(world: World) -> list[object]:
    world.task()
    return ["task", "list"]


def _task_show(world: World) -> list[object]:
    return ["task", "show", world.task()]


def _runner_status(world: World) -> list[object]:
    reporting = """
from datetime import datetime, UTC
from callboard.runners import RunnerReport
now = datetime.now(UTC)
client.report_runner(RunnerReport(agent='mallory', machine='box', pid=4321, cli=given['cli'],
    cli_session_id=given['cli'], state='working', detail=given['detail'], started_at=now, updated_at=now))
"""
    as_peer(world.cli, "mallory", reporting, cli=hostile("generic:x"), detail=hostile("on"))
    return ["runner", "status"]


def _runner_logs(world: World) -> list[object]:
    logging = "from callboard.runner.files import RunnerFiles\n" + (
        "RunnerFiles(Settings.load().home, client.whoami().workspace, 'mallory').log(given['line'])"
    )
    as_peer(world.cli, "mallory", logging, line="said: " + hostile("the CLI"))
    return ["runner", "logs", "mallory"]


def _import_inbox(world: World) -> list[object]:
    tree = world.cli.root / "inbox"
    (tree / "bob").mkdir(parents=True)
    letter = {"id": "m1", "from": "mallory", "timestamp": "2025-01-02T03:04:05Z", "subject": hostile("plan")}
    (tree / "bob" / "m1.json").write_text(json.dumps({**letter, "body": hostile("body")}))
    return ["import-inbox", "--dry-run", tree]


def _remote_card(world: World) -> list[object]:
    """An outside A2A agent whose card describes it with the attack."""
    card = {
        "name": "far",
        "description": hostile("far"),
        "version": "1.0.0",
        "supportedInterfaces": [{"url": f"{world.url}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }
    world.served["/.well-known/agent-card.json"] = (200, card)
    return ["agent", "add-remote", "far", world.url]


def _remote_error(world: World) -> list[object]:
    """Mail to an outside A2A agent that refuses it with the attack as its JSON-RPC error."""
    _remote_card(world)
    world.ok("agent", "add-remote", "far", world.url, agent="bob")
    world.served["/rpc"] = (200, {"jsonrpc": "2.0", "error": {"code": -32603, "message": hostile("refused")}})
    return ["status", world.ok("send", "far", "hi", agent="bob")["message_id"]]


def _hub_error(world: World) -> list[object]:
    """A hub (or what answers at its address) whose error message is the attack: it reaches the
    person's terminal on the error line."""
    world.served["*"] = (400, {"error": {"code": "bad_request", "message": hostile("refused")}})
    return ["inbox"]


CASES: dict[str, Case] = {
    "read": _read,
    "read --follow": _follow,
    "inbox": _inbox,
    "status": _status,
    "who": _who,
    "agent list": _agent_list,
    "agent describe": _agent_describe,
    "agent card": _agent_card,
    "channel list": _channel_list,
    "task list": _task_list,
    "task show": _task_show,
    "runner status": _runner_status,
    "runner logs": _runner_logs,
    "import-inbox": _import_inbox,
    "agent add-remote": _remote_card,
    "status of mail to an outside agent": _remote_error,
    "hub error": _hub_error,
}
ON_HUB = {"hub error"}  # bob's command goes to the loopback server as his hub
FAILS = {"hub error": 2}  # the exit status a case's command ends with
CUT = {"inbox", "task list", "status of mail to an outside agent"}  # show the start of the field only


class _Answers(BaseHTTPRequestHandler):
    served: dict[str, tuple[int, Any]]

    def _answer(self) -> None:
        status, body = self.served.get(self.path.split("?")[0]) or self.served.get("*") or (404, {})
        if body.get("jsonrpc"):  # an answer to the request it was sent: its id
            asked = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or "{}")
            body = {**body, "id": asked.get("id")}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class names it)
        pass


@pytest.fixture
def world(cli: CLI, live_process: subprocess.Popen[bytes]) -> Iterator[World]:
    served: dict[str, tuple[int, Any]] = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Answers", (_Answers,), {"served": served}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield World(cli, live_process.pid, served, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("case", list(CASES))
def test_what_others_wrote_reaches_the_terminal_escaped(world: World, case: str) -> None:
    args = CASES[case](world)
    hub = {"CALLBOARD_HUB": world.url, "CALLBOARD_TOKEN": "cb_test"} if case in ON_HUB else {}
    status, output = on_terminal(world.cli, *args, agent="bob", env=hub)
    assert status == FAILS.get(case, 0), output
    assert_shown_not_obeyed(output, whole=case not in CUT)


def test_a_body_keeps_its_lines_and_indentation_on_the_terminal(world: World) -> None:
    world.ok("send", "bob", "first line\r\n\tindented\nlast " + ATTACK)
    status, output = on_terminal(world.cli, "read", agent="bob")
    assert status == 0, output
    plain = output.replace("\r\n", "\n")
    assert "first line\n" in plain and "indented\nlast " + SHOWN_ATTACK in plain, repr(output)
    assert not unobeyed(output), repr(output)


def test_json_keeps_every_character_another_agent_sent(world: World) -> None:
    message_id = world.mail()
    read = world.cli.run("read", "--json", agent="bob")
    assert read.returncode == 0, describe(read)
    message = json.loads(read.stdout)["items"][0]["message"]
    assert message["id"] == message_id
    assert (message["subject"], message["parts"][0]["text"]) == (hostile("plan"), hostile("body"))
    assert message["sender_terminal"] == hostile("tmux:%1")
    # Only JSON's own escapes (of C0 controls) stand for a character: the rest is there as sent.
    assert "\u202eevil\u202c \x9b31m" in read.stdout and MARKUP in read.stdout
    _card(world)
    described = world.cli.run_json("agent", "describe", "mallory", agent="bob")
    assert (described["description"], described["skills"]) == (hostile("helper"), [hostile("ops")])


def test_an_error_line_quoting_a_hub_stays_exact_in_json(world: World) -> None:
    world.served["*"] = (400, {"error": {"code": "bad_request", "message": hostile("refused")}})
    hub = {"CALLBOARD_HUB": world.url, "CALLBOARD_TOKEN": "cb_test"}
    proc = world.cli.run("inbox", "--json", agent="bob", env=hub)
    assert proc.returncode == 2, describe(proc)
    assert json.loads(proc.stdout)["error"] == {"code": "bad_request", "message": hostile("refused")}


@pytest.mark.parametrize("where", ["stdout", "a pipe"])
def test_markup_in_a_body_prints_as_typed_wherever_it_goes(world: World, where: str) -> None:
    world.ok("send", "bob", MARKUP + " " + ATTACK)
    if where == "stdout":
        status, output = on_terminal(world.cli, "read", agent="bob")
    else:
        proc = world.cli.run("read", agent="bob")
        status, output = proc.returncode, proc.stdout
    assert status == 0, output
    assert MARKUP + " " + SHOWN_ATTACK in output and not unobeyed(output), repr(output)


def test_the_consoles_show_what_a_print_forgot_to_escape(capsys: pytest.CaptureFixture[str]) -> None:
    """The floor under every print: a value put in without ``render.peer`` is still shown escaped."""
    from callboard.cli import render

    out, err = render.make_consoles()
    out.print(f"body {ATTACK} \u202eevil \x9b31m :fire:")
    err.print(f"note {ATTACK}")
    printed = capsys.readouterr()
    shown = "\\u001b[2J\\u001b]52;c;aGk="  # rich itself drops a BEL (render.peer shows it: \\u0007)
    assert printed.out == f"body {shown} \\u202eevil \\u009b31m :fire:\n"
    assert printed.err == f"note {shown}\n"
