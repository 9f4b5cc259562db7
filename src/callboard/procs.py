"""What this machine's process table says about a process (Linux /proc): its start time, its
parent and ancestors, its command line, its environment, whether it still runs.

A pid alone does not name a process: the system hands a pid out again once its process is
gone. A pid with its start time does, so every check of "is that process still there" takes
both. Where there is no /proc (macOS), each fact is None (unknown), and a process counts as
running while its pid exists.

Pure and light: the standard library only (the hooks load it on every prompt).
"""

from __future__ import annotations

import os
from pathlib import Path

LINEAGE_DEPTH = 12  # an agent CLI's command runs under a shell or two, rarely deeper


def has_proc() -> bool:
    """Whether this machine has /proc (start times can be read; else only "does the pid exist")."""
    return Path("/proc").is_dir()


def _stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name: fields[0] is field 3 overall."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return stat[stat.rindex(")") + 2 :].split()


def process_start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, to tell a recycled pid apart.

    None when the process does not exist (or has exited, not yet reaped) or there is no /proc.
    """
    try:
        fields = _stat_fields(pid)
    except (OSError, ValueError):
        return None
    if fields[0] in ("Z", "X"):  # exited, not yet reaped by its parent: no longer running
        return None
    return int(fields[19])  # field 22 overall: starttime


def process_alive(pid: int, start_time: int | None) -> bool:
    """Whether ``pid`` runs on this machine and (when known) is the process that started then."""
    if start_time is not None and has_proc():
        return process_start_time(pid) == start_time
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def parent_of(pid: int) -> int:
    """The parent of ``pid``; raises OSError (or ValueError) when it cannot be read."""
    return int(_stat_fields(pid)[1])  # field 4 overall: ppid


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (empty without /proc): a runner's CLI runs in its
    own process group, so ending the runner's group alone would leave the CLI behind."""
    children = []
    for entry in Path("/proc").glob("[0-9]*") if has_proc() else ():
        try:
            if parent_of(int(entry.name)) == pid:
                children.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue  # gone between the listing and the read
    return children


def process_lineage(pid: int) -> list[tuple[int, int | None]]:
    """``pid`` and its ancestors, nearest first, each with its start time: a command an agent
    CLI runs finds that CLI's session by it. Without /proc: just the process."""
    lineage: list[tuple[int, int | None]] = []
    while pid > 1 and len(lineage) < LINEAGE_DEPTH:
        lineage.append((pid, process_start_time(pid)))
        try:
            pid = parent_of(pid)
        except (OSError, ValueError, IndexError):
            break
    return lineage


def process_name(pid: int) -> str:
    """The process's short name (its executable's, as the kernel keeps it); raises OSError."""
    return Path(f"/proc/{pid}/comm").read_text().strip()


def process_command_line(pid: int) -> list[str] | None:
    """A process's arguments, or None when they cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [arg.decode("utf-8", errors="replace") for arg in raw.split(b"\0")[:-1]] if raw else None


def process_environment(pid: int) -> dict[str, str] | None:
    """The environment a process started with (the same user's), or None."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    pairs = (entry.decode("utf-8", errors="replace").partition("=") for entry in raw.split(b"\0") if entry)
    return {key: value for key, _, value in pairs}


def process_stdin(pid: int) -> str | None:
    """What the process's stdin is (a tty's path, ``pipe:[…]``…), or None when it cannot be read."""
    try:
        return os.readlink(f"/proc/{pid}/fd/0")
    except OSError:
        return None
