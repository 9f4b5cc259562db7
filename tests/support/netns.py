"""Three machines on one Linux host: network namespaces joined by veth links.

``Network`` makes three namespaces named ``cb-<random>-hub``, ``cb-<random>-m1`` and
``cb-<random>-m2`` (the random part keeps parallel and leftover runs apart) and two links::

    m1 (10.X.1.2) ── veth ── (10.X.1.1) hub (10.X.2.1) ── veth ── (10.X.2.2) m2

X is picked at random in 200..250 among the 10.X.0.0/16 networks this host does not use. m1
and m2 reach the hub only: the hub forwards nothing. Every machine has its own HOME and
CALLBOARD_HOME (config and data) and its own CALLBOARD_MACHINE name (``hubhost``, ``m1``,
``m2``); commands run in it with ``ip netns exec``.

The hub is ``callboard up --host 0.0.0.0`` in the hub namespace, serving HTTPS with a
certificate of a test CA (made with the ``openssl`` command) for both of its addresses. m1 and
m2 are logged in to it (m1 by 10.X.1.1, m2 by 10.X.2.1) with a user token of one workspace, and
act as any agent of it with CALLBOARD_AGENT.

Sessions: ``start_session`` registers a ``sleep`` once (it goes quiet after the hub's liveness
window); ``keep_session`` has ``callboard session keep`` report for it, so it stays live until
it or its keeper is stopped (a ``Pane``). ``follow`` runs ``read --follow --json`` (a
``Follower``), and ``kill_machine`` SIGKILLs every process of a machine, as if it died.

Closing the network kills every process started in its namespaces and deletes them (and so
their links), whatever happened before. Nothing here sends traffic anywhere but inside them.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests.hub.conftest import ADMIN_TOKEN
from tests.support.cli_runner import isolated_env
from tests.support.waiting import scaled, wait_until

MACHINES = ("hub", "m1", "m2")
MACHINE_NAMES = {"hub": "hubhost", "m1": "m1", "m2": "m2"}  # their CALLBOARD_MACHINE
PORT = 8465  # the hub's port: each network's hub namespace is fresh, so it is always free
WORKSPACE = "crew"
# Deadlines for what must happen, in seconds of an idle machine (every wait here scales them by
# the machine's slowness: tests/support/waiting.py): a command answered, the hub serving (a cold
# start of the hub and its TLS takes seconds on a loaded machine), a process gone, /health.
CALL_TIMEOUT = 60.0
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
PROBE_TIMEOUT = 2.0

CALLBOARD = str(Path(sys.executable).with_name("callboard"))  # the venv's command
IP = shutil.which("ip") or "/usr/sbin/ip"
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")

# One request to the hub's /health over TLS, from inside a namespace: exit 0 when it answers.
_PROBE = """
import ssl, sys, urllib.request
url, ca, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
opener = urllib.request.build_opener(
    urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca))
)
try:
    with opener.open(url + "/health", timeout=timeout) as answer:
        sys.exit(0 if answer.status == 200 else 1)
except Exception as error:
    print(error, file=sys.stderr)
    sys.exit(1)
"""


def unavailable_reason() -> str | None:
    """Why this host cannot make the network (not root, no ``ip netns``, no ``openssl``), or None."""
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    if not shutil.which("ip"):
        return "the 'ip' command (iproute2) is not installed"
    if not shutil.which("openssl"):
        return "the 'openssl' command is not installed"
    probe = f"cb-{secrets.token_hex(3)}-probe"
    made = subprocess.run([IP, "netns", "add", probe], capture_output=True, text=True, timeout=10)
    if made.returncode != 0:
        return f"'ip netns add' does not work here: {made.stderr.strip()}"
    subprocess.run([IP, "netns", "delete", probe], capture_output=True, timeout=10)
    return None


@functools.cache
def supports_option(command: str, option: str) -> bool:
    """Whether ``callboard COMMAND --help`` lists ``option`` (for options still being added)."""
    proc = subprocess.run(
        [CALLBOARD, *command.split(), "--help"],
        capture_output=True,
        text=True,
        timeout=scaled(CALL_TIMEOUT),
        env={**os.environ, "COLUMNS": "200"},
    )
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", proc.stdout) is not None


# --- certificates ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the CA's certificate: what clients are given
    cert: Path  # the hub's certificate, signed by the CA
    key: Path  # its private key


def openssl(*args: str | Path, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"openssl {' '.join(map(str, args))}:\n{proc.stderr}"


def make_certificates(folder: Path, ips: Sequence[str] = (), dns: Sequence[str] = ()) -> Certificates:
    """A test CA and a server certificate it signed whose subjectAltName holds ``ips`` and ``dns``."""
    folder.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")  # fast to make, unlike RSA
    openssl("req", "-x509", *ec, "-days", "2", "-subj", "/CN=callboard test CA",
            "-keyout", "ca.key", "-out", "ca.pem", cwd=folder)  # fmt: skip
    openssl("req", *ec, "-subj", f"/CN={(list(dns) or list(ips))[0]}", "-keyout", "hub.key", "-out", "hub.csr",
            cwd=folder)  # fmt: skip
    names = ",".join([*(f"IP:{ip}" for ip in ips), *(f"DNS:{name}" for name in dns)])
    (folder / "hub.ext").write_text(
        f"subjectAltName={names}\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
    )
    openssl("x509", "-req", "-in", "hub.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "hub.ext", "-out", "hub.pem", cwd=folder)  # fmt: skip
    return Certificates(folder / "ca.pem", folder / "hub.pem", folder / "hub.key")


# --- the network ----------------------------------------------------------------------------------


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([IP, *args], capture_output=True, text=True, timeout=30)
    if check:
        assert proc.returncode == 0, f"ip {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}"
    return proc


def _used_networks() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks this host's own namespace has addresses or routes in."""
    used: list[ipaddress.IPv4Network] = []
    for line in _ip("-4", "-o", "addr", "show").stdout.splitlines():
        if m := re.search(r"\binet (\S+)", line):
            used.append(ipaddress.IPv4Interface(m.group(1)).network)
    for line in _ip("-4", "route", "show", "table", "all").stdout.splitlines():
        words = line.split()
        if words and words[0] in ("unreachable", "blackhole", "prohibit", "local", "broadcast"):
            words = words[1:]
        if words and words[0] != "default":
            try:
                used.append(ipaddress.IPv4Network(words[0], strict=False))
            except ValueError:
                continue
    return used


def _free_second_octet() -> int:
    used = _used_networks()
    candidates = list(range(200, 251))
    secrets.SystemRandom().shuffle(candidates)
    for x in candidates:
        mine = ipaddress.IPv4Network(f"10.{x}.0.0/16")
        if not any(mine.overlaps(other) for other in used):
            return x
    raise AssertionError("every 10.X.0.0/16 network with X in 200..250 is in use on this host")


def _drain(stream: IO[str], into: list[str]) -> None:
    try:
        for line in stream:
            into.append(line.rstrip("\n"))
    except (OSError, ValueError):  # closed by Network.close
        pass


@dataclass
class Machine:
    key: str  # "hub", "m1" or "m2"
    name: str  # its CALLBOARD_MACHINE
    namespace: str
    address: str  # its address (the hub's on the link to m1)
    root: Path
    home: Path
    callboard_home: Path
    workdir: Path
    hub_url: str  # how it reaches the hub

    @property
    def config_path(self) -> Path:
        return self.callboard_home / "config.toml"


def _drained(stream: IO[str] | None, into: list[str]) -> threading.Thread:
    """A daemon thread that appends each line of ``stream`` to ``into`` (so no pipe ever fills)."""
    assert stream is not None
    thread = threading.Thread(target=_drain, args=(stream, into), daemon=True)
    thread.start()
    return thread


@dataclass
class Pane:
    """A long-lived process (``sleep``) on a machine with a session that ``session keep`` reports
    for every ``every`` seconds: live until the process or the keeper stops."""

    machine: str
    agent: str
    process: subprocess.Popen[str]  # the session's process (its pid is the session's)
    keeper: subprocess.Popen[str]  # callboard session keep --pid <process>
    session: dict[str, Any]  # the Session the keeper printed
    keeper_output: list[str]  # its stdout lines (the session's JSON first)
    keeper_errors: list[str]  # its stderr lines

    @property
    def id(self) -> str:
        return self.session["id"]

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def address(self) -> str:
        """agent@machine#pid"""
        return self.session["address"]

    @property
    def env(self) -> dict[str, str]:
        """The environment of a command acting in this session."""
        return {"CALLBOARD_SESSION": self.id}


@dataclass
class Follower:
    """``callboard read --follow --json`` running on a machine: each JSON line it printed, parsed."""

    machine: str
    agent: str
    proc: subprocess.Popen[str]
    output: list[str]  # its stdout lines, as printed
    errors: list[str]  # its stderr lines
    readers: tuple[threading.Thread, ...]

    @property
    def items(self) -> list[Any]:
        """The MailItems printed so far."""
        return [json.loads(line) for line in list(self.output) if line.strip()]

    @property
    def ids(self) -> list[str]:
        """The ids of the messages printed so far, in the order printed."""
        return [item["message"]["id"] for item in self.items]

    @property
    def session_address(self) -> str | None:
        """The session it registered for itself (from its 'following as session …' note), if any."""
        for line in list(self.errors):
            if m := re.search(r"following as session (\S+)", line):
                return m.group(1)
        return None

    def stop(self, timeout: float = STOP_TIMEOUT * 3) -> int:
        """SIGTERM it and wait for it to exit on its own (and its output to be read): its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        status = self.proc.wait(scaled(timeout))
        for thread in self.readers:
            thread.join(scaled(STOP_TIMEOUT))
        return status


class Network:
    """A hub and two machines in network namespaces (a context manager: it cleans up on exit)."""

    def __init__(self, root: Path, *, liveness_seconds: float | None = None, workspace: str = WORKSPACE) -> None:
        self.root = root
        self.liveness_seconds = liveness_seconds
        self.workspace = workspace
        self.prefix = f"cb-{secrets.token_hex(3)}-"
        self.x = 0
        self.machines: dict[str, Machine] = {}
        self.certificates: Certificates | None = None
        self.processes: list[subprocess.Popen[str]] = []
        self.hub_proc: subprocess.Popen[str] | None = None
        self.hub_log = root / "hub.log"
        self.hub_output: list[str] = []  # the stdout of the hub's current run
        self.admin_token = ""
        self.user_token = ""
        self.liveness_option = False  # whether 'up' took --liveness-seconds
        self._namespaces: list[str] = []

    # --- building and tearing down ---

    def __enter__(self) -> Network:
        try:
            self.build()
            self.start_hub()
            self.log_in_machines()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def build(self) -> None:
        """Make the namespaces and links, each machine's folders, and the certificates."""
        self.x = _free_second_octet()
        hub1, hub2 = f"10.{self.x}.1.1", f"10.{self.x}.2.1"
        for key in MACHINES:
            namespace = self.prefix + key
            _ip("netns", "add", namespace)
            self._namespaces.append(namespace)
            _ip("-n", namespace, "link", "set", "lo", "up")
        for n in (1, 2):
            machine_ns = self.prefix + f"m{n}"
            _ip("link", "add", f"to-m{n}", "netns", self.prefix + "hub", "type", "veth",
                "peer", "name", "to-hub", "netns", machine_ns)  # fmt: skip
            _ip("-n", self.prefix + "hub", "addr", "add", f"10.{self.x}.{n}.1/24", "dev", f"to-m{n}")
            _ip("-n", machine_ns, "addr", "add", f"10.{self.x}.{n}.2/24", "dev", "to-hub")
        for n in (1, 2):
            self.link_up(f"m{n}", wait=False)
        addresses = {"hub": hub1, "m1": f"10.{self.x}.1.2", "m2": f"10.{self.x}.2.2"}
        urls = {"hub": f"https://{hub1}:{PORT}", "m1": f"https://{hub1}:{PORT}", "m2": f"https://{hub2}:{PORT}"}
        for key in MACHINES:
            folder = self.root / key
            machine = Machine(
                key=key,
                name=MACHINE_NAMES[key],
                namespace=self.prefix + key,
                address=addresses[key],
                root=folder,
                home=folder / "home",
                callboard_home=folder / "callboard-home",
                workdir=folder / "work",
                hub_url=urls[key],
            )
            for path in (machine.home, machine.callboard_home, machine.workdir):
                path.mkdir(parents=True, exist_ok=True)
            self.machines[key] = machine
        self.certificates = make_certificates(self.root / "tls", ips=[hub1, hub2])

    def close(self) -> None:
        """Kill every process started in the namespaces, then delete them (and so the links)."""
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
        for namespace in self._namespaces:  # anything they started in turn
            listed = _ip("netns", "pids", namespace, check=False).stdout.split()
            for pid in listed:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        for proc in self.processes:
            try:
                proc.wait(scaled(STOP_TIMEOUT))
            except subprocess.TimeoutExpired:
                pass
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        for namespace in reversed(self._namespaces):
            _ip("netns", "delete", namespace, check=False)
        self._namespaces.clear()

    # --- the links ---

    def _link_ends(self, machine: str) -> list[tuple[str, str]]:
        assert machine in ("m1", "m2"), f"{machine!r} has no link of its own: m1 or m2"
        return [(self.prefix + "hub", f"to-{machine}"), (self.prefix + machine, "to-hub")]

    def link_down(self, machine: str) -> None:
        """Cut the link between ``machine`` (m1 or m2) and the hub: both ends of its veth go down."""
        for namespace, device in self._link_ends(machine):
            _ip("-n", namespace, "link", "set", device, "down")

    def link_up(self, machine: str, *, wait: bool = True) -> None:
        """Restore the link; with ``wait``, until ``machine`` reaches the hub's /health again."""
        for namespace, device in self._link_ends(machine):
            _ip("-n", namespace, "link", "set", device, "up")
        if wait:
            wait_until(lambda: self.reaches_hub(machine), START_TIMEOUT, f"{machine} to reach the hub", 0.05)

    # --- running things in a machine ---

    def machine(self, key: str) -> Machine:
        assert key in self.machines, f"no machine {key!r}: one of {', '.join(self.machines)}"
        return self.machines[key]

    def env(
        self, machine: str, agent: str | None = None, env: Mapping[str, str | None] | None = None
    ) -> dict[str, str]:
        """The environment of a command on ``machine``; ``env`` values of None remove a variable."""
        one = self.machine(machine)
        extra: dict[str, str | None] = {"CALLBOARD_MACHINE": one.name}
        for name in PROXY_VARIABLES:  # nothing is ever sent through a proxy
            extra[name] = extra[name.upper()] = None
        if agent is not None:
            extra["CALLBOARD_AGENT"] = agent
        extra.update(env or {})
        return isolated_env(one.home, one.callboard_home, extra)

    def argv(self, machine: str, argv: Sequence[object]) -> list[str]:
        return [IP, "netns", "exec", self.machine(machine).namespace, *map(str, argv)]

    def run(
        self,
        machine: str,
        *args: object,
        agent: str | None = None,
        env: Mapping[str, str | None] | None = None,
        input: str | None = None,
        timeout: float = CALL_TIMEOUT,
    ) -> subprocess.CompletedProcess[str]:
        """``callboard ARGS`` on ``machine`` (as ``agent``): its exit status and output."""
        return subprocess.run(
            self.argv(machine, [CALLBOARD, *args]),
            env=self.env(machine, agent, env),
            cwd=self.machine(machine).workdir,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=scaled(timeout),
        )

    def run_json(self, machine: str, *args: object, **kwargs: Any) -> Any:
        """The parsed stdout of ``callboard ARGS --json`` on ``machine``, which must exit 0."""
        if "--json" not in args:
            args = (*args, "--json")
        proc = self.run(machine, *args, **kwargs)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, describe(proc)
        try:
            return json.loads(proc.stdout)
        except json.JSONDecodeError as error:
            raise AssertionError(f"stdout is not one JSON document ({error}):\n{describe(proc)}") from None

    def spawn(
        self,
        machine: str,
        argv: Sequence[object],
        *,
        agent: str | None = None,
        env: Mapping[str, str | None] | None = None,
        stdout: Any = subprocess.PIPE,
        stderr: Any = subprocess.PIPE,
    ) -> subprocess.Popen[str]:
        """Start ``argv`` on ``machine`` (``CALLBOARD`` is the callboard command); killed on close."""
        proc = subprocess.Popen(
            self.argv(machine, argv),
            env=self.env(machine, agent, env),
            cwd=self.machine(machine).workdir,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            text=True,
            encoding="utf-8",
        )
        self.processes.append(proc)
        return proc

    def start_session(
        self, machine: str, agent: str, runtime: str = "script", *, terminal: str | None = None
    ) -> tuple[subprocess.Popen[str], Any]:
        """A long-lived process (``sleep``) on ``machine`` registered as a session of ``agent``
        (``session start --pid``, in ``terminal`` when given): the process and the session's JSON."""
        process = self.spawn(machine, ["sleep", "3600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        where = ["--terminal", terminal] if terminal is not None else []
        session = self.run_json(
            machine, "session", "start", "--runtime", runtime, "--pid", process.pid, *where, agent=agent
        )
        return process, session

    def keep_session(
        self, machine: str, agent: str, *, every: float = 0.5, runtime: str = "script", timeout: float = START_TIMEOUT
    ) -> Pane:
        """A long-lived process (``sleep``) on ``machine`` whose session ``callboard session keep
        --pid … --every EVERY --json`` registers for ``agent`` and keeps live; once it printed the session."""
        process = self.spawn(machine, ["sleep", "3600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        keeper = self.spawn(
            machine,
            [
                CALLBOARD,
                "session",
                "keep",
                "--pid",
                process.pid,
                "--every",
                f"{every:g}",
                "--runtime",
                runtime,
                "--json",
            ],
            agent=agent,
        )
        output: list[str] = []
        errors: list[str] = []
        _drained(keeper.stdout, output)
        _drained(keeper.stderr, errors)

        def printed() -> bool:
            if output:
                return True
            if keeper.poll() is not None:
                raise AssertionError(f"'session keep' on {machine} exited {keeper.returncode}:\n" + "\n".join(errors))
            return False

        wait_until(printed, timeout, f"'session keep' on {machine} to print its session", 0.02)
        session = json.loads(output[0])
        return Pane(machine, agent, process, keeper, session, output, errors)

    def follow(
        self,
        machine: str,
        agent: str,
        *args: object,
        env: Mapping[str, str | None] | None = None,
        ready: bool = True,
        timeout: float = START_TIMEOUT,
    ) -> Follower:
        """``callboard read --follow --json ARGS`` on ``machine`` as ``agent``; with ``ready``,
        once it registered its own session (not when it acts in one given by ``env``)."""
        proc = self.spawn(machine, [CALLBOARD, "read", "--follow", "--json", *args], agent=agent, env=env)
        output: list[str] = []
        errors: list[str] = []
        readers = (_drained(proc.stdout, output), _drained(proc.stderr, errors))
        follower = Follower(machine, agent, proc, output, errors, readers)
        if ready:

            def registered() -> bool:
                if proc.poll() is not None:
                    raise AssertionError(f"the follower on {machine} exited {proc.returncode}:\n" + "\n".join(errors))
                return follower.session_address is not None

            wait_until(registered, timeout, f"the follower on {machine} to register its session", 0.02)
        return follower

    def pids(self, machine: str) -> list[int]:
        """Every process running in ``machine``'s namespace."""
        listed = _ip("netns", "pids", self.machine(machine).namespace, check=False).stdout.split()
        return [int(pid) for pid in listed if pid.isdigit()]

    def kill_machine(self, machine: str) -> None:
        """SIGKILL every process of ``machine`` (m1 or m2), as when it dies: nothing ends cleanly."""
        assert machine in ("m1", "m2"), f"kill {machine!r}? only m1 or m2 (the hub: kill_hub)"
        namespace = self.machine(machine).namespace
        for pid in self.pids(machine):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self.processes:
            if isinstance(proc.args, list) and proc.args[:4] == [IP, "netns", "exec", namespace]:
                proc.wait(scaled(STOP_TIMEOUT))
        wait_until(lambda: not self.pids(machine), STOP_TIMEOUT, f"every process of {machine} to die", 0.02)

    def read_all(self, machine: str, agent: str, **kwargs: Any) -> list[Any]:
        """Every unread item of ``agent``'s mailbox, by ``read --json`` on ``machine`` until one is empty."""
        items: list[Any] = []
        while batch := self.run_json(machine, "read", agent=agent, **kwargs)["items"]:
            items += batch
        return items

    def reaches_hub(self, machine: str, url: str | None = None) -> bool:
        """Whether ``machine`` gets an answer from the hub's /health over TLS (one try, no wait)."""
        assert self.certificates is not None
        probe = [sys.executable, "-I", "-c", _PROBE, url or self.machine(machine).hub_url]
        proc = subprocess.run(
            self.argv(machine, [*probe, self.certificates.ca, scaled(PROBE_TIMEOUT)]),
            env=self.env(machine),
            capture_output=True,
            text=True,
            timeout=scaled(PROBE_TIMEOUT + CALL_TIMEOUT),
        )
        return proc.returncode == 0

    # --- the hub ---

    @property
    def hub_url(self) -> str:
        """The hub as m1 sees it (https://10.X.1.1:PORT)."""
        return self.machine("m1").hub_url

    @property
    def hub_db(self) -> Path:
        return self.machine("hub").callboard_home / "callboard.db"

    def up_args(self) -> list[str]:
        assert self.certificates is not None
        args = ["up", "--host", "0.0.0.0", "--port", str(PORT)]
        args += ["--tls-cert", str(self.certificates.cert), "--tls-key", str(self.certificates.key)]
        if self.liveness_seconds is not None and supports_option("up", "--liveness-seconds"):
            args += ["--liveness-seconds", f"{self.liveness_seconds:g}"]
            self.liveness_option = True
        return args

    def start_hub(self) -> None:
        """``callboard up`` in the hub namespace, until its /health answers over TLS."""
        assert self.hub_proc is None or self.hub_proc.poll() is not None, "the hub is already running"
        fresh = not self.hub_db.exists()
        with self.hub_log.open("a") as log:
            proc = self.spawn("hub", [CALLBOARD, *self.up_args()], stderr=log)
        self.hub_proc = proc
        self.hub_output = []
        assert proc.stdout is not None
        threading.Thread(target=_drain, args=(proc.stdout, self.hub_output), daemon=True).start()

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(
                    f"'callboard up' exited {proc.returncode} before it served:\n{self.describe_hub()}"
                )
            return self.reaches_hub("hub")

        wait_until(ready, START_TIMEOUT, "the hub's /health to answer over TLS", 0.05)
        if fresh:
            tokens = wait_until(
                lambda: [m.group(1) for line in self.hub_output if (m := ADMIN_TOKEN.search(line))],
                START_TIMEOUT,
                "the hub to print its admin token",
            )
            self.admin_token = tokens[0]

    def kill_hub(self) -> None:
        """SIGKILL the hub: no shutdown at all."""
        assert self.hub_proc is not None
        self.hub_proc.kill()
        self.hub_proc.wait(scaled(STOP_TIMEOUT))

    def stop_hub(self, timeout: float = STOP_TIMEOUT * 3) -> int:
        """SIGTERM the hub and wait for it to exit on its own; its exit status."""
        assert self.hub_proc is not None
        self.hub_proc.send_signal(signal.SIGTERM)
        return self.hub_proc.wait(scaled(timeout))

    def restart_hub(self, kill: bool = True) -> None:
        """Stop the hub (SIGKILL, or SIGTERM when not ``kill``) and start it again: same port, same store."""
        if kill:
            self.kill_hub()
        else:
            self.stop_hub()
        self.start_hub()

    def hub_log_text(self, since: int = 0) -> str:
        with self.hub_log.open("rb") as file:
            file.seek(since)
            return file.read().decode("utf-8", "replace")

    def describe_hub(self) -> str:
        return "--- stdout\n" + "\n".join(self.hub_output) + "\n--- log (stderr)\n" + self.hub_log_text()[-4000:]

    # --- credentials ---

    def log_in_machines(self) -> None:
        """Log the hub machine's CLI in with the admin token, make a user token of the workspace,
        and log m1 and m2 in with it (each by its own hub address, trusting the test CA)."""
        assert self.certificates is not None
        ca = str(self.certificates.ca)
        # 'up' logged its own machine in at https://0.0.0.0:PORT, which the certificate does not name.
        self.run_json("hub", "login", self.machine("hub").hub_url, "--token", self.admin_token, "--ca-cert", ca)
        issued = self.run_json("hub", "token", "create", "--workspace", self.workspace, "--label", "machines")
        self.user_token = issued["token"]
        with ThreadPoolExecutor(2) as pool:  # each login is a CLI start-up: side by side
            list(pool.map(self.login, ("m1", "m2")))

    def login(self, machine: str, token: str | None = None, *, ca: bool = True, **kwargs: Any) -> Any:
        """``callboard login`` on ``machine`` to its hub address (with the test CA unless not ``ca``)."""
        assert self.certificates is not None
        args: list[object] = ["login", self.machine(machine).hub_url, "--token", token or self.user_token]
        if ca:
            args += ["--ca-cert", self.certificates.ca]
        return self.run_json(machine, *args, **kwargs)


def describe(proc: subprocess.CompletedProcess[str]) -> str:
    """A failed command, for an assertion message."""
    argv = list(map(str, proc.args)) if isinstance(proc.args, list) else [str(proc.args)]
    if argv[:3] == [IP, "netns", "exec"]:
        argv = [f"[{argv[3]}]", *(["callboard", *argv[5:]] if argv[4] == CALLBOARD else argv[4:])]
    return f"{' '.join(argv)}\nexit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
