"""Edit JSON text in place: set a member, append an item, take them out again, and leave every
other byte as it was (the user's indentation, inline arrays, key order, comments, a missing
final newline).

The text is parsed into spans (where each value starts and ends) and an edit splices new text
in beside its neighbours, indented like them. With ``comments=True`` the text may hold ``//``
and ``/* */`` comments (Gemini's and Copilot's settings files are JSONC); they are kept.
A duplicated key is looked up the way JSON.parse reads it: the last one counts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

Json = Any
KeyPath = tuple[str, ...]
MISSING: Any = object()  # what get() answers for a path that leads nowhere

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SCALAR = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null")
_SPACE = re.compile(r"[ \t\r\n]*")
_INDENT = re.compile(r"[ \t]*")
_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)
DEFAULT_UNIT = "  "


def _match(pattern: re.Pattern[str], text: str, position: int) -> re.Match[str]:
    """The pattern's match at ``position``, where it always matches: it may match nothing (space,
    indentation), or the text parsed as JSON already (a string, a scalar)."""
    match = pattern.match(text, position)
    assert match is not None, f"{pattern.pattern!r} at {position}"
    return match


class JsonSyntaxError(ValueError):
    """The text is not JSON; ``line`` and ``column`` count from 1."""

    def __init__(self, problem: str, line: int, column: int) -> None:
        super().__init__(f"{problem} (line {line}, column {column})")
        self.problem, self.line, self.column = problem, line, column


class JsonShapeError(ValueError):
    """A value on the way to an edit is not the object (or array) the edit needs."""

    def __init__(self, path: KeyPath, needed: str) -> None:
        where = ".".join(path) if path else "the top level"
        super().__init__(f"{where} is not {needed}")
        self.path, self.needed = path, needed


@dataclass(slots=True)
class _Node:
    kind: str  # "object", "array" or "value"
    start: int
    end: int = 0  # just past the last character
    children: list[_Child] = field(default_factory=list)


@dataclass(slots=True)
class _Child:
    key: str | None  # None in an array
    start: int  # where the member (its key) or the item starts
    key_end: int
    node: _Node


def _blank_comments(text: str) -> str:
    """The text with each comment turned into spaces (newlines kept): same length, same lines."""

    def blank(match: re.Match[str]) -> str:
        found = match.group()
        return found if found.startswith('"') else re.sub(r"[^\n]", " ", found)

    return _STRING_OR_COMMENT.sub(blank, text)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


class JsonText:
    """One JSON document as text. Edits return a new JsonText; the old one is unchanged."""

    def __init__(self, text: str, *, comments: bool = False) -> None:
        self.text = text
        self.comments = comments
        self._clean = _blank_comments(text) if comments else text
        try:
            self.value: Json = json.loads(self._clean, parse_constant=_reject_constant)
        except json.JSONDecodeError as error:
            raise JsonSyntaxError(error.msg, error.lineno, error.colno) from None
        except (ValueError, RecursionError) as error:
            raise JsonSyntaxError(str(error), 1, 1) from None
        self._root, _ = _parse_value(self._clean, _match(_SPACE, self._clean, 0).end())
        self._newline = "\r\n" if "\r\n" in text else "\n"

    def _new(self, text: str) -> JsonText:
        return JsonText(text, comments=self.comments)

    # --- reading --------------------------------------------------------------------------------

    def get(self, path: KeyPath) -> Json:
        """The value at ``path`` (object keys), or MISSING."""
        value = self.value
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return MISSING
            value = value[key]
        return value

    @property
    def is_empty_object(self) -> bool:
        return self.value == {}

    def _object_at(self, path: KeyPath) -> tuple[_Node, int]:
        """The deepest existing object along ``path`` and how many keys of it exist."""
        node = self._root
        if node.kind != "object":
            raise JsonShapeError((), "an object")
        for depth, key in enumerate(path):
            child = _member(node, key)
            if child is None:
                return node, depth
            if child.node.kind != "object":
                raise JsonShapeError(path[: depth + 1], "an object")
            node = child.node
        return node, len(path)

    # --- edits ----------------------------------------------------------------------------------

    def set_member(self, path: KeyPath, value: Json) -> JsonText:
        """Set ``path[-1]`` of the object at ``path[:-1]`` (made when missing) to ``value``."""
        parent, found = self._object_at(path[:-1])
        if found < len(path) - 1:
            return self._new(self._insert(parent, path[found], _nest(path[found + 1 :], value)))
        existing = _member(parent, path[-1])
        if existing is None:
            return self._new(self._insert(parent, path[-1], value))
        indent = self._child_indent(parent)
        rendered = self._render(value, indent)
        return self._new(self.text[: existing.node.start] + rendered + self.text[existing.node.end :])

    def append_item(self, path: KeyPath, value: Json) -> JsonText:
        """Append ``value`` to the array at ``path`` (made, with its objects, when missing)."""
        parent, found = self._object_at(path[:-1])
        if found < len(path) - 1:
            return self._new(self._insert(parent, path[found], _nest(path[found + 1 :], [value])))
        array = _member(parent, path[-1])
        if array is None:
            return self._new(self._insert(parent, path[-1], [value]))
        if array.node.kind != "array":
            raise JsonShapeError(path, "an array")
        return self._new(self._insert(array.node, None, value))

    def delete_member(self, path: KeyPath) -> JsonText:
        """Take out the member at ``path`` (nothing happens when there is none)."""
        try:
            parent, found = self._object_at(path[:-1])
        except JsonShapeError:
            return self
        if found < len(path) - 1:
            return self
        for index in range(len(parent.children) - 1, -1, -1):
            if parent.children[index].key == path[-1]:
                return self._new(self._cut(parent, index))
        return self

    def delete_item(self, path: KeyPath, value: Json) -> JsonText | None:
        """Take out the first item equal to ``value`` of the array at ``path``; None if none is."""
        try:
            parent, found = self._object_at(path[:-1])
        except JsonShapeError:
            return None
        array = _member(parent, path[-1]) if found == len(path) - 1 else None
        if array is None or array.node.kind != "array":
            return None
        for index, child in enumerate(array.node.children):
            if json.loads(self._clean[child.node.start : child.node.end]) == value:
                return self._new(self._cut(array.node, index))
        return None

    # --- text surgery ---------------------------------------------------------------------------

    def _insert(self, container: _Node, key: str | None, value: Json) -> str:
        text, newline = self.text, self._newline
        prefix = "" if key is None else json.dumps(key, ensure_ascii=False) + self._colon(container)
        if container.children:
            indent = self._child_indent(container)
            at = container.children[-1].node.end
            addition = self._separator(container, indent) + prefix + self._render(value, indent)
            return text[:at] + addition + text[at:]
        inside = text[container.start + 1 : container.end - 1]
        if "\n" not in inside and container is not self._root and not self._multiline(self._root):
            return text[: container.start + 1] + prefix + self._render(value, None) + text[container.end - 1 :]
        base = self._line_indent(container.start)
        indent = base + self._unit()
        body = newline + indent + prefix + self._render(value, indent) + newline + base
        return text[: container.start + 1] + body + text[container.end - 1 :]

    def _cut(self, container: _Node, index: int) -> str:
        text, children = self.text, container.children
        if len(children) == 1:
            return text[: container.start + 1] + text[container.end - 1 :]
        if index > 0:
            start, end = children[index - 1].node.end, children[index].node.end
        else:
            start, end = children[0].start, children[1].start
        return text[:start] + text[end:]

    def _multiline(self, container: _Node) -> bool:
        if not container.children:
            return "\n" in self.text[container.start : container.end]
        return "\n" in self.text[container.start + 1 : container.children[0].start]

    def _child_indent(self, container: _Node) -> str | None:
        """The indentation of the container's children, or None when they sit on one line."""
        if not self._multiline(container) or not container.children:
            return None
        gap = self.text[container.start + 1 : container.children[0].start]
        return _match(_INDENT, gap, gap.rindex("\n") + 1).group()

    def _unit(self) -> str:
        """One level of indentation, as the document's top level uses it."""
        indent = self._child_indent(self._root)
        if indent:
            base = self._line_indent(self._root.start)
            if indent.startswith(base) and len(indent) > len(base):
                return indent[len(base) :]
        return DEFAULT_UNIT

    def _line_indent(self, position: int) -> str:
        return _match(_INDENT, self.text, self.text.rfind("\n", 0, position) + 1).group()

    def _separator(self, container: _Node, indent: str | None) -> str:
        children = container.children
        if len(children) >= 2:
            start, end = children[-2].node.end, children[-1].start
            between = self.text[start:end]
            if between == self._clean[start:end] and between.strip() == ",":
                return between  # the way this container already separates its children
        return "," + (self._newline + indent if indent is not None else " ")

    def _colon(self, container: _Node) -> str:
        for node in (container, self._root):
            for child in node.children:
                if child.key is not None:
                    between = self.text[child.key_end : child.node.start]
                    if (
                        between.strip() == ":"
                        and "\n" not in between
                        and between == self._clean[child.key_end : child.node.start]
                    ):
                        return between
        return ": "

    def _render(self, value: Json, indent: str | None) -> str:
        if indent is None:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, ensure_ascii=False, indent=self._unit()).replace("\n", self._newline + indent)


def _nest(keys: KeyPath, value: Json) -> Json:
    for key in reversed(keys):
        value = {key: value}
    return value


def _member(node: _Node, key: str) -> _Child | None:
    for child in reversed(node.children):
        if child.key == key:
            return child
    return None


def _skip(text: str, position: int) -> int:
    return _match(_SPACE, text, position).end()


def _parse_value(text: str, position: int) -> tuple[_Node, int]:
    """The span tree of the (already validated) JSON value at ``position``."""
    first = text[position]
    if first in "{[":
        node = _Node("object" if first == "{" else "array", position)
        closing = "}" if first == "{" else "]"
        position = _skip(text, position + 1)
        while text[position] != closing:
            start, key, key_end = position, None, position
            if first == "{":
                match = _match(_STRING, text, position)
                key, key_end = json.loads(match.group()), match.end()
                position = _skip(text, _skip(text, key_end) + 1)  # past the colon
            child, position = _parse_value(text, position)
            node.children.append(_Child(key, start, key_end, child))
            position = _skip(text, position)
            if text[position] == ",":
                position = _skip(text, position + 1)
        node.end = position + 1
        return node, position + 1
    match = _match(_STRING if first == '"' else _SCALAR, text, position)
    return _Node("value", position, match.end()), match.end()
