"""What one message may carry, checked before anything is stored.

Limits, the validation of text, parts and subject, message-id syntax, and the fingerprint
that tells an idempotent retry from a different message reusing its key. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence

from callboard.address import Address, is_utf8, json_problem, shown
from callboard.errors import BadRequest, TooLarge, UnknownMessage
from callboard.limits import (
    MESSAGE_IDS_MAX,
    Limits,
)
from callboard.model import Part, built, parts_json


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
