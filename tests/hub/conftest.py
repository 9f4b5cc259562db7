"""End-to-end tests of the hub: ``callboard up`` runs as a subprocess on an ephemeral loopback
port and every test speaks real HTTP to it (raw httpx, ``HubClient``, or the CLI as a subprocess).

Each hub gets its own HOME and CALLBOARD_HOME under a temp folder and never inherits a
CALLBOARD_* variable from the environment that runs pytest.

Fixtures:
  hub        one hub shared by the whole session; tests that use it keep to their own names
             (``unique``) and workspaces (``tenant``), so sharing it is safe
  make_hub   a factory of fresh hubs, for tests that kill, stop or restart one
  tenant     a fresh workspace on the shared hub with a user token of its own
  cli        the command line of an isolated "machine" (``make_cli`` for more machines)

Every hub's log is checked after each test: an unexpected error (a 500) fails the test that
caused it.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from callboard.client.hub import HubClient
from tests.support import cli_runner
from tests.support.cli_runner import isolated_env, mark_e2e
from tests.support.waiting import scaled, wait_until

# Deadlines in seconds of an idle machine, scaled where waited (tests/support/waiting.py): a
# cold start of the hub takes seconds on a loaded machine.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
HTTP_TIMEOUT = 15.0

LISTENING = re.compile(r"hub listening on (https?://\S+)")
ADMIN_TOKEN = re.compile(r"admin token \(shown once.*: (cb_\S+)\s*$")
FAILURE_IN_LOG = ("Traceback", "unexpected error")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_e2e(items, Path(__file__).parent)


def unique(prefix: str) -> str:
    """A name no other test uses (valid as an agent, channel or workspace name)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def auth_headers(token: str | None, agent: str | None = None, workspace: str | None = None) -> dict[str, str]:
    headers = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if agent is not None:
        headers["X-Callboard-Agent"] = agent
    if workspace is not None:
        headers["X-Callboard-Workspace"] = workspace
    return headers


def _drain(stream: IO[str], into: list[str]) -> None:
    for line in stream:
        into.append(line.rstrip("\n"))


# --- the hub process ---------------------------------------------------------------------------


class Hub:
    """One ``callboard up --port 0`` process and its store: start, kill, terminate, start again."""

    instances: list[Hub] = []

    def __init__(
        self,
        root: Path,
        *,
        rate_limit: float | None = None,
        args: Sequence[str] = (),
        prints_admin: bool | None = None,
    ) -> None:
        """``prints_admin``: whether its first start creates the admin token (default: when its
        embedded database does not exist yet; a replica of a shared PostgreSQL store says)."""
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.home = root / "home"
        self.home.mkdir(exist_ok=True)
        self.callboard_home = root / "callboard-home"
        self.log_path = root / "hub.log"
        self.log_path.touch()
        self.rate_limit = rate_limit
        self.args = list(args)  # more options of 'up' (--tls-cert …)
        self.prints_admin = prints_admin
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.admin_token = ""
        self.output: list[str] = []  # stdout of the current run
        self.first_output: list[str] = []  # stdout of the first run (the admin token)
        Hub.instances.append(self)

    @property
    def db_path(self) -> Path:
        return self.callboard_home / "callboard.db"

    def env(self) -> dict[str, str]:
        return isolated_env(self.home, self.callboard_home)

    def start(self) -> Hub:
        assert self.proc is None or self.proc.poll() is not None, "this hub is already running"
        fresh = not self.db_path.exists() if self.prints_admin is None else self.prints_admin and not self.admin_token
        argv = [sys.executable, "-m", "callboard", "up", "--port", "0"]
        if self.rate_limit is not None:
            argv += ["--rate-limit", str(self.rate_limit)]
        argv += self.args
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                argv,
                env=self.env(),
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                encoding="utf-8",
            )
        self.output = []
        assert self.proc.stdout is not None
        threading.Thread(target=_drain, args=(self.proc.stdout, self.output), daemon=True).start()
        proc = self.proc

        def listening() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"'callboard up' exited {proc.returncode} before it listened:\n{self.describe()}")
            urls = [m.group(1) for line in self.output if (m := LISTENING.search(line))]
            tokens = [m.group(1) for line in self.output if (m := ADMIN_TOKEN.search(line))]
            if not urls or (fresh and not tokens):
                return False
            self.url = urls[0]
            if fresh:
                self.admin_token = tokens[0]
                self.first_output = list(self.output)
            return True

        wait_until(listening, START_TIMEOUT, "the hub to print its address")
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown at all."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(scaled(STOP_TIMEOUT))

    def terminate(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM and wait for the hub to exit on its own; its exit status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(scaled(timeout))

    def close(self) -> None:
        """Stop this hub whatever state it is in (fixtures call it in ``finally``)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.terminate(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_size(self) -> int:
        return self.log_path.stat().st_size

    def log_text(self, since: int = 0) -> str:
        with self.log_path.open("rb") as file:
            file.seek(since)
            return file.read().decode("utf-8", "replace")

    def describe(self) -> str:
        return "--- stdout\n" + "\n".join(self.output) + "\n--- log (stderr)\n" + self.log_text()[-4000:]

    # --- speaking to it ---

    def http(
        self,
        token: str | None = None,
        agent: str | None = None,
        workspace: str | None = None,
        timeout: float = HTTP_TIMEOUT,
    ) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=auth_headers(token, agent, workspace), timeout=scaled(timeout))

    def admin(self, agent: str | None = None, workspace: str | None = None) -> httpx.Client:
        return self.http(self.admin_token, agent, workspace)

    def client(self, token: str, agent: str | None = None, workspace: str | None = None) -> HubClient:
        return HubClient(self.url, token, agent, workspace)

    def issue(self, issuer: str | None = None, **body: Any) -> dict[str, Any]:
        """A new token (POST /v1/tokens), by the admin token unless ``issuer`` is given."""
        with self.http(issuer or self.admin_token) as http:
            answer = http.post("/v1/tokens", json=body)
        assert answer.status_code == 201, answer.text
        return answer.json()


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    shared = Hub(tmp_path_factory.mktemp("shared-hub"))
    try:
        yield shared.start()
    finally:
        shared.close()


@pytest.fixture
def make_hub(tmp_path: Path) -> Iterator[Callable[..., Hub]]:
    made: list[Hub] = []

    def make(*, rate_limit: float | None = None, args: Sequence[str] = ()) -> Hub:
        fresh = Hub(tmp_path / f"hub-{len(made)}", rate_limit=rate_limit, args=args)
        made.append(fresh)
        return fresh.start()

    try:
        yield make
    finally:
        for one in made:
            one.close()


@pytest.fixture(autouse=True)
def _hubs_answer_bad_input_without_failing() -> Iterator[None]:
    """Fail the test during which any hub logged an unexpected error (a 500 or a crash)."""
    before = {id(h): h.log_size() for h in Hub.instances}
    yield
    for one in Hub.instances:
        text = one.log_text(before.get(id(one), 0))
        if any(marker in text for marker in FAILURE_IN_LOG):
            pytest.fail(f"the hub at {one.url} logged an unexpected error during this test:\n{text[-4000:]}")


# --- a waiting read, seen by the place it holds --------------------------------------------------
#
# A waiting read leaves no trace in the store (looking writes nothing), but it holds one of its
# credential's places for streams: on a hub that gives each credential one (ONE_STREAM), a probe of
# the same credential is refused while it waits.

ONE_STREAM = ("--max-streams", "1")


def waiting_read(hub: Hub, token: str, agent: str, wait: float, timeout: float) -> httpx.Response:
    """POST /v1/read?wait= by ``token`` as ``agent``, on a hub started with ONE_STREAM: tried again
    while a probe (``until_read_waits``) holds the credential's place."""
    with hub.http(token, agent, timeout=timeout) as http:
        while True:
            answer = http.post("/v1/read", params={"wait": wait})
            if answer.status_code != 429 or answer.json()["error"]["code"] != "too_many_streams":
                return answer


def until_read_waits(hub: Hub, token: str) -> None:
    """Return once a waiting read by ``token`` holds its place on ``hub`` (started with ONE_STREAM),
    subscribed to its mailbox: a probe by the same credential is refused then. A probe let in
    waits a moment, takes nothing (it peeks at a mailbox of its own) and ends."""

    def held() -> bool:
        with hub.http(token, "prober") as http:
            answer = http.post("/v1/read", params={"wait": 0.01, "peek": "true"})
        return answer.status_code == 429 and answer.json()["error"]["code"] == "too_many_streams"

    wait_until(held, what="the waiting read to reach the hub")


# --- a workspace of the shared hub -------------------------------------------------------------


@dataclass
class Tenant:
    """A workspace of its own on the shared hub, with a user token for it."""

    hub: Hub
    workspace: str
    token: str
    token_id: str

    def http(self, agent: str | None = None) -> httpx.Client:
        return self.hub.http(self.token, agent)

    def client(self, agent: str) -> HubClient:
        return self.hub.client(self.token, agent)

    def agent_token(self, agent: str) -> dict[str, Any]:
        return self.hub.issue(self.token, agent=agent)


def new_tenant(hub: Hub) -> Tenant:
    workspace = unique("ws")
    issued = hub.issue(kind="user", workspace=workspace)
    return Tenant(hub, workspace, issued["token"], issued["id"])


@pytest.fixture
def tenant(hub: Hub) -> Tenant:
    return new_tenant(hub)


# --- the command line ----------------------------------------------------------------------------


class CLI(cli_runner.CLI):
    """The command line of one machine (tests/support/cli_runner.py), which may be the hub's own."""

    @classmethod
    def on_hub_machine(cls, hub: Hub) -> CLI:
        """The CLI of the machine that ran ``up`` (its HOME and CALLBOARD_HOME)."""
        return cls(hub.root / "cli", hub.home, hub.callboard_home)


def expect_error(proc: subprocess.CompletedProcess[str], code: str, *, as_json: bool) -> dict[str, Any] | str:
    """Exit 2, no traceback, and exactly one line naming the stable ``code`` (not ``strict``)."""
    return cli_runner.expect_error(proc, code, as_json=as_json, strict=False)


@pytest.fixture
def make_cli(tmp_path: Path) -> Callable[[str], CLI]:
    def make(name: str) -> CLI:
        return CLI(tmp_path / f"machine-{name}")

    return make


@pytest.fixture
def cli(make_cli: Callable[[str], CLI]) -> CLI:
    return make_cli("main")


# --- HTTP answers and Server-Sent Events ----------------------------------------------------------


def expect_http_error(answer: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """``status`` with a JSON body that is exactly ``{"error": {"code": code, "message": …}}``."""
    info = f"{answer.request.method} {answer.request.url} answered {answer.status_code}: {answer.text[:500]}"
    assert answer.status_code == status, info
    assert answer.headers.get("content-type", "").startswith("application/json"), info
    document = answer.json()
    assert set(document) == {"error"}, info
    assert set(document["error"]) == {"code", "message"}, info
    assert document["error"]["code"] == code, info
    assert isinstance(document["error"]["message"], str) and document["error"]["message"].strip(), info
    return document["error"]


@dataclass
class Event:
    id: int
    event: str
    item: dict[str, Any]  # a MailItem

    @property
    def message_id(self) -> str:
        return self.item["message"]["id"]

    @property
    def text(self) -> str:
        return "\n".join(p["text"] for p in self.item["message"]["parts"] if "text" in p)


class EventStream:
    """One GET /v1/events connection, read block by block. A read that waits longer than
    ``read_timeout`` for the next line fails (httpx.ReadTimeout): a deadline, not a sleep."""

    def __init__(
        self,
        url: str,
        token: str,
        agent: str | None = None,
        workspace: str | None = None,
        *,
        last_event_id: int | str | None = None,
        after: int | None = None,
        read_timeout: float = 10.0,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        headers = {**auth_headers(token, agent, workspace), **(extra_headers or {})}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        params = {"after": after} if after is not None else None
        self._http = httpx.Client(base_url=url, timeout=httpx.Timeout(read_timeout, connect=5.0))
        self._context = self._http.stream("GET", "/v1/events", headers=headers, params=params)
        self.response = self._context.__enter__()
        self._lines = self.response.iter_lines()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def next_block(self) -> dict[str, list[str]] | None:
        """The fields of the next block (``:`` comments under ""), or None at the stream's end."""
        block: dict[str, list[str]] = {}
        for line in self._lines:
            if line == "":
                if block:
                    return block
                continue
            name, _, value = line.partition(":")
            block.setdefault(name, []).append(value[1:] if value.startswith(" ") else value)
        return block or None

    def ready(self) -> None:
        """Wait for the stream's first block: from then on the hub is subscribed."""
        assert self.response.status_code == 200, self.response.read().decode()
        assert self.response.headers["content-type"].startswith("text/event-stream")
        first = self.next_block()
        assert first is not None and "retry" in first, first

    def next_event(self) -> Event:
        while True:
            block = self.next_block()
            assert block is not None, "the event stream ended"
            if "data" in block:
                return Event(
                    int(block["id"][0]), block.get("event", ["message"])[0], json.loads("\n".join(block["data"]))
                )

    def events_until(self, message_id: str, limit: int = 1000) -> list[Event]:
        """Every event up to and including the one carrying ``message_id``."""
        got: list[Event] = []
        while not got or got[-1].message_id != message_id:
            got.append(self.next_event())
            assert len(got) <= limit, f"no event for {message_id} among {len(got)}"
        return got

    def close(self) -> None:
        try:
            self._context.__exit__(None, None, None)
        finally:
            self._http.close()
