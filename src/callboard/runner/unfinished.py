"""The mail of a turn that ended unfinished (its CLI died, or the turn ran past its limit): the rule.

What the CLI's session holds is in the conversation a resume continues: the next turn continues
the interrupted one (``prompts.continue_prompt``) instead of giving that mail again, which the
model would then read twice. The session holds what its own store shows as the turn's input
(``Adapter.session_holds``: Claude Code's transcript, Codex's rollout, ...), whatever the CLI
printed before it died; where the runner reads no store, what the CLI said it took. The rest is
given again. ``most`` bounds how often one message goes into another turn (mail that hangs every
turn must not hang all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from callboard.model import MailItem


@dataclass
class Unfinished:
    """Where each message of an unfinished turn goes next."""

    continued: list[MailItem] = field(default_factory=list)  # in the session: the next turn goes on with it
    again: list[MailItem] = field(default_factory=list)  # not in it: given again
    dropped: list[MailItem] = field(default_factory=list)  # past ``most``: in no further turn


def held(message_ids: Sequence[str], in_store: Sequence[str] | None, took: bool) -> set[str]:
    """The messages the session holds: as its store shows (``in_store``), or, where there is no
    store to read (None), all of them once the CLI took the turn's input."""
    if in_store is None:
        return set(message_ids) if took else set()
    return set(in_store)


def sort_unfinished(
    items: Sequence[MailItem], held_ids: set[str], tries: dict[str, int], most: int | None
) -> Unfinished:
    """Each message of the turn where it goes next; ``tries`` counts, per message, the unfinished
    turns it was in (this one added)."""
    sorted_ = Unfinished()
    for item in items:
        message_id = item.message.id
        tries[message_id] = tries.get(message_id, 0) + 1
        if most is not None and tries[message_id] > most:
            sorted_.dropped.append(item)
        elif message_id in held_ids:
            sorted_.continued.append(item)
        else:
            sorted_.again.append(item)
    return sorted_
