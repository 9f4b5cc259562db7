"""What a runner gives its CLI as a turn's input: mail, fenced as a model reads it, or a tick."""

from __future__ import annotations

from collections.abc import Sequence

from callboard.fence import fenced_mail
from callboard.model import MailItem

TICK_TEXT = "No new mail. Check what you watch, per your instructions; if nothing needs you, end the turn."


def how_to_answer(agent: str) -> str:
    """The line after the mail: how the agent answers (its tools act as it, in this session)."""
    return (
        f"You are {agent}. Answer with the Callboard tools (send_message; its reply_to answers a message in "
        "its thread) or the `callboard` command (`callboard reply ID TEXT`), which act as you; the mail stays "
        "in your mailbox until you mark it read."
    )


def mail_prompt(agent: str, items: Sequence[MailItem], context: str | None = None) -> str:
    """One turn's input for a batch of mail, in the order it came; ``context`` (a hand-off's
    packet) goes first when given."""
    parts = [context] if context else []
    parts += [fenced_mail(items), how_to_answer(agent)]
    return "\n\n".join(parts)


def tick_prompt(context: str | None = None) -> str:
    """A tick's input: the standing text, after any carried context."""
    return "\n\n".join([context, TICK_TEXT]) if context else TICK_TEXT
