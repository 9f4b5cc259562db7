"""What one message may carry, checked before anything is stored.

Limits, the validation of text, parts and subject, message-id syntax, and the fingerprint
that tells an idempotent retry from a different message reusing its key. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from switchboard.address import Address, shown
from switchboard.errors import BadRequest, TooLarge, UnknownMessage
from switchboard.model import Part, built, parts_json

# --- the bounds of what a request holds, named once: the service's checks and the hub's request
# schemas (hub/schemas.py, so /openapi.json states them) read them here; a value past its bound
# is refused with a 4xx before anything is stored, whichever face it came through.

# --- numbers ----------------------------------------------------------------------------------

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
SUBJECT_CHARS = 256
IDEMPOTENCY_KEY_CHARS = 200
MESSAGE_ID_CHARS = 36  # a UUID in its canonical text form
MESSAGE_IDS_MAX = 1000  # ids one ack or mark-read names
# What a data part (or a part's metadata) may nest: JSON parsers give up not far past this.
DATA_DEPTH_MAX = 100
DATA_INT_DIGITS = 4000  # a longer integer is refused by common JSON readers (Python's at 4300)

# --- names and labels -------------------------------------------------------------------------

DESCRIPTION_CHARS = 2000  # an agent card's or a channel's description
SKILLS_MAX = 64
SKILL_CHARS = 100
TERMINAL_CHARS = 200  # the terminal a session runs in (tmux:%3, tty:/dev/pts/4)
DELIVERY_ERROR_CHARS = 500  # what a session reports broken in its delivery path
TOKEN_LABEL_CHARS = 200  # a note that tells tokens apart
ID_CHARS = 36  # a session or token id (a UUID)

# Free text a store keeps as it is: no NUL (PostgreSQL's text cannot hold one); where the service
# refuses blank text, some character that is not white space.
TEXT_PATTERN = r"^[^\x00]*$"
NON_BLANK_TEXT_PATTERN = r"^[^\x00]*[^\s\x00][^\x00]*$"
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
SEQ_PATTERN = rf"^[0-9]{{1,{SEQ_DIGITS}}}$"


# --- what JSON can carry, for the values a message holds as data (a data part, its metadata) --
#
# Python's and pydantic's JSON readers take ``NaN``, ``Infinity`` and ``1e400`` (which overflows to
# infinity), but JSON has no such numbers: written out again they become ``null``, and a data
# part of ``null`` is no part at all, so the stored message could no longer be read. The send
# refuses such values (below) and the stores refuse to render a stored message holding one
# (store/rows.py). Pure: no I/O.

_INT_LIMIT = 10**DATA_INT_DIGITS


def json_problem(value: Any, name: str = "the value") -> str | None:
    """What keeps ``value`` from being written as JSON and read back the same, as a few words
    that say where (``data.rows[2] is nan, …``), or None when nothing does.

    Walked without recursion, so no nesting can exhaust Python's stack."""
    pending: list[tuple[Any, str, int]] = [(value, name, 0)]
    while pending:
        item, where, depth = pending.pop()
        if depth > DATA_DEPTH_MAX:
            return f"{name} nests deeper than {DATA_DEPTH_MAX} levels"
        problem = _scalar_problem(item)
        if problem is not None:
            return f"{_cut(where)} {problem}"
        if isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str) or not is_utf8(key):
                    return f"{_cut(where)} has a key that is not text: {_cut(repr(key))}"
                pending.append((inner, f"{where}.{key}", depth + 1))
        elif isinstance(item, list | tuple):
            pending.extend((inner, f"{where}[{i}]", depth + 1) for i, inner in enumerate(item))
    return None


def _cut(text: str, most: int = 80) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _scalar_problem(item: Any) -> str | None:
    if item is None or isinstance(item, bool | dict | list | tuple):
        return None
    if isinstance(item, float):
        return (
            None if math.isfinite(item) else f"is {item}, a number JSON cannot carry (NaN and infinities are not JSON)"
        )
    if isinstance(item, int):
        fits = -_INT_LIMIT < item < _INT_LIMIT
        return None if fits else f"is an integer of more than {DATA_INT_DIGITS} digits"
    if isinstance(item, str):
        return None if is_utf8(item) else "is text with undecodable bytes (lone surrogates)"
    return f"holds a Python {type(item).__name__}, which JSON cannot carry"


def is_utf8(text: str) -> bool:
    """False for text holding lone surrogates, which is how Python carries undecodable bytes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what one request may carry; past them a request fails with ``too_large``."""

    message_bytes: int = MESSAGE_BYTES  # all parts, JSON-encoded
    parts: int = PARTS_MAX
    recipients: int = RECIPIENTS_MAX
    subject_chars: int = SUBJECT_CHARS
    description_chars: int = DESCRIPTION_CHARS
    skills: int = SKILLS_MAX
    idempotency_key_chars: int = IDEMPOTENCY_KEY_CHARS
    read_limit: int = READ_LIMIT_MAX
    wait_seconds: float = WAIT_SECONDS_MAX


def message_parts(text: str | None, parts: Sequence[Part | dict], limits: Limits) -> list[Part]:
    """The message's parts (``text`` first, as a text part), or a BadRequest/TooLarge."""
    content: list[Part] = []
    if text is not None:
        content.append(built(Part, text=text))  # a str: nothing to validate
    for part in parts:
        try:
            content.append(part if isinstance(part, Part) else Part.model_validate(part))
        except ValueError as error:
            raise BadRequest(f"a message part is not valid: {_first_error(error)}") from None
    texts_only, text_chars, empty = True, 0, True
    for index, part in enumerate(content):
        check_part_values(part, index)
        if part.text is None:
            texts_only = empty = False
            continue
        if not is_utf8(part.text):
            raise BadRequest("the message text is not valid UTF-8 (it holds undecodable bytes); send text.")
        text_chars += len(part.text)
        empty = empty and not part.text.strip()
    if empty:
        raise BadRequest("the message is empty: give some text or at least one part.")
    if len(content) > limits.parts:
        raise TooLarge(f"{len(content)} parts; the limit is {limits.parts}.")
    # A character takes at most 6 bytes as JSON (\uXXXX): most messages are clearly small enough.
    clearly_small = texts_only and text_chars * 6 + 200 * len(content) < limits.message_bytes
    size = 0 if clearly_small else len(parts_json(content))
    if size > limits.message_bytes:
        raise TooLarge(
            f"the message is {size} bytes; the limit is {limits.message_bytes}. "
            "Send a file or URL part that points at large content instead."
        )
    return content


def check_part_values(part: Part, index: int = 0) -> None:
    """Refuse a part holding a value JSON cannot carry (NaN, an infinity, 1e400, …) in its data
    or metadata: stored, it would come back as something else, or not at all."""
    for field in ("url", "raw", "filename", "media_type"):
        value = getattr(part, field)
        if value is not None and not is_utf8(value):
            raise BadRequest(f"part {index + 1}'s {field} is not valid UTF-8 (it holds undecodable bytes).")
    for field, value in (("data", part.data), ("metadata", part.metadata)):
        if value is None:
            continue
        problem = json_problem(value, field)
        if problem is not None:
            raise BadRequest(
                f"part {index + 1} cannot be sent: its {problem}. Send only what JSON can carry "
                "(finite numbers; a value JSON has no number for as text)."
            )


def clean_subject(subject: str | None, limits: Limits) -> str | None:
    if subject is None or not subject.strip():
        return None
    check_text(subject, limits.subject_chars, "the subject")
    return subject.strip()


def check_idempotency_key(key: str | None, limits: Limits) -> None:
    check_text(key, limits.idempotency_key_chars, "an idempotency key")


def check_text(value: str | None, most: int, what: str, *, hint: str = "") -> None:
    """A piece of free text a store keeps as it is (a subject, a label, a terminal): not blank,
    at most ``most`` characters (too_large past it), and text every store can hold — no NUL
    (PostgreSQL's text has none) and no undecodable bytes. None passes."""
    if value is None:
        return
    if len(value) > most:
        raise TooLarge(f"{what} has {len(value)} characters; the limit is {most}.{hint}")
    if not value.strip():
        raise BadRequest(f"{what} is blank: give 1-{most} characters, or leave it out.{hint}")
    if "\x00" in value or not is_utf8(value):
        raise BadRequest(f"{what} holds a NUL character or undecodable bytes; send plain text.{hint}")


def is_id(value: str) -> bool:
    """Whether ``value`` has the form of the mailbox's ids (messages, sessions, tokens: UUIDs)."""
    try:
        uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        return False
    return True


def check_message_ids(message_ids: Sequence[str], verb: str) -> None:
    """A list of message ids a call acts on (``verb`` them): at least one, at most
    ``MESSAGE_IDS_MAX``, each an id."""
    if not message_ids:
        raise BadRequest(f"name at least one message id to {verb}.")
    if len(message_ids) > MESSAGE_IDS_MAX:
        raise TooLarge(f"{len(message_ids)} message ids; name at most {MESSAGE_IDS_MAX} at once.")
    for message_id in message_ids:
        check_message_id(message_id)


def check_message_id(value: str, what: str = "message id") -> None:
    try:
        uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        raise UnknownMessage(
            f"{shown(str(value))!r} is not a {what}: ids look like 0193a6f0-7c1e-7b3a-9d2e-5f4a3b2c1d0e."
        ) from None


def request_hash(
    addresses: Sequence[Address],
    subject: str | None,
    parts: Sequence[Part],
    thread_id: str | None,
    reply_to: str | None,
    require_live: bool,
    urgent: bool = False,
) -> str:
    """A fingerprint of a send request: a retry matches it, a different message does not."""
    fields = [[str(a) for a in addresses], subject, [p.model_dump() for p in parts], thread_id, reply_to, require_live]
    if urgent:  # only then: keys stored before the flag existed still match their retries
        fields.append("urgent")
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _first_error(error: ValueError) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        return f"{where + ': ' if where else ''}{first.get('msg', error)}"
    return str(error)
