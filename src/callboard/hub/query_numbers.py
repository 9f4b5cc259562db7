"""Whole numbers a client writes as text — a query parameter, a stream's resume point
(``after=``, ``Last-Event-ID``) — read strictly: ASCII digits within their bounds.

``str.isdigit()`` and ``int()`` take far more than a client means: ``'²'`` is a digit to the
one and no number to the other, ``int('١٢')`` is 12, and ``int`` of 5,000 digits raises.
Pure: no I/O.
"""

from __future__ import annotations

import math
import re

from callboard.address import shown
from callboard.errors import BadRequest
from callboard.limits import SEQ_MAX

_WHOLE = re.compile(r"-?[0-9]{1,30}", re.ASCII)
_DECIMAL = re.compile(r"-?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][-+]?[0-9]{1,4})?", re.ASCII)


def whole_number(text: str, what: str, least: int, most: int) -> int:
    """``text`` as a whole number in ``least..most``, or a BadRequest naming ``what``."""
    if _WHOLE.fullmatch(text) is None:
        raise BadRequest(f"{what}={shown(text)!r} is not a whole number (write it in digits 0-9).")
    value = int(text)
    if not least <= value <= most:
        raise BadRequest(f"{what} must be {least}-{most}; it was {shown(text)}.")
    return value


def decimal_number(text: str, what: str, least: float, most: float) -> float:
    """``text`` as a finite number in ``least..most``, or a BadRequest naming ``what``."""
    value = float(text) if _DECIMAL.fullmatch(text) else math.nan
    if not math.isfinite(value):
        raise BadRequest(f"{what}={shown(text)!r} is not a number (write it like 2 or 0.5).")
    if not least <= value <= most:
        raise BadRequest(f"{what} must be {least:g}-{most:g}; it was {shown(text)}.")
    return value


def resume_point(text: str) -> int:
    """A stream's resume point (``after=``, ``Last-Event-ID``): the sequence number of the last
    delivery received, 0..SEQ_MAX."""
    if _WHOLE.fullmatch(text) is None or text.startswith("-") or int(text) > SEQ_MAX:
        raise BadRequest(
            f"resume point {shown(text)!r} is not a sequence number (0-{SEQ_MAX}): "
            "use the id of the last event received."
        )
    return int(text)
