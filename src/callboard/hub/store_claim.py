"""One hub per embedded store: ``callboard up`` claims the SQLite file it serves.

A hub takes the store's writes for itself and wakes its readers in process (it does not poll
for other processes' commits). A second hub on the same file would take writes its twin's
streams and long-polls never hear of, and group-commit against it: mail would wait for the
next poll of a reader nobody runs. So the second ``up`` refuses, naming the first. The claim
is an advisory lock on a file beside the database (``callboard.db-hub``), released by the
kernel however the hub ends; the file says which process holds it and where it listens.

PostgreSQL stores take any number of hubs (replicas): nothing is claimed there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from callboard.errors import StoreInUse

try:
    import fcntl
except ImportError:  # no advisory locks (Windows): nothing to claim with
    fcntl = None  # type: ignore[assignment]  # the module, or None where there is none


class StoreClaim:
    """The claim on an embedded store, held while the hub runs."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor ends the lock
            self._fd = None


def claim_store(db_path: Path, url: str) -> StoreClaim:
    """Claim ``db_path`` for the hub at ``url``; ``StoreInUse`` when another hub holds it."""
    if fcntl is None:
        return StoreClaim(None)
    path = db_path.with_name(db_path.name + "-hub")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the home, made as config.private_folder would
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(fd)
        os.close(fd)
        raise StoreInUse(
            f"another hub already serves {db_path}{holder}: two hubs on one SQLite file each take its "
            "writes for themselves and neither wakes the other's readers. Use that hub (log in to it), "
            "stop it first, or give this one another --db."
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "url": url}).encode(), 0)
    return StoreClaim(fd)


def _holder(fd: int) -> str:
    """ " (pid 4242, http://127.0.0.1:8465)", as the holder wrote it; nothing when unreadable."""
    try:
        said = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f" (pid {int(said['pid'])}, {str(said['url'])})"
    except (OSError, ValueError, KeyError, TypeError):
        return ""
