"""What a runner gives its CLI as a turn's input: mail, fenced as a model reads it, the go-on of an
interrupted turn, or a tick."""

from __future__ import annotations

from collections.abc import Sequence

from callboard.fence import fenced_mail
from callboard.model import MailItem

TICK_TEXT = "No new mail. Check what you watch, per your instructions; if nothing needs you, end the turn."
# The mail of the interrupted turn is in the resumed conversation: named, not given again.
INTERRUPTED_TEXT = (
    "Your last turn was interrupted before you finished it: your CLI stopped and was started again on "
    "this conversation. The mail that turn gave you is above; you may not have answered it yet. "
    "Continue that turn where you left off."
)


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


def continue_prompt(agent: str, items: Sequence[MailItem]) -> str:
    """The input of a turn that continues an interrupted one, with the mail that came since
    (``items``, maybe none) after it."""
    parts = [INTERRUPTED_TEXT, *([fenced_mail(items)] if items else []), how_to_answer(agent)]
    return "\n\n".join(parts)


def tick_prompt(context: str | None = None) -> str:
    """A tick's input: the standing text, after any carried context."""
    return "\n\n".join([context, TICK_TEXT]) if context else TICK_TEXT
