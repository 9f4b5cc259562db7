"""Which deliveries wait to be surfaced: the one definition, as SQL both stores and the hooks'
quick look (hooks/probe.py) share: standard library only, outside store/ so that look loads nothing else.

A delivery waits to be surfaced while it is neither read, handed to a session (which has it,
waiting for its turn: see handing.py) nor surfaced yet, and no guard holds it (``held_until``
is unset or past: see guard.py). Held mail is stored and counted as unread
like any other; it only waits for its time before a hook, a waiter or a session's socket puts
it before the agent.
"""

from __future__ import annotations


def waiting_to_surface(now: str, alias: str = "d") -> str:
    """The condition on deliveries ``alias`` for mail waiting to be surfaced; ``now`` is the
    placeholder of the current time (Unix seconds) in the store's parameter style."""
    return (
        f"{alias}.read_at IS NULL AND {alias}.surfaced_at IS NULL AND {alias}.state != 'handed' "
        f"AND {released(now, alias)}"
    )


def released(now: str, alias: str = "d") -> str:
    """The condition on deliveries ``alias`` that no guard holds now."""
    return f"({alias}.held_until IS NULL OR {alias}.held_until <= {now})"


def held(now: str, alias: str = "d") -> str:
    """The condition on deliveries ``alias`` for mail a guard still holds (not yet surfaced or read)."""
    return f"{alias}.read_at IS NULL AND {alias}.surfaced_at IS NULL AND {alias}.held_until > {now}"
