"""What JSON can carry, for the values a message holds as data (a data part, a part's metadata).

Python's and pydantic's JSON readers take ``NaN``, ``Infinity`` and ``1e400`` (which overflows to
infinity), but JSON has no such numbers: written out again they become ``null``, and a data
part of ``null`` is no part at all, so the stored message could no longer be read. The send
refuses such values (content.py) and the stores refuse to render a stored message holding one
(store/rows.py). Pure: no I/O.
"""

from __future__ import annotations

import math
from typing import Any

from switchboard.bounds import DATA_DEPTH_MAX, DATA_INT_DIGITS

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
