"""A managed block in a TOML file: lines between two marker comments, appended at the end.

Python reads TOML (tomllib) but does not write it, and a TOML file is the user's to format.
So Callboard never rewrites the file: it appends its block, delimited by a ``# >>>`` and a
``# <<<`` comment line, and taking it out removes exactly those lines (and the blank line it
put before them). Everything between the markers is Callboard's.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

BEGIN = "# >>> callboard"
END = "# <<< callboard"
_BLOCK = re.compile(r"^# >>> callboard\b.*?^# <<< callboard[^\n]*(?:\n|$)", re.S | re.M)
_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


class TomlSyntaxError(ValueError):
    """The text is not TOML; ``line`` and ``column`` count from 1 (0 when unknown)."""

    def __init__(self, problem: str, line: int, column: int) -> None:
        super().__init__(problem)
        self.problem, self.line, self.column = problem, line, column


def block(body: str, client: str) -> str:
    """The managed block holding ``body`` (TOML lines ending with a newline)."""
    head = f"{BEGIN} (managed by 'callboard install {client}'; remove with 'callboard uninstall {client}')"
    return f"{head}\n{body}{END}\n"


def parse(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        found = _POSITION.search(message)
        line, column = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
        raise TomlSyntaxError(_POSITION.sub("", message).strip(), line, column) from None


def find(text: str) -> tuple[int, int] | None:
    """Where the managed block is (from its first marker to past its last), or None."""
    match = _BLOCK.search(text)
    return (match.start(), match.end()) if match else None


def without_block(text: str) -> str:
    """The text with the managed block (and the blank line before it) taken out."""
    span = find(text)
    if span is None:
        return text
    start, end = span
    if start >= 2 and text[start - 2 : start] == "\n\n":
        start -= 1  # the blank line that separated the block from the user's lines
    elif start == 1 and text[0] == "\n":
        start = 0
    return text[:start] + text[end:]


def with_block(text: str, managed: str) -> str:
    """The text with ``managed`` as its managed block: in place of an old one, else at the end."""
    span = find(text)
    if span is not None:
        return text[: span[0]] + managed + text[span[1] :]
    if not text:
        return managed
    return text + ("\n" if text.endswith("\n") else "\n\n") + managed


def defines(document: dict[str, Any], table: tuple[str, ...]) -> bool:
    value: Any = document
    for key in table:
        if not isinstance(value, dict) or key not in value:
            return False
        value = value[key]
    return True
