"""Ids and message parts."""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from switchboard.model import DeliveryState, Part, new_id


def test_ids_are_uuid7_and_strictly_increasing_within_a_process():
    ids = [new_id() for _ in range(20_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    parsed = uuid.UUID(ids[0])
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122


@pytest.mark.parametrize(
    "fields",
    [{"text": "hi"}, {"data": {"k": [1, 2]}}, {"url": "https://x.test/a.pdf", "filename": "a.pdf"}, {"raw": "aGk="}],
)
def test_a_part_holds_exactly_one_kind_of_content_and_serialises_only_what_is_set(fields):
    part = Part.model_validate(fields)
    assert part.model_dump() == fields


@pytest.mark.parametrize("fields", [{}, {"text": "a", "data": 1}, {"filename": "x"}, {"text": "a", "bogus": 1}])
def test_a_part_with_no_or_two_contents_or_unknown_fields_is_refused(fields):
    with pytest.raises(ValidationError):
        Part.model_validate(fields)


def test_delivery_states_are_ordered():
    ranks = [
        s.rank
        for s in (
            DeliveryState.queued,
            DeliveryState.delivered,
            DeliveryState.surfaced,
            DeliveryState.read,
            DeliveryState.acked,
        )
    ]
    assert ranks == sorted(ranks) and len(set(ranks)) == 5
