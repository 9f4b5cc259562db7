"""The HTTP headers with which a request names the agent and the workspace it acts for (a user
or admin token may act as any agent of its workspace), and the session it acts in. Clients send
them; the hub reads them. And the one the hub answers with: the agent's unread count."""

from __future__ import annotations

from collections.abc import Sequence

from callboard.limits import PID_MAX, PROC_START_MAX

AGENT_HEADER = "X-Callboard-Agent"
WORKSPACE_HEADER = "X-Callboard-Workspace"
# The session a request acts in, by id (CALLBOARD_SESSION) ...
SESSION_HEADER = "X-Callboard-Session"
# ... or by the calling process and its ancestors: "<machine> <pid>:<start> <pid>:<start> …",
# nearest first (start '-' when unknown), so a command an agent CLI runs acts in its session.
PROCESS_HEADER = "X-Callboard-Process"
# On every answer to a request that acted as an agent: that agent's unread messages (for a
# session: not counting those pushed to its agent's other live sessions), after the request.
UNREAD_HEADER = "X-Callboard-Unread"


def process_header(machine: str, lineage: Sequence[tuple[int, int | None]]) -> str:
    return " ".join([machine, *(f"{pid}:{'-' if start is None else start}" for pid, start in lineage)])


def parse_process_header(value: str) -> tuple[str, list[tuple[int, int | None]]] | None:
    """The machine and lineage a PROCESS_HEADER names; None when it is not one (then ignored:
    the header only ever narrows a request to a session, never widens what it may do)."""
    words = value.split()
    if not words:
        return None
    machine, pairs = words[0], words[1:]
    lineage: list[tuple[int, int | None]] = []
    for pair in pairs[:16]:
        pid, _, start = pair.partition(":")
        if not _number_up_to(pid, PID_MAX) or not (start == "-" or _number_up_to(start, PROC_START_MAX)):
            return None
        lineage.append((int(pid), None if start == "-" else int(start)))
    return machine, lineage


def _number_up_to(text: str, most: int) -> bool:
    """ASCII digits (isdigit() alone also takes '²', which int() refuses) of a number 0..most."""
    return 0 < len(text) <= len(str(most)) and text.isascii() and text.isdigit() and int(text) <= most
