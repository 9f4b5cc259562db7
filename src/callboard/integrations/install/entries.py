"""The things Callboard adds to a settings file, as plain data the install manifest can keep.

An entry is exactly one addition, so that uninstall can take out that and nothing else:

- ``Member``: a key of a JSON object set to a value (``mcpServers.callboard``);
- ``Item``: one value appended to a JSON array (a hook group, a permission rule);
- ``Block``: a delimited block of lines appended to a TOML file (Codex's config.toml);
- ``Whole``: a whole text file (a slash command).

Two entries are equal when they add the same thing; a ``Member`` also remembers the value it
replaced (not part of equality), so that taking it out puts the user's value back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Json = Any
KeyPath = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Member:
    path: KeyPath
    value: Json
    replaced: str | None = field(default=None, compare=False)  # the JSON text of the value it replaced


@dataclass(frozen=True, slots=True)
class Item:
    path: KeyPath  # the array
    value: Json


@dataclass(frozen=True, slots=True)
class Block:
    text: str  # the whole block, markers included, ending with a newline
    table: KeyPath  # the table it defines: one defined outside the block is the user's


@dataclass(frozen=True, slots=True)
class Whole:
    text: str


Entry = Member | Item | Block | Whole


def describe(entry: Entry) -> str:
    """A few words naming the entry, for notes."""
    if isinstance(entry, Member):
        return ".".join(entry.path)
    if isinstance(entry, Item):
        return f"an entry of {'.'.join(entry.path)}"
    if isinstance(entry, Block):
        return "the callboard block"
    return "the file"


def to_dict(entry: Entry) -> dict[str, Json]:
    if isinstance(entry, Member):
        body: dict[str, Json] = {"kind": "member", "path": list(entry.path), "value": entry.value}
        if entry.replaced is not None:
            body["replaced"] = entry.replaced
        return body
    if isinstance(entry, Item):
        return {"kind": "item", "path": list(entry.path), "value": entry.value}
    if isinstance(entry, Block):
        return {"kind": "block", "text": entry.text, "table": list(entry.table)}
    return {"kind": "whole", "text": entry.text}


def from_dict(body: dict[str, Json]) -> Entry:
    kind = body["kind"]
    if kind == "member":
        return Member(tuple(body["path"]), body["value"], body.get("replaced"))
    if kind == "item":
        return Item(tuple(body["path"]), body["value"])
    if kind == "block":
        return Block(body["text"], tuple(body["table"]))
    if kind == "whole":
        return Whole(body["text"])
    raise ValueError(f"unknown entry kind {kind!r}")


def rendered(entry: Entry) -> str:
    """Everything the entry writes, as text (to check that no secret is in it)."""
    if isinstance(entry, (Member, Item)):
        return json.dumps(entry.value, ensure_ascii=False)
    return entry.text
