"""A command run as a person runs it: attached to a real pseudo-terminal, and what reaches it.

``on_terminal`` starts ``callboard …`` with its standard input, output and error on the
follower side of a pty (a terminal, to the command and to rich: it styles its output), reads
the leader side until the command has ended, and hands back every byte the terminal got.
``unobeyed`` is what a terminal would act on in that output, beyond the styles rich writes
itself and the ends of lines: it must be empty for anything someone else wrote.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import unicodedata
from collections.abc import Mapping

from tests.support.cli_runner import CLI
from tests.support.waiting import wait_until

COLUMNS = 1000  # wide enough that rich never wraps nor cuts a value (the test reads each whole)
# Select Graphic Rendition (colour, bold…): what rich itself writes on a terminal, and all it writes.
_STYLE = re.compile(r"\x1b\[[0-9;]*m")


def on_terminal(
    cli: CLI,
    *args: object,
    agent: str | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 60.0,
) -> tuple[int, str]:
    """Run ``callboard <args>`` on a new pseudo-terminal until it ends: its exit status and
    what the terminal received (decoded: a terminal reads UTF-8)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, COLUMNS, 0, 0))
    terminal = {"TERM": "xterm-256color", "COLUMNS": str(COLUMNS), **(env or {})}
    proc = subprocess.Popen(
        cli.argv(*args),
        env=cli.env(agent, terminal),
        cwd=cli.workdir,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,  # this terminal is its controlling one, as a shell's would be
    )
    os.close(follower)
    seen = bytearray()

    def ended() -> bool:
        """Read what is there; done once the command has ended and nothing more is waiting."""
        exited = proc.poll() is not None  # asked first: what it wrote before exiting is then readable
        while select.select([leader], [], [], 0.05)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # every writer has closed the terminal
                return True
            if not chunk:
                return True
            seen.extend(chunk)
        return exited

    try:
        wait_until(ended, timeout, f"callboard {' '.join(map(str, args))} to end on its terminal", interval=0)
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return proc.returncode, seen.decode("utf-8", errors="backslashreplace")


def unobeyed(output: str) -> list[str]:
    """Every character in ``output`` a terminal would act on, or that reorders or hides text, other
    than rich's own styles and a line's end (the terminal's CR LF): it must be none."""
    plain = _STYLE.sub("", output).replace("\r\n", "\n")
    return [
        f"U+{ord(c):04X}"
        for c in plain
        if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")
    ]
