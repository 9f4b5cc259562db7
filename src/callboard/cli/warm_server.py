"""The warm server: everyday commands without the start-up (see cli/warm_client.py).

``python -m callboard.cli.warm_server HOME`` — started by the thin client on first use —
loads the command line (typer, rich, the client, the service, the store), listens on
``HOME/warm.sock`` (mode 0600; only its own user's processes are served) and, per command,
forks: the copy takes the caller's standard descriptors, environment, working folder and umask,
acts for the caller's process (identity.act_for: its lineage finds the agent CLI's session) and
runs the same ``cli.main`` code the caller would have run, then reports the exit code. Nothing
of a command outlives its fork; the server itself holds no store, no thread and no state, so
one command cannot see another's.

It exits when idle for ``CALLBOARD_WARM_IDLE`` seconds (default 900), when its socket file is
removed or replaced, or when its package or Python changed under it (a command then runs in
its caller, and the next one starts a fresh server). One server per home: it holds
``HOME/warm.lock`` while it lives.
"""

from __future__ import annotations

import fcntl
import gc
import importlib
import marshal
import os
import select
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from callboard.cli.warm_client import BEGAN, DECLINED, EXITED, LOCK_FILE, SOCKET_FILE

IDLE_ENV = "CALLBOARD_WARM_IDLE"
DEFAULT_IDLE_SECONDS = 900.0
TICK_SECONDS = 1.0
REQUEST_MAX = 4 << 20  # arguments and environment; a message text rides in the arguments
RECEIVE_TIMEOUT_SECONDS = 5.0


def fingerprint() -> tuple:
    """What the loaded code was made of: the package's files and the folders of the import path
    (a package installed or removed changes its folder's time). Cheap: a stat per file."""
    package = Path(__file__).resolve().parent.parent
    files: list[tuple[str, int]] = []
    for folder, _dirs, names in os.walk(package):
        files.extend((name, os.stat(os.path.join(folder, name)).st_mtime_ns) for name in names if name.endswith(".py"))
    paths = []
    for entry in sys.path:
        try:
            paths.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            continue
    return (sys.executable, sys.prefix, tuple(sorted(files)), tuple(paths))


# Commands run once at start, on a throwaway store: what a command loads or builds on first use
# (modules imported inside functions, validators, rich's renderers) is then in the server, shared
# by every fork instead of made again in each.
REHEARSAL = (
    ["send", "warm-up", "warming up"],
    ["send", "warm-up", "warming up", "--subject", "s", "--json"],
    ["read", "--peek"],
    ["read", "--json"],
    ["inbox"],
    ["status", "01a234ec-cccf-70ed-b741-486fc614bb3f"],
    ["who"],
    ["who", "--json"],
    ["whoami"],
    ["task", "send", "warm-up", "warming up", "--json"],
    ["task", "list"],
    ["task", "list", "--json"],
    ["task", "show", "01a234ec-cccf-70ed-b741-486fc614bb3f"],
    ["task", "update", "01a234ec-cccf-70ed-b741-486fc614bb3f", "--state", "working", "--message", "m"],
    ["agent", "list"],
    ["agent", "card", "warm-up"],
    ["channel", "list"],
)
# What a command loads only when it runs (the A2A SDK: an agent's card, mail to an outside agent;
# the hooks' modules), loaded once here instead of in each fork.
PRELOADED = (
    "callboard.cli.cards",
    "callboard.a2a.remote.card",
    "callboard.a2a.remote.pump",
    "callboard.a2a.remote.sending",
    *(
        f"callboard.integrations.hooks.{module}"
        for module in ("entry", "handlers", "context", "probe", "hub_probe", "state", "output", "payload")
    ),
)


def preload() -> None:
    """Load everything a served command uses, build the command line once, and rehearse."""
    from callboard.cli import main

    main.command_for([])  # every command module, and the click group
    for module in PRELOADED:
        try:
            importlib.import_module(module)
        except ImportError:  # renamed, gone, or an extra not installed: a command loads what it needs itself
            pass
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="callboard-warm-") as folder:
        os.environ.clear()
        os.environ.update(HOME=folder, CALLBOARD_HOME=folder, CALLBOARD_AGENT="warm-up", PATH=saved.get("PATH", ""))
        try:
            for args in REHEARSAL:
                _exit_code(main.run_command, args)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    # What the forks share is never written by the collector: a fork copies only what it changes.
    gc.collect()
    gc.freeze()


class Server:
    def __init__(self, home: Path, idle: float, lock: int) -> None:
        self.home = home
        self.lock = lock
        self.path = home / SOCKET_FILE
        self.idle = idle
        self.code = fingerprint()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def listen(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        old = os.umask(0o177)
        try:
            self.listener.bind(str(self.path))
        finally:
            os.umask(old)
        self.listener.listen(64)
        self.inode = self.path.stat().st_ino

    def ours(self) -> bool:
        try:
            return self.path.stat().st_ino == self.inode
        except OSError:
            return False

    def serve(self) -> None:
        last = time.monotonic()
        while True:
            ready, _, _ = select.select([self.listener], [], [], TICK_SECONDS)
            if not ready:
                if time.monotonic() - last > self.idle or not self.ours():
                    return
                continue
            conn, _ = self.listener.accept()
            last = time.monotonic()
            try:
                if not self.handle(conn):
                    return
            except OSError:
                pass
            finally:
                conn.close()

    def handle(self, conn: socket.socket) -> bool:
        """Serve one command; False when this server must end (its code changed)."""
        fds: list[int] = []
        try:
            conn.settimeout(RECEIVE_TIMEOUT_SECONDS)
            credentials = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            peer_pid, peer_uid, _gid = struct.unpack("3i", credentials)
            data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
            if peer_uid != os.getuid() or len(fds) != 3 or len(data) < 4:
                return True
            size = int.from_bytes(data[:4], "big")
            if size > REQUEST_MAX:
                return True
            body = bytearray(data[4:])
            while len(body) < size:
                chunk = conn.recv(min(size - len(body), 1 << 20))
                if not chunk:
                    return True
                body += chunk
            request = marshal.loads(bytes(body))
            if request["python"] != [sys.prefix, sys.version]:
                conn.sendall(DECLINED + b"other python\n")
                return True
            if fingerprint() != self.code:
                conn.sendall(DECLINED + b"stale\n")
                return False
            conn.settimeout(None)
            if os.fork() == 0:
                try:
                    self.listener.close()
                    os.close(self.lock)  # a long command does not keep a new server from starting
                    run_command(conn, fds, request, peer_pid)
                finally:
                    os._exit(1)
            return True
        finally:
            for fd in fds:
                os.close(fd)

    def close(self) -> None:
        if self.ours():
            self.path.unlink(missing_ok=True)
        self.listener.close()


def run_command(conn: socket.socket, fds: list[int], request: dict, peer_pid: int) -> None:
    """In the fork: become the caller's command, run it, report its exit code, and end."""
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    streams = request["streams"]
    sys.stdin = open(0, encoding=streams["stdin"][0], errors=streams["stdin"][1], closefd=False)  # noqa: SIM115
    out, err = streams["stdout"], streams["stderr"]
    # As Python makes them: standard output line-buffered on a terminal, standard error always.
    sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, encoding=out[0], errors=out[1], closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, encoding=err[0], errors=err[1], closefd=False)  # noqa: SIM115
    sys.argv = [request["argv0"], *request["args"]]

    from callboard import identity
    from callboard.cli import main, render

    identity.act_for(peer_pid)  # the kernel's word for who connected
    render.console, render.err_console = render.make_consoles()
    conn.sendall(BEGAN + f"{os.getpid()}\n".encode())
    # A caller that goes away (killed, its terminal closed) interrupts its command, as a
    # signal would: a waiting read ends its session on the way out.
    threading.Thread(target=_interrupt_when_gone, args=(conn,), daemon=True).start()
    code = _exit_code(main.run_command, request["args"])
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        conn.sendall(EXITED + f"{code}\n".encode())
    finally:
        os._exit(code)


def _interrupt_when_gone(conn: socket.socket) -> None:
    try:
        gone = conn.recv(1) == b""
    except OSError:
        gone = True
    if gone:
        os.kill(os.getpid(), signal.SIGINT)


def _exit_code(main: Callable[[list[str]], None], args: list[str]) -> int:
    """What ``main(args)`` would exit the process with."""
    try:
        main(args)
        return 0
    except SystemExit as done:
        if done.code is None:
            return 0
        if isinstance(done.code, int):
            return done.code
        sys.stderr.write(f"{done.code}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException:
        import traceback

        traceback.print_exc()
        return 1


def main(argv: list[str]) -> int:
    home = Path(argv[0]) if argv else None
    if home is None or not home.is_dir():
        return 2
    os.chdir("/")
    with open(home / LOCK_FILE, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0  # another server serves this home
        try:
            idle = float(os.environ.get(IDLE_ENV, "") or DEFAULT_IDLE_SECONDS)
        except ValueError:
            idle = DEFAULT_IDLE_SECONDS
        preload()
        if threading.active_count() != 1:  # a fork copies no thread: a server with one cannot fork safely
            return 1
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forks are reaped by the kernel
        server = Server(home, idle, lock.fileno())
        server.listen()
        try:
            server.serve()
        finally:
            server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
