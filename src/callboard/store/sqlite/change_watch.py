"""Telling that another process may have committed to the database, without polling it.

Every commit writes the database's write-ahead log (or its journal), so a watch on the
database's folder (Linux inotify, through libc) hears of each one the moment it is written:
a process waiting for mail sleeps in ``select`` and costs nothing while nobody writes. The
watch only says "look again" (the store's ``data_version`` says whether anything changed);
where inotify is missing (another OS, a libc without it, a folder that cannot be watched) the
caller falls back to polling.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import select
import struct
import time
from pathlib import Path

IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
EVENT_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len: then len bytes of name


class FolderWatch:
    """Writes to the files of one folder whose names start with ``prefix`` (the database's own
    files: the database, its -wal, -shm and -journal)."""

    def __init__(self, fd: int, prefix: str) -> None:
        self._fd = fd
        self._prefix = prefix.encode()

    @classmethod
    def of(cls, database: Path) -> FolderWatch | None:
        """A watch of ``database``'s files, or None where this system cannot give one."""
        if not hasattr(select, "select") or os.name != "posix":
            return None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        mask = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
        if libc.inotify_add_watch(fd, os.fsencode(database.parent), mask) < 0:
            os.close(fd)
            return None
        return cls(fd, database.name)

    def wait(self, timeout: float) -> bool:
        """Block until one of the database's files is written (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                ready, _, _ = select.select([self._fd], [], [], left)
            except (OSError, ValueError):  # closed under us: say "look" and let the caller see
                return True
            if ready and self._ours(self._drain()):
                return True
        return False

    def _drain(self) -> bytes:
        chunks = []
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def _ours(self, events: bytes) -> bool:
        offset = 0
        while offset + EVENT_HEADER.size <= len(events):
            _, _, _, length = EVENT_HEADER.unpack_from(events, offset)
            name = events[offset + EVENT_HEADER.size : offset + EVENT_HEADER.size + length]
            offset += EVENT_HEADER.size + length
            if name.startswith(self._prefix):
                return True
        return False

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
