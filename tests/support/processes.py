"""Whether a process has ended, as a test waits for it to."""

from __future__ import annotations

import os
from pathlib import Path


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie still answers signal 0: it has exited when /proc says so
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True
