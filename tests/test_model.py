"""Ids, message parts, and ``built`` (the hub's unvalidated model construction)."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from callboard.model import DeliveryState, Message, Part, RecipientOutcome, SendResult, built, new_id, parts_json


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


def test_a_new_id_is_a_canonical_uuid7_string_stamped_with_the_current_time():
    before_ms = time.time_ns() // 1_000_000
    made = new_id()
    after_ms = time.time_ns() // 1_000_000
    parsed = uuid.UUID(made)
    assert str(parsed) == made  # lower-case hex, hyphens at 8-4-4-4-12: the one canonical spelling
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    # The first 48 bits are Unix milliseconds (the in-millisecond counter may borrow one ahead).
    assert before_ms <= parsed.int >> 80 <= after_ms + 1


# --- built: model_construct, faster --------------------------------------------------------------
#
# The hub builds its messages and send results with ``built`` instead of validating them. Whatever
# it builds must be indistinguishable from the validated model of the same values: the same JSON
# (stored, and answered to clients), equal to it, and with the same fields set.

AT = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)
OUTCOME_IN_FULL = {
    "address": "#team",
    "state": "delivered",
    "agent": "bob",
    "channel": "team",
    "sessions": ["bob@laptop#42"],
    "new_agent": True,
    "reason": "created on first message",
}
MESSAGE_REQUIRED = {
    "id": "0190f2a8-0000-7000-8000-000000000001",
    "workspace": "acme",
    "sender": "alice",
    "recipients": ["bob"],
    "parts": [Part(text="hi")],
    "thread_id": "0190f2a8-0000-7000-8000-000000000001",
    "created_at": AT,
}
MESSAGE_IN_FULL = {
    "id": "0190f2a8-0000-7000-8000-000000000002",
    "workspace": "acme",
    "sender": "alice",
    "sender_session": "s-1",
    "recipients": ["#team"],
    "channel": "team",
    "subject": "plans",
    "parts": [Part(text="hi"), Part(data={"k": [1, 2]})],
    "thread_id": "0190f2a8-0000-7000-8000-000000000001",
    "reply_to": "0190f2a8-0000-7000-8000-000000000001",
    "created_at": AT,
}
BUILT_CASES = {
    "part-text": (Part, {"text": "hi"}),
    "outcome-required-only": (RecipientOutcome, {"address": "bob", "state": "queued"}),
    "outcome-in-full": (RecipientOutcome, OUTCOME_IN_FULL),
    "message-in-full": (Message, MESSAGE_IN_FULL),
    "send-result": (
        SendResult,
        {
            "message_id": MESSAGE_IN_FULL["id"],
            "thread_id": MESSAGE_IN_FULL["thread_id"],
            "created_at": AT,
            "recipients": [RecipientOutcome.model_validate(OUTCOME_IN_FULL)],
        },
    ),
    "send-result-in-full": (
        SendResult,
        {
            "message_id": MESSAGE_IN_FULL["id"],
            "thread_id": MESSAGE_IN_FULL["thread_id"],
            "created_at": AT,
            "recipients": [built(RecipientOutcome, address="bob", state="queued")],
            "duplicate": True,
        },
    ),
}


@pytest.mark.parametrize("cls, values", list(BUILT_CASES.values()), ids=list(BUILT_CASES))
def test_built_is_indistinguishable_from_the_validated_model_of_the_same_values(cls, values):
    made = built(cls, **values)
    checked = cls.model_validate(values)
    assert type(made) is cls
    assert made == checked
    assert made.model_dump_json() == checked.model_dump_json()
    assert made.model_dump() == checked.model_dump()
    assert made.model_fields_set == checked.model_fields_set == set(values)


# Field orders the hub's send path uses: delivery.sending._outcome names agent and channel before state, and a
# Message whose sender has no session may leave sender_session (the 4th field) out. pydantic serialises
# a model's __dict__ in its own order, so built must store the fields in declaration order; otherwise a
# send's answer and its idempotent replay (validated from the stored JSON) would differ byte for byte.
OUT_OF_ORDER_CASES = {
    "outcome-as-service-builds-it": (
        RecipientOutcome,
        {"address": "bob", "agent": "bob", "channel": None, "state": "queued", "sessions": [], "new_agent": False},
    ),
    "outcome-sessions-without-agent": (RecipientOutcome, {"address": "bob", "state": "queued", "sessions": ["s"]}),
    "message-required-only": (Message, MESSAGE_REQUIRED),
}


@pytest.mark.parametrize("cls, values", list(OUT_OF_ORDER_CASES.values()), ids=list(OUT_OF_ORDER_CASES))
def test_built_serialises_fields_in_declaration_order_whatever_order_they_are_given_in(cls, values):
    made = built(cls, **values)
    checked = cls.model_validate(values)
    assert made.model_dump_json() == checked.model_dump_json()
    # Every field, in declaration order, but those left out when unset (a message's task_id).
    shown = [n for n, f in cls.model_fields.items() if f.exclude_if is None or getattr(made, n) is not None]
    assert list(made.model_dump()) == shown
    assert made == checked
    assert made.model_fields_set == set(values)


def test_built_gives_each_model_a_fresh_default_list():
    first = built(RecipientOutcome, address="bob", state="queued")
    second = built(RecipientOutcome, address="carol", state="queued")
    assert first.sessions == [] and second.sessions == []
    assert first.sessions is not second.sessions
    first.sessions.append("bob@laptop#1")  # frozen models, but a list field is still a list
    assert second.sessions == []
    assert built(RecipientOutcome, address="dave", state="queued").sessions == []


@pytest.mark.parametrize(
    "cls, values, missing",
    [
        (RecipientOutcome, {"address": "bob"}, "state"),
        (Message, {k: v for k, v in MESSAGE_REQUIRED.items() if k != "thread_id"}, "thread_id"),
        (SendResult, {"message_id": "m", "thread_id": "t", "created_at": AT}, "recipients"),
    ],
    ids=["outcome", "message", "send-result"],
)
def test_built_without_a_required_field_raises_type_error_naming_it(cls, values, missing):
    with pytest.raises(TypeError, match=rf"^{cls.__name__}\.{missing} is required$"):
        built(cls, **values)


def test_built_with_a_name_that_is_no_field_raises_type_error_naming_it():
    # model_validate refuses it (extra="forbid"); built must not slip it into the model's JSON.
    with pytest.raises(TypeError, match=r"^RecipientOutcome has no field bogus$"):
        built(RecipientOutcome, address="bob", state="queued", bogus=1)


def test_parts_json_is_the_parts_as_a_message_serialises_them_with_only_the_fields_set():
    parts = [
        Part(text="héllo ✓"),
        built(Part, text="built, not validated"),
        Part(data={"k": [1, 2], "nested": {"x": None}}),
        Part(url="https://x.test/a.pdf", filename="a.pdf", media_type="application/pdf"),
        Part(raw="aGk=", metadata={"source": "camera"}),
    ]
    stored = parts_json(parts)
    assert isinstance(stored, bytes)
    expected = [
        {"text": "héllo ✓"},
        {"text": "built, not validated"},
        {"data": {"k": [1, 2], "nested": {"x": None}}},
        {"url": "https://x.test/a.pdf", "filename": "a.pdf", "media_type": "application/pdf"},
        {"raw": "aGk=", "metadata": {"source": "camera"}},
    ]
    assert json.loads(stored) == expected
    assert stored == json.dumps(expected, separators=(",", ":"), ensure_ascii=False).encode()  # compact, UTF-8
    message = Message.model_validate({**MESSAGE_REQUIRED, "parts": parts})
    assert json.loads(message.model_dump_json())["parts"] == expected
    assert Message.model_validate_json(message.model_dump_json()).parts == parts  # and they read back the same
    assert parts_json([]) == b"[]"


def test_a_send_results_json_is_encoded_once_and_a_copy_is_encoded_afresh() -> None:
    # The stored row and the hub's answer share one encoding; a repeat's copy says duplicate.
    outcome = built(RecipientOutcome, address="bob", agent="bob", state="queued")
    result = built(
        SendResult, message_id=new_id(), thread_id=new_id(), created_at=datetime.now(UTC), recipients=[outcome]
    )
    first = result.as_json()
    assert first == result.model_dump_json()
    assert result.as_json() is first
    repeat = result.model_copy(update={"duplicate": True})
    assert json.loads(repeat.as_json())["duplicate"] is True
    assert json.loads(result.as_json())["duplicate"] is False
