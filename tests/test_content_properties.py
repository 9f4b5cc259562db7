"""Property tests of what a message may carry (content.message_parts, json_values): whatever
parts a client sends, the send either refuses them with a CallboardError or takes parts
that the stores write as JSON and read back as the very same parts — never a value that turns
into something else (NaN into null) on the way, and never another exception."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from callboard.address import json_problem
from callboard.errors import CallboardError
from callboard.limits import DATA_DEPTH_MAX, DATA_INT_DIGITS, Limits
from callboard.model import parts_json
from callboard.service.content import message_parts
from callboard.store.rows import message_from_row

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20,
)
NOT_JSON = st.sampled_from([math.nan, math.inf, -math.inf, json.loads("1e400"), 10**DATA_INT_DIGITS, object(), b"x"])


def _with(value: Any, bad: Any, where: int) -> Any:
    """``value`` with ``bad`` placed somewhere inside it (or as it)."""
    if isinstance(value, list):
        return [*value[:where], bad, *value[where:]]
    if isinstance(value, dict):
        return {**value, f"k{where}": bad}
    return [value, bad] if where % 2 else bad


@given(JSON_VALUES)
def test_every_value_json_carries_passes_and_reads_back_the_same(value: Any) -> None:
    assert json_problem(value) is None
    assert json.loads(json.dumps(value, allow_nan=False)) == value


@given(JSON_VALUES, NOT_JSON, st.integers(min_value=0, max_value=5))
def test_a_value_json_cannot_carry_is_found_wherever_it_hides(value: Any, bad: Any, where: int) -> None:
    assert json_problem(_with(value, bad, where), "data") is not None


def test_nesting_past_the_bound_is_refused_without_exhausting_the_stack() -> None:
    deep: list[Any] = []
    for _ in range(50_000):
        deep = [deep]
    assert "nests deeper" in (json_problem(deep, "data") or "")
    within: list[Any] = []
    for _ in range(DATA_DEPTH_MAX):
        within = [within]
    assert json_problem(within, "data") is None


PART_FIELDS = st.sampled_from(["text", "data", "url", "raw", "filename", "media_type", "metadata", "other"])
PARTS = st.lists(
    st.dictionaries(
        PART_FIELDS, st.one_of(JSON_VALUES, NOT_JSON, st.dictionaries(st.text(max_size=4), NOT_JSON)), max_size=3
    ),
    max_size=4,
)


@given(st.one_of(st.none(), st.text(max_size=30)), PARTS)
@example(None, [{"data": math.nan}])
@example(None, [{"text": "t", "metadata": {"m": math.nan}}])
@example(None, [{"data": {"x": [1, json.loads("1e400")]}}])
def test_sent_parts_are_refused_or_stored_and_read_back_unchanged(text: str | None, parts: list[dict]) -> None:
    try:
        content = message_parts(text, parts, Limits())
    except CallboardError:
        return
    stored = parts_json(content).decode()
    row = ["0193a6f0-7c1e-7b3a-9d2e-5f4a3b2c1d0e", "ws", "alice", None, '["bob"]', None, None, stored]
    row += ["0193a6f0-7c1e-7b3a-9d2e-5f4a3b2c1d0e", None, 1.7e9, 0, None, None]
    assert message_from_row(row).parts == content
