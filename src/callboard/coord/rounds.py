"""Following a round to its decision: the coordinator's side of ``callboard coordinate``.

The follower long-polls the round for events past those it has seen (``Client.get_round`` with
``after_events``), tells each new event to ``on_event``, and returns the round once it is decided
or canceled. Nothing here decides anything: every act is applied where it is made, and a phase's
deadline is swept by the hub (or, on the embedded store, by this follower's own looks).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from callboard.client.base import Client
from callboard.coord.artifacts import part_bytes
from callboard.model import Part
from callboard.rounds import OPEN, Event, RoundInfo

LONG_POLL_SECONDS = 25.0  # one waiting look; well under proxies' idle timeouts


def follow_round(client: Client, info: RoundInfo, on_event: Callable[[Event], None] | None = None) -> RoundInfo:
    """``info`` followed until it is decided or canceled, each event told once, in order."""
    seen = 0
    while True:
        info = client.get_round(info.id, after_events=seen, wait=LONG_POLL_SECONDS)
        for event in info.events[seen:]:
            if on_event is not None:
                on_event(event)
        seen = len(info.events)
        if info.phase not in OPEN:
            return info


def winning_proposal(info: RoundInfo) -> Event | None:
    """The decided round's winning proposal (an artifact round's), or None."""
    decision = info.decision
    if decision is None or decision.choice is None:
        return None
    return next(
        (e for e in info.events if e.kind == "proposal" and e.epoch == decision.epoch and e.agent == decision.choice),
        None,
    )


def decision_bytes(info: RoundInfo) -> bytes | None:
    """What ``--out`` holds: the winning proposal as it was handed in, or a value round's number."""
    decision = info.decision
    if decision is None:
        return None
    if decision.value is not None:
        return f"{decision.value:g}\n".encode()
    proposal = winning_proposal(info)
    return None if proposal is None else proposal_bytes(proposal)


def proposal_bytes(proposal: Event) -> bytes:
    """A proposal as it was handed in: its parts' bytes one after another (one text part: its
    text; raw bytes as they are; a data part as JSON), a value as its number."""
    if proposal.value is not None:
        return f"{proposal.value:g}\n".encode()
    parts = proposal.content if isinstance(proposal.content, list) else []
    return b"".join(part_bytes(Part.model_validate(part))[0] for part in parts if isinstance(part, dict))


def write_decision(info: RoundInfo, path: Path) -> bool:
    """Write the decision to ``path`` (whole or not at all); False when there is none to write."""
    content = decision_bytes(info)
    if content is None:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.callboard-part")
    temporary.write_bytes(content)
    temporary.replace(path)
    return True
