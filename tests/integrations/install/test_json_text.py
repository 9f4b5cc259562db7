"""json_text: edits splice into the user's text, and undoing them gives the text back exactly.

The property tests write random documents in many styles (indent 2, 4, tab, one line; with or
without a final newline; CRLF), add members and items at random places, check the value after
each edit, then take everything out again and compare the text byte for byte.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callboard.integrations.install.json_text import MISSING, JsonShapeError, JsonSyntaxError, JsonText

keys = st.text(st.sampled_from("abcxyz_-é"), min_size=1, max_size=4)
scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text('ab"\\\n', max_size=3)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3), max_leaves=12
)
documents = st.dictionaries(keys, values, max_size=5)
styles = st.sampled_from([None, 2, 4, "\t"])


def _write(document: dict, indent: object, newline: bool, crlf: bool) -> str:
    text = json.dumps(document, indent=indent, ensure_ascii=False) + ("\n" if newline else "")
    return text.replace("\n", "\r\n") if crlf else text


def _ours(value: object) -> bool:
    return isinstance(value, dict) and "callboard" in value


def _object_paths(value: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if not isinstance(value, dict) or _ours(value):  # edits never go inside one another
        return []
    return [path] + [p for key, child in value.items() for p in _object_paths(child, (*path, key))]


def _list_paths(value: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if not isinstance(value, dict) or _ours(value):
        return []
    found = []
    for key, child in value.items():
        if isinstance(child, list):
            found.append((*path, key))
        found += _list_paths(child, (*path, key))
    return found


@settings(max_examples=300, deadline=None)
@given(documents, styles, st.booleans(), st.booleans(), st.data())
def test_adding_then_removing_gives_the_text_back(
    document: dict, indent: object, newline: bool, crlf: bool, data
) -> None:
    original = _write(document, indent, newline, crlf)
    doc = JsonText(original)
    expected = json.loads(original)
    undo = []
    for number in range(data.draw(st.integers(1, 4))):
        marker = {"callboard": number}  # unique: taking it out cannot take a user's value
        existing_lists = _list_paths(doc.value)
        if existing_lists and data.draw(st.booleans()):
            path = data.draw(st.sampled_from(existing_lists))
        else:
            base = data.draw(st.sampled_from(_object_paths(doc.value)))
            path = (*base, *data.draw(st.lists(st.sampled_from(["new", "hooks", "Stop"]), min_size=1, max_size=2)))
        on_the_way = [doc.get(path[:d]) for d in range(1, len(path) + 1)]
        if any(v is not MISSING and (not isinstance(v, dict) or _ours(v)) for v in on_the_way[:-1]):
            continue  # a scalar, an array or an edit of ours on the way: not a place for an edit
        if data.draw(st.booleans()) and doc.get(path) is MISSING:
            created = [path[:d] for d in range(1, len(path)) if doc.get(path[:d]) is MISSING]
            doc = doc.set_member(path, marker)
            undo.append(("member", path, marker, created))
            _set(expected, path, dict(marker))
        else:
            if doc.get(path) is not MISSING and not isinstance(doc.get(path), list):
                continue
            created = [path[:d] for d in range(1, len(path) + 1) if doc.get(path[:d]) is MISSING]
            doc = doc.append_item(path, marker)
            undo.append(("item", path, marker, created))
            _append(expected, path, dict(marker))
        assert doc.value == expected
        assert json.loads(doc.text) == expected  # plain JSON, as any reader sees it
        if "\r\n" in original:
            assert "\n" not in doc.text.replace("\r\n", "")  # CRLF stays CRLF
    for kind, path, marker, _ in data.draw(st.permutations(undo)):  # in any order
        if kind == "member":
            doc = doc.delete_member(path)
        else:
            after = doc.delete_item(path, marker)
            assert after is not None
            doc = after
    for container in sorted({c for *_, created in undo for c in created}, key=len, reverse=True):
        if doc.get(container) in ({}, []):
            doc = doc.delete_member(container)
    assert doc.text == original


def _set(value: dict, path: tuple[str, ...], item: object) -> None:
    for key in path[:-1]:
        value = value.setdefault(key, {})
    value[path[-1]] = item


def _append(value: dict, path: tuple[str, ...], item: object) -> None:
    for key in path[:-1]:
        value = value.setdefault(key, {})
    value.setdefault(path[-1], []).append(item)


def test_new_members_are_indented_like_their_neighbours() -> None:
    text = '{\n    "a": {\n        "b": 1\n    }\n}'
    got = JsonText(text).set_member(("a", "c"), {"d": [1]}).text
    assert (
        got
        == '{\n    "a": {\n        "b": 1,\n        "c": {\n            "d": [\n                1\n            ]\n        }\n    }\n}'
    )


def test_inline_containers_stay_inline() -> None:
    text = '{\n  "allow": ["x", "y"],\n  "o": {"k": 1}\n}\n'
    doc = JsonText(text).append_item(("allow",), "z").set_member(("o", "m"), 2)
    assert doc.text == '{\n  "allow": ["x", "y", "z"],\n  "o": {"k": 1, "m": 2}\n}\n'


def test_an_empty_document_gets_a_readable_layout() -> None:
    assert JsonText("{}").set_member(("a",), [1]).text == '{\n  "a": [\n    1\n  ]\n}'


def test_comments_are_kept_and_skipped() -> None:
    text = '{\n  // servers\n  "a": 1, /* one */\n  "b": "http://x" // url, not a comment\n}\n'
    doc = JsonText(text, comments=True)
    assert doc.value == {"a": 1, "b": "http://x"}
    after = doc.set_member(("c",), True)
    assert "// servers" in after.text and "/* one */" in after.text and after.value["c"] is True
    assert after.delete_member(("c",)).text == text
    with pytest.raises(JsonSyntaxError):
        JsonText(text)  # comments are not JSON


def test_the_last_of_a_duplicated_key_counts() -> None:
    doc = JsonText('{"a": 1, "a": {"b": 2}}')
    assert doc.get(("a", "b")) == 2
    assert doc.set_member(("a", "c"), 3).value == {"a": {"b": 2, "c": 3}}


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [('{\n  "a": 1,\n}', 3, 1), ('{"a": [1 2]}', 1, 10), ("", 1, 1), ('{\n "a": NaN\n}', 1, 1)],
)
def test_syntax_errors_say_where(text: str, line: int, column: int) -> None:
    with pytest.raises(JsonSyntaxError) as caught:
        JsonText(text)
    assert (caught.value.line, caught.value.column) == (line, column)


def test_shape_errors_name_the_path() -> None:
    doc = JsonText('{"hooks": [], "p": {"allow": "x"}}')
    with pytest.raises(JsonShapeError, match="hooks is not an object"):
        doc.append_item(("hooks", "Stop"), 1)
    with pytest.raises(JsonShapeError, match="p.allow is not an array"):
        doc.append_item(("p", "allow"), 1)
    with pytest.raises(JsonShapeError, match="top level"):
        JsonText("[1]").set_member(("a",), 1)


def test_taking_out_a_first_middle_or_only_child_leaves_its_neighbours_tidy() -> None:
    doc = JsonText('{"a": [1, 2, 3], "b": {"x": 1, "y": 2}}')
    assert doc.delete_item(("a",), 1).text == '{"a": [2, 3], "b": {"x": 1, "y": 2}}'
    assert doc.delete_item(("a",), 2).text == '{"a": [1, 3], "b": {"x": 1, "y": 2}}'
    assert doc.delete_member(("b", "x")).text == '{"a": [1, 2, 3], "b": {"y": 2}}'
    assert doc.delete_member(("a",)).text == '{"b": {"x": 1, "y": 2}}'
    tall = JsonText('{\n  "a": [\n    1,\n    2\n  ]\n}\n')
    assert tall.delete_item(("a",), 1).text == '{\n  "a": [\n    2\n  ]\n}\n'
    assert tall.delete_item(("a",), 1).delete_item(("a",), 2).text == '{\n  "a": []\n}\n'
    assert tall.delete_item(("a",), 9) is None
