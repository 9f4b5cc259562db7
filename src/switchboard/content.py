"""What one message may carry, checked before anything is stored.

Limits, the validation of text, parts and subject, message-id syntax, and the fingerprint
that tells an idempotent retry from a different message reusing its key. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from switchboard.address import Address
from switchboard.errors import BadRequest, TooLarge, UnknownMessage
from switchboard.model import Part, built, parts_json


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what one request may carry; past them a request fails with ``too_large``."""

    message_bytes: int = 256 * 1024  # all parts, JSON-encoded
    parts: int = 32
    recipients: int = 100
    subject_chars: int = 256
    description_chars: int = 2000
    skills: int = 64
    idempotency_key_chars: int = 200
    read_limit: int = 1000
    wait_seconds: float = 3600.0


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
    for part in content:
        if part.text is None:
            texts_only = empty = False
            continue
        if not _is_utf8(part.text):
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


def clean_subject(subject: str | None, limits: Limits) -> str | None:
    if subject is None or not subject.strip():
        return None
    if len(subject) > limits.subject_chars:
        raise TooLarge(f"the subject has {len(subject)} characters; the limit is {limits.subject_chars}.")
    return subject.strip()


def check_idempotency_key(key: str | None, limits: Limits) -> None:
    if key is not None and not (0 < len(key) <= limits.idempotency_key_chars):
        raise BadRequest(f"an idempotency key is 1-{limits.idempotency_key_chars} characters.")


def check_message_id(value: str, what: str = "message id") -> None:
    try:
        uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        raise UnknownMessage(
            f"{value!r} is not a {what}: ids look like 0193a6f0-7c1e-7b3a-9d2e-5f4a3b2c1d0e."
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


def _is_utf8(text: str) -> bool:
    """False for text holding lone surrogates, which is how Python carries undecodable bytes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _first_error(error: ValueError) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        return f"{where + ': ' if where else ''}{first.get('msg', error)}"
    return str(error)
