"""What a command says while it waits: one line on stderr, once, naming what it waits for.

A command that would sit silent for more than a second (a hub that does not answer, an outside
agent taking its first look at a message, runners starting) says so, so that nobody wonders
whether it hangs; one that is done sooner says nothing. Standard output stays the command's
answer alone.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SAY_AFTER_SECONDS = 1.0


def note(text: str) -> None:
    """One line on stderr, ``callboard: <text>``."""
    sys.stderr.write(f"callboard: {text}\n")
    sys.stderr.flush()


@contextmanager
def saying_after(text: str, seconds: float = SAY_AFTER_SECONDS) -> Iterator[None]:
    """Say ``text`` (once) if the block is still running after ``seconds``."""
    timer = threading.Timer(seconds, note, (text,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
