"""How long each step with an outside agent may take, whatever transport carries it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RemoteTimeouts:
    """How long each step with a remote may take. ``call`` bounds one request (for a stream:
    the silence between two events); ``deadline`` bounds a whole task, from the first try to
    its final state; polls start at ``poll_first`` and double up to ``poll_most``."""

    connect: float = 5.0
    card: float = 10.0  # the whole card fetch: well inside a hub client's 30 s, so it is the card's error it hears
    call: float = 30.0
    deadline: float = 600.0
    poll_first: float = 0.2
    poll_most: float = 5.0
