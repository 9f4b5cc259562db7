"""What a CLI's own session store holds of a turn's mail: read before the runner gives it again.

A CLI killed mid-turn and resumed continues its session from its own store (Claude Code's
transcript, Codex's rollout, Copilot's ``events.jsonl``, Gemini's chat file: one JSON record a
line). A message whose fenced text (``fence.fenced_ids_in``) a record of that store holds as the
turn's input is in the resumed conversation already: given again, it would reach the model twice.
One not there is not in it, whatever the CLI printed before it died. Each adapter says where its
store is and which of its records are the user's input; this reads the file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from callboard.fence import fenced_ids_in

RecordIds = Callable[[dict[str, Any]], Iterable[str]]  # a record → the ids of the mail it holds as input


def held_in(path: Path | None, message_ids: Sequence[str], ids_of: RecordIds) -> list[str]:
    """Those of ``message_ids`` that a record of the store at ``path`` holds (``ids_of`` says
    which a record holds), in the order asked; none when there is no store (yet)."""
    if path is None or not message_ids:
        return []
    wanted = {m.encode(): m for m in message_ids}
    found: set[str] = set()
    try:
        with path.open("rb") as file:
            for line in file:
                # Most records hold none of the ids (an id is written as is in JSON): not parsed.
                if not any(key in line for key in wanted):
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # the half-written last line of a killed CLI: not held
                if isinstance(record, dict):
                    found.update(i for i in ids_of(record) if i.encode() in wanted)
    except OSError:
        return []
    return [m for m in message_ids if m in found]


def fenced_in(texts: Iterable[object]) -> list[str]:
    """The ids of the messages fenced in ``texts`` (what is not a string holds none)."""
    found: list[str] = []
    for text in texts:
        if isinstance(text, str):
            found += [i for i in fenced_ids_in(text) if i not in found]
    return found


def content_texts(content: object) -> list[object]:
    """The texts of a message's content: a string, or a list of parts with ``text``."""
    if isinstance(content, list):
        return [part.get("text") for part in content if isinstance(part, dict)]
    return [content]
