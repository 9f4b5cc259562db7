"""The thin client of the warm server: an everyday command as a small tool.

A one-line ``callboard send`` that loads typer, rich, pydantic, the service and the store
spends most of its life importing. The warm server (``cli/warm_server.py``) keeps all of that
loaded; this client hands it the command: its arguments, environment, working folder, process id and its standard input, output
and error themselves (passed over the Unix socket). The server forks a copy of itself that runs
the very command this process would have run, on those descriptors, acting for this process,
and tells its exit code. So the output, the errors and their exit codes are the same as the
command run here; only the start-up is gone.

Not served (``run`` answers None and the caller runs the command itself): a command that
stays a process of its own (see ``COMMANDS``), a ``--follow`` read or log, ``CALLBOARD_WARM=0``,
no server yet (one is started for the next call), a server of other code (it exits; the next
call starts a new one), or anything unexpected before the command began. Once the server says the command began, its exit code is this process's.
"""

from __future__ import annotations

# The C modules under socket, signal and json: their Python faces load enum, selectors and the
# JSON machinery, which cost more than all the rest of this client.
import _signal
import _socket
import marshal
import os
import sys

# Every command an agent runs (a worker of a task reads, updates, shows, posts, looks who is
# there) and the agent CLIs' hooks (which run on every prompt, tool call and stop): each one a
# command that does its work and ends. What stays a process of its own: the servers and what
# they start (up, mcp, run, team up and down), what lives as long as its user wants (a
# following read or log, session keep, the hook waiter), and setting up (install, login, demo, …).
COMMANDS = frozenset(
    {
        "send",
        "reply",
        "read",
        "status",
        "who",
        "whoami",
        "inbox",
        "ack",
        "hook",
        "task",
        "delegate",
        "round",
        "lease",
        "agent",
        "channel",
        "session",
        "workspace",
        "token",
        "audit",
        "runner",
        "team",
    }
)
OWN_PROCESS = frozenset({("hook", "wake"), ("session", "keep"), ("team", "up"), ("team", "down")})
# The commands whose --follow (-f) keeps them running.
FOLLOWING = frozenset({("read",), ("runner", "logs"), ("team", "logs")})
SOCKET_FILE = "warm.sock"
LOCK_FILE = "warm.lock"
SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes on Linux
CONNECT_TIMEOUT_SECONDS = 2.0
DISABLE_ENV = "CALLBOARD_WARM"
EXIT_INTERNAL = 1

# What the server answers, one line each.
BEGAN = b"P"  # P<pid>: the command began in process <pid>
EXITED = b"X"  # X<code>: it ended with that exit code
DECLINED = b"N"  # N<reason>: not served (other code, other Python): run it here


def served(args: list[str], env: os._Environ[str] | dict[str, str]) -> bool:
    """Whether these arguments go to the warm server at all."""
    if not args or args[0] not in COMMANDS or env.get(DISABLE_ENV, "").strip() == "0":
        return False
    if not hasattr(_socket, "AF_UNIX") or not hasattr(_socket, "SCM_RIGHTS") or not hasattr(os, "fork"):
        return False
    # The hook waiter lives as long as its session idles and is known by its command line (one
    # per session); a session keeper as long as its process: each stays a process of its own.
    if tuple(args[:2]) in OWN_PROCESS:
        return False
    # A following read or log lives as long as its user wants: it stays a process of its own.
    command = tuple(args[:1]) if args[0] == "read" else tuple(args[:2])
    return command not in FOLLOWING or not any(
        arg == "--follow" or (arg.startswith("-") and not arg.startswith("--") and "f" in arg)
        for arg in args[len(command) :]
    )


def home_folder(env: os._Environ[str] | dict[str, str]) -> str:
    """Callboard's home (config.home_dir), without loading platformdirs when it is set."""
    if raw := env.get("CALLBOARD_HOME", "").strip():
        return os.path.expanduser(raw)
    from callboard.config import home_dir

    return str(home_dir(env))


def run(args: list[str]) -> int | None:
    """Run ``args`` in the warm server: its exit code, or None when it was not served."""
    env = os.environ
    if not served(args, env):
        return None
    home = home_folder(env)
    path = os.path.join(home, SOCKET_FILE)
    if len(os.fsencode(path)) > SOCKET_PATH_MAX:
        return None
    try:
        request = _request(args)
    except OSError:  # e.g. the working folder was removed
        return None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_TIMEOUT_SECONDS)
        try:
            conn.connect(path)
        except OSError:
            start_server(home)  # for the next command; this one runs here
            return None
        conn.settimeout(None)
        data = len(request).to_bytes(4, "big") + request
        descriptors = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
        try:  # the standard descriptors ride with the first bytes (SCM_RIGHTS)
            sent = conn.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, descriptors)])
            # Nothing more to send once the whole request went: a fast command may have run and
            # closed the connection already, and a send then (even of nothing) fails with EPIPE,
            # which would run the command a second time here. Its answer still waits to be read.
            if sent < len(data):
                conn.sendall(data[sent:])
        except OSError:  # a standard descriptor is closed, or the server went away before it had the request
            return None
        return _outcome(conn, home)
    finally:
        conn.close()


def _request(args: list[str]) -> bytes:
    umask = os.umask(0o022)
    os.umask(umask)
    streams = {
        name: [getattr(stream, "encoding", None) or "utf-8", getattr(stream, "errors", None) or "strict"]
        for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout), ("stderr", sys.stderr))
    }
    return marshal.dumps(
        {
            "args": args,
            "argv0": sys.argv[0] if sys.argv else "callboard",
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "umask": umask,
            "pid": os.getpid(),
            "python": [sys.prefix, sys.version],
            "streams": streams,
        }
    )


class _Lines:
    """The server's answer, line by line (``_socket`` has no makefile)."""

    def __init__(self, conn: _socket.socket) -> None:
        self.conn = conn
        self.buffer = b""

    def readline(self) -> bytes:
        while b"\n" not in self.buffer:
            try:
                chunk = self.conn.recv(256)
            except OSError:
                chunk = b""
            if not chunk:
                line, self.buffer = self.buffer, b""
                return line
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"


def _outcome(conn: _socket.socket, home: str) -> int | None:
    reader = _Lines(conn)
    first = reader.readline()
    if not first.startswith(BEGAN):
        if first.startswith(DECLINED) and b"stale" in first:
            start_server(home)
        return None  # the command never began: run it here
    child = int(first[1:])
    forwarded: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signum)
        try:
            os.kill(child, signum)
        except OSError:
            pass

    for signum in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        _signal.signal(signum, forward)
    last = reader.readline()
    if last.startswith(EXITED):
        return int(last[1:])
    if forwarded:  # ended by the signal this process was sent, as it would have been
        return 128 + forwarded[-1]
    sys.stderr.write("error: internal: the command's process ended without an exit status\n")
    return EXIT_INTERNAL


def start_server(home: str) -> None:
    """Start the warm server for ``home`` in the background, unless one is starting or running
    (it holds the lock file). Never fails the command that asked."""
    try:
        os.makedirs(home, mode=0o700, exist_ok=True)
        import fcntl

        with open(os.path.join(home, LOCK_FILE), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return  # one is starting or serving
            fcntl.flock(lock, fcntl.LOCK_UN)
        middle = os.fork()
    except OSError:
        return
    if middle:
        os.waitpid(middle, 0)
        return
    # Double fork: the server is nobody's child here, in a session of its own, holding none of
    # this command's descriptors (a pipe a caller waits on must close when this command ends).
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 65536)
        # -P: not the working folder on the import path (a module planted there is never loaded,
        # and the folder's changes do not make the server think its code changed).
        os.execv(sys.executable, [sys.executable, "-P", "-m", "callboard.cli.warm_server", home])
    finally:
        os._exit(0)
