"""The bounds of every number and piece of text the mailbox takes from outside, named once.

The service's checks and the hub's request schemas (``hub/schemas.py``, so ``/openapi.json``
states them to clients and fuzzers) both read them from here: a value past its bound is refused
with a 4xx before anything is stored, whichever face it came through. Pure: no imports.
"""

from __future__ import annotations

# --- numbers ----------------------------------------------------------------------------------

PID_MAX = 2**31 - 1  # pid_t is a signed 32-bit integer (Linux's own pid_max is lower still)
PROC_START_MAX = 2**63 - 1  # a process's start time in clock ticks since boot, as /proc has it
SEQ_MAX = 2**63 - 1  # a delivery sequence number, and so every cursor (after=, Last-Event-ID)
SEQ_DIGITS = len(str(SEQ_MAX))  # 19: a longer run of digits is no cursor
READ_LIMIT_MAX = 1000  # messages one read, peek, surface or inbox call returns at most
READ_LIMIT_DEFAULT = 100
INBOX_LIMIT_DEFAULT = 50
AUDIT_LIMIT_DEFAULT = 50
WAIT_SECONDS_MAX = 3600.0  # how long one long-poll read may block

# --- a message --------------------------------------------------------------------------------

MESSAGE_BYTES = 256 * 1024  # all parts of one message, JSON-encoded
PARTS_MAX = 32
RECIPIENTS_MAX = 100
ADDRESS_CHARS = 64 + 1 + 253 + 1 + 10  # name@machine#pid at its longest
SUBJECT_CHARS = 256
IDEMPOTENCY_KEY_CHARS = 200
MESSAGE_ID_CHARS = 36  # a UUID in its canonical text form
MESSAGE_IDS_MAX = 1000  # ids one ack or mark-read names
# What a data part (or a part's metadata) may nest: JSON parsers give up not far past this.
DATA_DEPTH_MAX = 100
DATA_INT_DIGITS = 4000  # a longer integer is refused by common JSON readers (Python's at 4300)

# --- names and labels -------------------------------------------------------------------------

NAME_CHARS = 64  # an agent, channel, workspace or runtime name
MACHINE_CHARS = 253  # a host name
DESCRIPTION_CHARS = 2000  # an agent card's or a channel's description
SKILLS_MAX = 64
SKILL_CHARS = 100
TERMINAL_CHARS = 200  # the terminal a session runs in (tmux:%3, tty:/dev/pts/4)
DELIVERY_ERROR_CHARS = 500  # what a session reports broken in its delivery path
TOKEN_LABEL_CHARS = 200  # a note that tells tokens apart
ID_CHARS = 36  # a session or token id (a UUID)

# --- patterns --------------------------------------------------------------------------------
# Unanchored, for the address grammar (address.py) to build on; the anchored ``*_PATTERN`` forms
# are what /openapi.json states. Those are the canonical forms: the service also takes upper
# case and surrounding blanks, and folds them.


def whole_numbers_up_to(most: int) -> str:
    """A regular expression matching exactly the decimal numbers 1..``most`` (no leading zero)."""
    text = str(most)
    # Shorter than ``most``: any such number. As long: ``most``'s first i digits, a smaller
    # digit, then any digits; or ``most`` itself.
    choices = [f"[1-9][0-9]{{0,{len(text) - 2}}}"] if len(text) > 1 else []
    for i, digit in enumerate(text):
        least = 1 if i == 0 else 0
        if int(digit) > least:
            smaller = str(least) if int(digit) - 1 == least else f"[{least}-{int(digit) - 1}]"
            rest = len(text) - i - 1
            choices.append(text[:i] + smaller + (f"[0-9]{{{rest}}}" if rest else ""))
    return "(?:" + "|".join([*choices, text]) + ")"


NAME_REGEX = rf"[a-z0-9](?:[a-z0-9._-]{{0,{NAME_CHARS - 2}}}[a-z0-9])?"
MACHINE_REGEX = rf"[a-z0-9](?:[a-z0-9._-]{{0,{MACHINE_CHARS - 2}}}[a-z0-9])?"
PID_REGEX = whole_numbers_up_to(PID_MAX)
AGENT_ADDRESS_REGEX = rf"{NAME_REGEX}(?:@{MACHINE_REGEX}(?:#{PID_REGEX})?)?"
ADDRESS_REGEX = rf"(?:#{NAME_REGEX}|{AGENT_ADDRESS_REGEX})"

NAME_PATTERN = f"^{NAME_REGEX}$"
MACHINE_PATTERN = f"^{MACHINE_REGEX}$"
AGENT_ADDRESS_PATTERN = f"^{AGENT_ADDRESS_REGEX}$"
ADDRESS_PATTERN = f"^{ADDRESS_REGEX}$"
ADDRESS_LIST_PATTERN = f"^{ADDRESS_REGEX}(?:,{ADDRESS_REGEX})*$"  # to: "alice,bob,#team"
CHANNEL_PATTERN = f"^#?{NAME_REGEX}$"  # a channel's name, with or without its '#'
# Free text a store keeps as it is: no NUL (PostgreSQL's text cannot hold one); where the service
# refuses blank text, some character that is not white space.
TEXT_PATTERN = r"^[^\x00]*$"
NON_BLANK_TEXT_PATTERN = r"^[^\x00]*[^\s\x00][^\x00]*$"
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
SEQ_PATTERN = rf"^[0-9]{{1,{SEQ_DIGITS}}}$"
