"""Put entries into a settings file's text and take them out again (pure: text in, text out).

Each file format knows how to find, add and remove an entry: JSON (strict, or JSONC with
comments) through ``json_text``, TOML through a managed block, a plain text file whole.
``merge`` adds what a plan wants and says which entries are Callboard's; ``unmerge`` removes
exactly those, leaving everything else, the user's later edits included.

An entry already in the file that no install of ours added is the user's: it is left alone and
never claimed, so uninstall will not take it away.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, Protocol

from callboard.integrations.install import toml_block
from callboard.integrations.install.entries import Block, Entry, Item, KeyPath, Member, Whole, describe
from callboard.integrations.install.json_text import MISSING, JsonShapeError, JsonSyntaxError, JsonText

Outcome = Literal["removed", "absent", "changed"]


class SettingsError(ValueError):
    """The file cannot be read as its format, or does not have the shape an entry needs."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(problem)
        self.problem, self.line, self.column = problem, line, column


class Format(Protocol):
    name: str  # for messages: "JSON", "TOML", "text"

    def empty_text(self) -> str: ...
    def check(self, text: str) -> None: ...
    def present(self, text: str, entry: Entry) -> bool: ...
    def conflict(self, text: str, entry: Entry) -> str | None: ...
    def containers(self, text: str, entry: Entry) -> list[KeyPath]: ...
    def add(self, text: str, entry: Entry) -> tuple[str, Entry]: ...
    def remove(self, text: str, entry: Entry) -> tuple[str, Outcome]: ...
    def prune(self, text: str, created: list[KeyPath]) -> str: ...
    def is_empty(self, text: str) -> bool: ...


class JsonFormat:
    """A JSON settings file whose top level is an object."""

    def __init__(self, comments: bool = False) -> None:
        self.comments = comments
        self.name = "JSON"

    def _doc(self, text: str) -> JsonText:
        try:
            doc = JsonText(text, comments=self.comments)
        except JsonSyntaxError as error:
            raise SettingsError(f"not valid JSON: {error.problem}", error.line, error.column) from None
        if not isinstance(doc.value, dict):
            raise SettingsError("its top level is not a JSON object")
        return doc

    def empty_text(self) -> str:
        return "{}\n"

    def check(self, text: str) -> None:
        self._doc(text)

    def present(self, text: str, entry: Entry) -> bool:
        doc = self._doc(text)
        if isinstance(entry, Member):
            found = doc.get(entry.path)
            return found is not MISSING and found == entry.value
        assert isinstance(entry, Item)
        found = doc.get(entry.path)
        return isinstance(found, list) and entry.value in found

    def conflict(self, text: str, entry: Entry) -> str | None:
        return None  # a member of the user's is replaced, and put back on uninstall

    def containers(self, text: str, entry: Entry) -> list[KeyPath]:
        """The objects and arrays that adding ``entry`` creates."""
        assert isinstance(entry, (Member, Item))
        doc = self._doc(text)
        last = len(entry.path) - (1 if isinstance(entry, Member) else 0)
        return [entry.path[:depth] for depth in range(1, last + 1) if doc.get(entry.path[:depth]) is MISSING]

    def add(self, text: str, entry: Entry) -> tuple[str, Entry]:
        doc = self._doc(text)
        try:
            if isinstance(entry, Member):
                before = doc.get(entry.path)
                replaced = None if before is MISSING else json.dumps(before, ensure_ascii=False)
                return doc.set_member(entry.path, entry.value).text, Member(entry.path, entry.value, replaced)
            assert isinstance(entry, Item)
            return doc.append_item(entry.path, entry.value).text, entry
        except JsonShapeError as error:
            raise SettingsError(f"{error}, so {describe(entry)} cannot be added") from None

    def remove(self, text: str, entry: Entry) -> tuple[str, Outcome]:
        doc = self._doc(text)
        if isinstance(entry, Member):
            found = doc.get(entry.path)
            if found is MISSING:
                return text, "absent"
            if found != entry.value:
                return text, "changed"  # the user's now
            if entry.replaced is not None:
                return doc.set_member(entry.path, json.loads(entry.replaced)).text, "removed"
            return doc.delete_member(entry.path).text, "removed"
        assert isinstance(entry, Item)
        after = doc.delete_item(entry.path, entry.value)
        return (text, "absent") if after is None else (after.text, "removed")

    def prune(self, text: str, created: list[KeyPath]) -> str:
        doc = self._doc(text)
        for path in sorted(created, key=len, reverse=True):
            if doc.get(path) in ({}, []):
                doc = doc.delete_member(path)
        return doc.text

    def is_empty(self, text: str) -> bool:
        return self._doc(text).is_empty_object


class TomlFormat:
    """A TOML file that gets a managed block (see toml_block)."""

    name = "TOML"

    def _parse(self, text: str) -> dict:
        try:
            return toml_block.parse(text)
        except toml_block.TomlSyntaxError as error:
            raise SettingsError(f"not valid TOML: {error.problem}", error.line or None, error.column or None) from None

    def empty_text(self) -> str:
        return ""

    def check(self, text: str) -> None:
        self._parse(text)

    def present(self, text: str, entry: Entry) -> bool:
        assert isinstance(entry, Block)
        return entry.text in text

    def conflict(self, text: str, entry: Entry) -> str | None:
        assert isinstance(entry, Block)
        if toml_block.defines(self._parse(toml_block.without_block(text)), entry.table):
            return f"[{'.'.join(entry.table)}] is already defined there (by you): left as it is"
        return None

    def containers(self, text: str, entry: Entry) -> list[KeyPath]:
        return []

    def add(self, text: str, entry: Entry) -> tuple[str, Entry]:
        assert isinstance(entry, Block)
        after = toml_block.with_block(text, entry.text)
        try:
            self._parse(after)
        except SettingsError as error:
            raise SettingsError(f"adding {describe(entry)} would make it invalid TOML ({error.problem})") from None
        return after, entry

    def remove(self, text: str, entry: Entry) -> tuple[str, Outcome]:
        if toml_block.find(text) is None:
            return text, "absent"
        return toml_block.without_block(text), "removed"

    def prune(self, text: str, created: list[KeyPath]) -> str:
        return text

    def is_empty(self, text: str) -> bool:
        return not text.strip()


class TextFormat:
    """A whole text file (a slash command), Callboard's only when it wrote all of it."""

    name = "text"

    def empty_text(self) -> str:
        return ""

    def check(self, text: str) -> None:
        return None

    def present(self, text: str, entry: Entry) -> bool:
        assert isinstance(entry, Whole)
        return text == entry.text

    def conflict(self, text: str, entry: Entry) -> str | None:
        return "it already exists with other content (yours): left as it is" if text else None

    def containers(self, text: str, entry: Entry) -> list[KeyPath]:
        return []

    def add(self, text: str, entry: Entry) -> tuple[str, Entry]:
        assert isinstance(entry, Whole)
        return entry.text, entry

    def remove(self, text: str, entry: Entry) -> tuple[str, Outcome]:
        assert isinstance(entry, Whole)
        if text == entry.text:
            return "", "removed"
        return text, ("changed" if text else "absent")

    def prune(self, text: str, created: list[KeyPath]) -> str:
        return text

    def is_empty(self, text: str) -> bool:
        return text == ""


FORMATS: dict[str, Format] = {
    "json": JsonFormat(),
    "jsonc": JsonFormat(comments=True),
    "toml": TomlFormat(),
    "text": TextFormat(),
}


@dataclass
class Merged:
    """A file's text after an install, and what in it is Callboard's."""

    text: str | None  # None: the file stays absent
    mine: list[Entry]  # the entries this install holds in the file
    created: list[KeyPath]  # containers Callboard created (taken out when left empty)
    notes: list[str] = field(default_factory=list)


def merge(
    fmt: Format,
    text: str | None,
    wanted: list[Entry],
    mine_before: list[Entry] = [],
    others: list[Entry] = [],
    created_before: list[KeyPath] = [],
) -> Merged:
    """Add ``wanted`` to ``text`` (None: no file yet). ``mine_before`` are this install's entries
    from before (one no longer wanted is taken out); ``others`` are other installs' entries in the
    same file (present ones are shared, never duplicated)."""
    base = text if text is not None and text.strip() else fmt.empty_text()
    fmt.check(base)
    doc = base
    for entry in mine_before:
        if entry not in wanted and entry not in others:
            doc, _ = fmt.remove(doc, entry)
    held = [*mine_before, *others]
    mine: list[Entry] = []
    created = list(created_before)
    notes: list[str] = []
    for entry in wanted:
        if fmt.present(doc, entry):
            if entry in held:
                mine.append(held[held.index(entry)])  # keeps what a member replaced
            continue  # the user's own: not ours to take away later
        if problem := fmt.conflict(doc, entry):
            notes.append(problem)
            continue
        created += [path for path in fmt.containers(doc, entry) if path not in created]
        doc, recorded = fmt.add(doc, entry)
        mine.append(recorded)
    if doc == base:
        return Merged(text, mine, created, notes)
    return Merged(doc, mine, created, notes)


@dataclass
class Unmerged:
    text: str
    kept: list[Entry]  # entries of ours the user changed since: left in the file, as theirs
    empty: bool  # nothing but an empty document is left


def unmerge(fmt: Format, text: str, mine: list[Entry], others: list[Entry], created: list[KeyPath]) -> Unmerged:
    """Take this install's entries out of ``text``, except those another install also holds;
    with no other install left, also the containers Callboard created and left empty."""
    if not text.strip():
        return Unmerged(text, [], True)
    fmt.check(text)
    doc = text
    kept: list[Entry] = []
    for entry in mine:
        if entry in others:
            continue
        doc, outcome = fmt.remove(doc, entry)
        if outcome == "changed":
            kept.append(entry)
    if not others:
        doc = fmt.prune(doc, created)
    return Unmerged(doc, kept, fmt.is_empty(doc))
